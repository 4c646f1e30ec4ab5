"""The strict YAML-to-dataclass loader every config goes through: scalars are checked, and YAML 1.1's
exponent without a dot (PyYAML reads `1e-3` as a string) still means the number in a float field."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest

from policies.config_mapping import build_dataclass, merge


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
