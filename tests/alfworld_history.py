"""ALFWorld game histories written by hand for planner tests: (subgoal text, the game's answer) pairs as
the `StepRecord`s a closed-loop planner reads."""

from __future__ import annotations

from dataclasses import astuple

from policies.planning.domain import Subgoal
from policies.planning.planner import StepRecord
from sim.alfworld import parse_subgoal


def history_of(*steps: tuple[str, str]) -> tuple[StepRecord, ...]:
    """Each step succeeded, with the game's answer as its message."""
    return tuple(StepRecord(Subgoal(*astuple(parse_subgoal(text))), True, answer) for text, answer in steps)


# A room, and a walk holding the candle that ends at the shelf: bed 1 was gone to since the take.
ROOM = "You are in the middle of a room. Looking around you, you see a bed 1, a desk 1, and a shelf 1."
AT_SHELF = ("go to bed 1", "go to desk 1", "examine shelf 1", "inventory")
WALKED = (
    ("take(candle 1, drawer 2)", "You pick up the candle 1 from the drawer 2."),
    ("go_to(bed 1)", "You arrive at bed 1. On the bed 1, you see a pillow 1."),
    ("examine(bed 1)", "On the bed 1, you see a pillow 1."),
    ("go_to(shelf 1)", "You arrive at shelf 1. On the shelf 1, you see nothing."),
)
