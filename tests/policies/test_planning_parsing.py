"""Subgoal text: formatting, parsing adversarial model output, validation against a domain's valid set."""

from __future__ import annotations

import pytest

from policies.planning.parsing import (
    DONE,
    ParseError,
    format_subgoal,
    is_well_formed,
    parse_subgoal,
    validate_output,
)
from sim.tabletop import Subgoal


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("pick(red_block)", Subgoal("pick", ("red_block",))),
        ("  place( red_block ,left_plate )  \n", Subgoal("place", ("red_block", "left_plate"))),
        ("```\npick(red_block)\n```", Subgoal("pick", ("red_block",))),
        ("1. pick(red_block).", Subgoal("pick", ("red_block",))),
        ("- reach('blue_block')", Subgoal("reach", ("blue_block",))),
        ("\n\npick(red_block)\nplace(red_block, left_plate)", Subgoal("pick", ("red_block",))),
        ("goto(countertop 1)", Subgoal("goto", ("countertop 1",))),
        ("done()", None),
        (" done ( ) ", None),
    ],
)
def test_parse_accepts(text: str, expected: Subgoal | None) -> None:
    assert parse_subgoal(text) == expected


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("", "empty output"),
        ("   \n\t ", "empty output"),
        ("pick red_block", "not of the form"),
        ("pick(red_block", "not of the form"),
        ("pick(red_block))", "not of the form"),
        ("pick((red_block))", "not of the form"),
        ("I will pick(red_block)", "not of the form"),
        ("pick(red_block) then place(red_block, left_plate)", "not of the form"),
        ("3pick(red_block)", "not of the form"),
        ("pick(red_block,)", "empty argument"),
        ("place(, left_plate)", "empty argument"),
        ("done(now)", "takes no arguments"),
        ("pick(\x00)", "not of the form"),
        ("pïck(red_block)", "not of the form"),
        ("(" * 10_000, "not of the form"),
    ],
)
def test_parse_rejects_with_reason(text: str, reason: str) -> None:
    with pytest.raises(ParseError, match=reason):
        parse_subgoal(text)


def test_round_trip() -> None:
    for subgoal in (Subgoal("place", ("red_block", "left_plate")), Subgoal("goto", ("sink 1",)), None):
        assert parse_subgoal(format_subgoal(subgoal)) == subgoal
    assert format_subgoal(None) == DONE


@pytest.mark.parametrize(
    ("subgoal", "ok"),
    [
        (Subgoal("pick", ("red_block",)), True),
        (Subgoal("goto", ("sink 1",)), True),
        (Subgoal("done", ()), False),
        (Subgoal("pick", ("a,b",)), False),
        (Subgoal("pick", (" a",)), False),
        (Subgoal("pick up", ("a",)), False),
        (Subgoal("pick", ("",)), False),
    ],
)
def test_well_formed(subgoal: Subgoal, ok: bool) -> None:
    assert is_well_formed(subgoal) is ok


def test_validate_output() -> None:
    valid = [Subgoal("pick", ("red_block",))]

    def explain(sg: Subgoal) -> str:
        return f"no {sg}"

    assert validate_output("pick(red_block)", valid, explain).valid
    done = validate_output("done()", valid, explain)
    assert done.valid and done.subgoal is None
    unknown = validate_output("pick(purple_block)", valid, explain)
    assert not unknown.valid and unknown.subgoal is not None and unknown.error == "no pick(purple_block)"
    garbage = validate_output("¯\\_(ツ)_/¯", valid, explain)
    assert not garbage.valid and garbage.subgoal is None and "not of the form" in garbage.error
    early = validate_output("done()", valid, explain, finish_allowed=False)
    assert not early.valid and "done() is not possible" in early.error
