"""Planner backends behind one interface, selected by exact name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar, runtime_checkable

from policies.planning.decisions import DecisionTrace
from sim.subgoal import Subgoal

ObsT = TypeVar("ObsT")
ObsT_contra = TypeVar("ObsT_contra", contravariant=True)


class PlannerError(RuntimeError):
    """The planner could not produce a usable subgoal; the message says why and what to do."""


@dataclass(frozen=True)
class StepRecord:
    """One executed subgoal and what came of it: the history a closed-loop planner reads."""

    subgoal: Subgoal
    success: bool
    message: str


class TaskGoal(Protocol[ObsT_contra]):
    """What the loop needs of a known task: whether an observation achieves it (tabletop: `Task`)."""

    def success(self, state: ObsT_contra, /) -> bool: ...


@dataclass(frozen=True)
class PlanningContext(Generic[ObsT]):
    """What a planner reads: the instruction, the latest observation (tabletop: a SceneState; text worlds:
    their observation) and the executed subgoals with their results."""

    instruction: str
    state: ObsT
    history: tuple[StepRecord, ...]
    task: TaskGoal[ObsT] | None = None  # known when the scene was set up from a task


class Planner(Protocol):
    """Reads the instruction, the observation and the history; returns the next subgoal, or None when done."""

    name: str
    last_trace: DecisionTrace | None  # what a model-based planner saw and said in its last decision

    def next_subgoal(self, context: PlanningContext[Any]) -> Subgoal | None: ...


@runtime_checkable
class Anticipating(Protocol):
    """A planner that can use the time a subgoal executes to prepare the next decision (`LLMPlanner`)."""

    def anticipate(self, context: PlanningContext[Any], subgoal: Subgoal) -> None:
        """Prepare, in the background, for the decision after `subgoal` (planned in `context`) succeeds."""

    def warm(self, state: Any) -> bool:
        """While no task runs, prepare in the background for a task's first decision in observation `state`
        (its instruction not yet known); returns at once, whether it started anything, and may be called
        for every observation."""

    def settle(self) -> None:
        """Wait until no preparation runs in the background."""
