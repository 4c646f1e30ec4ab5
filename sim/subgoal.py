"""The subgoal every world and the planner share: a skill named with its arguments, e.g.
`place(red_block, left_plate)` or `go_to(countertop 1)`. World-neutral, so that the planning package can
speak of subgoals without importing any world."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Subgoal:
    """One step of a plan: a skill applied to named objects, e.g. place(red_block, left_plate)."""

    skill: str
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "args", tuple(self.args))

    def __str__(self) -> str:
        return f"{self.skill}({', '.join(map(str, self.args))})"
