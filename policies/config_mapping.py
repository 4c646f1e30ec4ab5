"""YAML mappings to frozen config dataclasses and back, for every config of the project that is a dataclass
tree: strict loading (an unknown key is an error that lists the known ones, so a typo never runs with a
silent default), plain data for YAML and JSON, and nested overrides (`hgpo --set a.b=1`)."""

from __future__ import annotations

import dataclasses
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
    values = {}
    for name, value in data.items():
        kind = hints[name]
        if dataclasses.is_dataclass(kind) and isinstance(kind, type):
            values[name] = build_dataclass(kind, value, f"{where}.{name}")
        elif isinstance(kind, types.GenericAlias) and kind.__origin__ is tuple:
            values[name] = tuple(value)
        elif kind in (float, int, bool, str):
            values[name] = _scalar(kind, value, f"{where}.{name}")
        else:
            values[name] = value
    try:
        return cls(**values)
    except (TypeError, ValueError) as err:
        raise ValueError(f"{where}: {err}") from err


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
