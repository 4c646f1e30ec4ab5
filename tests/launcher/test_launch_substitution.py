"""The substitution grammar on its own: what ROS 2's frontend accepts in our subset, and what it refuses."""

from __future__ import annotations

import pytest

from ros_nodes.launcher.errors import LaunchError
from ros_nodes.launcher.substitution import Substitution, parse_template, resolve

CONFIGS = {"a": "A", "name": "HOME", "empty": ""}
ENVIRON = {"HOME": "/home/me", "SPACED": "x y"}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", ""),
        ("plain text, with 'quotes' and \"doubles\"", "plain text, with 'quotes' and \"doubles\""),
        ("$(var a)/b/$(var a)", "A/b/A"),
        ("$(env HOME)", "/home/me"),
        ("$(env MISSING fallback)", "fallback"),
        ("$(env MISSING '')", ""),
        ("$(env MISSING 'two words')", "two words"),
        ('$(env MISSING "it\'s $(var a)")', "it's A"),
        ("$(env $(var name))", "/home/me"),
        ("$(env MISSING $(var a)-$(var a))", "A-A"),
        ("$(env SPACED)", "x y"),
        ("$(var empty)", ""),
        ("costs \\$5 \\(really\\)", "costs $5 (really)"),
        ("$(env MISSING a\\)b)", "a)b"),
        ("trailing \\", "trailing \\"),
    ],
)
def test_resolves(text: str, expected: str) -> None:
    assert resolve(parse_template(text), CONFIGS, ENVIRON) == expected


def test_parse_keeps_structure() -> None:
    assert parse_template("x$(env A $(var b))y") == (
        "x",
        Substitution("env", (("A",), (Substitution("var", (("b",),)),))),
        "y",
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("$(", "expected a substitution name"),
        ("$(1var a)", "expected a substitution name"),
        ("$(var a", "expected ')'"),
        ("$(var a )", "empty argument"),
        ("$(var a(b)", "unexpected '('"),
        ("$(env A 'open)", "missing closing '"),
        ("$(env A 'x $(env B \"y\")')", "cannot be nested inside a quoted"),
        ("$(optenv A)", "unsupported substitution $(optenv"),
        ("$(find-pkg-share)", "expects $(find-pkg-share PKG), got 0"),
        ("100$", "must be escaped as '\\$'"),
    ],
)
def test_syntax_errors(text: str, expected: str) -> None:
    with pytest.raises(LaunchError) as raised:
        parse_template(text)
    assert expected in str(raised.value) and repr(text) in str(raised.value)


def test_resolve_errors_name_what_is_missing() -> None:
    with pytest.raises(LaunchError, match=r"no <arg> or <let> named 'b' .*defined: a, empty, name"):
        resolve(parse_template("$(var b)"), CONFIGS, ENVIRON)
    with pytest.raises(LaunchError, match=r"environment variable 'NOPE' is not set"):
        resolve(parse_template("$(env NOPE)"), CONFIGS, ENVIRON)
