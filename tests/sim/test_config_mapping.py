"""The strict YAML-to-dataclass loader every config goes through: scalars are checked, and YAML 1.1's
exponent without a dot (PyYAML reads `1e-3` as a string) still means the number in a float field."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from sim.config_mapping import build_dataclass, field_docs, merge


@dataclass(frozen=True)
class Inner:
    lr: float = 1e-3
    steps: int = 10


@dataclass(frozen=True)
class Outer:
    name: str = "reach"
    inner: Inner = field(default_factory=Inner)


def test_a_float_field_reads_an_exponent_without_a_dot_and_an_int() -> None:
    config = build_dataclass(Outer, {"inner": {"lr": "5e-4", "steps": 3}}, "config")
    assert config.inner == Inner(lr=5e-4, steps=3)
    assert build_dataclass(Inner, {"lr": 1}, "config").lr == 1.0


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"inner": {"lr": "fast"}}, "config.inner.lr must be a float, got 'fast'"),
        ({"inner": {"steps": 2.5}}, "config.inner.steps must be an int, got 2.5"),
        ({"inner": {"steps": True}}, "config.inner.steps must be an int, got True"),
        ({"name": 3}, "config.name must be a str, got 3"),
        ({"inner": {"rate": 1}}, "config.inner: unknown key(s) rate; known: lr, steps"),
    ],
)
def test_a_wrong_value_names_its_field(data: dict, message: str) -> None:
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        build_dataclass(Outer, data, "config")


def test_a_nested_override_keeps_its_siblings() -> None:
    assert merge({"sac": {"lr": 1, "gamma": 0.9}, "seed": 0}, {"sac": {"lr": 2}}) == {
        "sac": {"lr": 2, "gamma": 0.9},
        "seed": 0,
    }


@dataclass(frozen=True)
class Ranges:
    scale: tuple[float, float] = (1.0, 1.0)
    """A [low, high] pair."""
    names: tuple[str, ...] = ()
    limit: int | None = None
    """None: no limit."""


def test_tuples_are_checked_for_length_and_items_and_optionals_take_none() -> None:
    assert build_dataclass(Ranges, {"scale": [1, "2e-1"], "names": ["a", "b"]}, "r") == Ranges(
        (1.0, 0.2), ("a", "b")
    )
    assert build_dataclass(Ranges, {"limit": None}, "r").limit is None
    assert build_dataclass(Ranges, {"limit": 3}, "r").limit == 3
    with pytest.raises(ValueError, match=r"^r.scale must be a list of 2 values, got \[1.0\]"):
        build_dataclass(Ranges, {"scale": [1.0]}, "r")
    with pytest.raises(ValueError, match=r"^r.names must be a list, got 'ab'"):
        build_dataclass(Ranges, {"names": "ab"}, "r")  # not ('a', 'b')
    with pytest.raises(ValueError, match=r"^r.limit must be an int, got 'many'"):
        build_dataclass(Ranges, {"limit": "many"}, "r")


def test_field_docs_are_the_docstrings_under_the_fields() -> None:
    assert field_docs(Ranges) == {"scale": "A [low, high] pair.", "limit": "None: no limit."}
