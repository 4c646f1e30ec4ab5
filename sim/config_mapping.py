"""YAML mappings to frozen config dataclasses and back, for every config of the project that is a dataclass
tree: strict loading (an unknown key is an error that lists the known ones, so a typo never runs with a
silent default), plain data for YAML and JSON, nested overrides (`hgpo --set a.b=1`), and each field's
documentation (the docstring under it: the one field-doc style of the project's configs).

It lives in `sim` because `sim` is the bottom layer: `sim` never imports `policies`, and `policies`, the
nodes and the `hgpo` command all may import `sim`, so this is the one place every config can load from."""

from __future__ import annotations

import ast
import dataclasses
import functools
import inspect
import textwrap
import types
import typing
from typing import Any


def build_dataclass(cls: type, data: Any, where: str) -> Any:
    """A dataclass from a mapping, recursing into dataclass-typed fields; unknown keys are errors."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a mapping, got {type(data).__name__}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(fields)}")
    values: dict[str, Any] = {}
    for name, value in data.items():
        kind: Any = hints[name]
        if isinstance(kind, types.UnionType) and type(None) in kind.__args__ and value is None:
            values[name] = None
            continue
        if isinstance(kind, types.UnionType) and len(kind.__args__) == 2 and type(None) in kind.__args__:
            kind = next(arg for arg in kind.__args__ if arg is not type(None))  # X | None, given an X
        if dataclasses.is_dataclass(kind) and isinstance(kind, type) and isinstance(value, kind):
            values[name] = value  # already built (options given in code)
        elif dataclasses.is_dataclass(kind) and isinstance(kind, type):
            values[name] = build_dataclass(kind, value, f"{where}.{name}")
        elif isinstance(kind, types.GenericAlias) and kind.__origin__ is tuple:
            values[name] = _tuple(kind.__args__, value, f"{where}.{name}")
        elif kind in (float, int, bool, str):
            values[name] = _scalar(kind, value, f"{where}.{name}")
        else:
            values[name] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from err


def _tuple(args: tuple[Any, ...], value: Any, where: str) -> tuple[Any, ...]:
    """A tuple field from a YAML list: `tuple[float, float]` takes exactly two, `tuple[str, ...]` any
    number; scalar items are checked as scalar fields are."""
    fixed = not (len(args) == 2 and args[1] is Ellipsis)
    if not isinstance(value, list | tuple):
        raise ValueError(f"{where} must be a list{f' of {len(args)} values' if fixed else ''}, got {value!r}")
    items = args if fixed else args[:1] * len(value)
    if len(items) != len(value):
        raise ValueError(f"{where} must be a list of {len(items)} values, got {list(value)!r}")
    return tuple(
        _scalar(kind, item, f"{where}[{index}]") if kind in (float, int, bool, str) else item
        for index, (kind, item) in enumerate(zip(items, value, strict=True))
    )


def _scalar(kind: type, value: Any, where: str) -> Any:
    """A scalar field's value, checked. YAML 1.1 (PyYAML) reads 1e-3, without a dot, as a string: a float
    field takes it as the number it spells, and an int a float field."""
    if kind is float and not isinstance(value, bool):
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    elif isinstance(value, kind) and not (kind is int and isinstance(value, bool)):
        return value
    article = "an" if kind is int else "a"
    raise ValueError(f"{where} must be {article} {kind.__name__}, got {value!r}")


def config_to_dict(config: Any) -> dict[str, Any]:
    """Plain data (lists for tuples) for YAML and JSON."""
    data: dict[str, Any] = dataclasses.asdict(config)

    def plain(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: plain(v) for k, v in value.items()}
        if isinstance(value, tuple | list):
            return [plain(v) for v in value]
        return value

    result: dict[str, Any] = plain(data)
    return result


def nest(overrides: dict[str, Any], dotted: str, value: Any) -> None:
    """Put `value` at `dotted` (a.b.c) in a nested mapping, making the levels it needs."""
    keys = dotted.split(".")
    node = overrides
    for key in keys[:-1]:
        node = node.setdefault(key, {})
    node[keys[-1]] = value


def merge(base: dict[str, Any], extra: dict[str, Any]) -> dict[str, Any]:
    """`base` with `extra` over it, mapping by mapping: a nested override keeps its siblings."""
    out = dict(base)
    for key, value in extra.items():
        out[key] = (
            merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
        )
    return out


def field_docs(cls: type) -> dict[str, str]:
    """Each field's docstring (the string literal under it in the class body), as one line, by field name:
    the help text of node parameters and command options, from the one place a field is documented."""
    return _field_docs(cls)


@functools.cache
def _field_docs(cls: Any) -> dict[str, str]:
    docs: dict[str, str] = {}
    klass: type
    for klass in reversed(cls.__mro__):
        if not dataclasses.is_dataclass(klass):
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(klass))).body[0]
        assert isinstance(body, ast.ClassDef)
        for node, after in zip(body.body, body.body[1:], strict=False):
            if (
                isinstance(node, ast.AnnAssign)
                and isinstance(node.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs
