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
