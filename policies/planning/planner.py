"""Planner backends behind one interface, selected by exact name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from sim.tabletop import ExpertPlanner, SceneState, Subgoal, Task


class PlannerError(RuntimeError):
    """The planner could not produce a usable subgoal; the message says why and what to do."""


@dataclass(frozen=True)
class StepRecord:
    """One executed subgoal and what came of it: the history a closed-loop planner reads."""

    subgoal: Subgoal
    success: bool
    message: str


@dataclass(frozen=True)
class PlanningContext:
    instruction: str
    state: SceneState
    history: tuple[StepRecord, ...]
    task: Task | None = None  # known when the scene was set up from a task (or the instruction parsed as one)


class Planner(Protocol):
    """Reads the instruction, the observation and the history; returns the next subgoal, or None when done."""

    name: str

    def next_subgoal(self, context: PlanningContext) -> Subgoal | None: ...


class ExpertPlannerBackend:
    """The scripted task decomposition of `sim.tabletop`, the reference planner; it needs the task's goals."""

    name = "expert"

    def __init__(self) -> None:
        self._decomposer = ExpertPlanner()

    def next_subgoal(self, context: PlanningContext) -> Subgoal | None:
        if context.task is None:
            raise PlannerError(
                f"the expert planner needs a known task, and {context.instruction!r} is not one; "
                "reset the scene with a task name or phrase the instruction as a task's instruction"
            )
        return self._decomposer.next_subgoal(context.task, context.state)


PLANNERS: dict[str, Callable[[], Planner]] = {"expert": ExpertPlannerBackend}


def make_planner(name: str) -> Planner:
    if name not in PLANNERS:
        raise ValueError(f"unknown planner {name!r}; known: {', '.join(sorted(PLANNERS))}")
    return PLANNERS[name]()
