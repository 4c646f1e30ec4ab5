"""ALFWorld planner backends behind one interface, selected by exact name.

`expert` maps the first command of ALFWorld's planner expert (Fast Downward on the game's PDDL, replanned
from the current state) onto the subgoal vocabulary: the oracle for generated games and the source of
demonstrations. The language-model backend joins this registry with the planner issue's LLM.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from policies.alfworld.prompt import TextStep
from sim.alfworld import TextObservation, TextSubgoal, subgoal_for_command


class TextPlannerError(RuntimeError):
    """The planner could not produce a usable subgoal; the message says why."""


@dataclass(frozen=True)
class TextPlanningContext:
    first_observation: str  # the room description and task after reset
    observation: TextObservation
    history: tuple[TextStep, ...]
    expert_plan: tuple[str, ...] | None = None  # the planner expert's commands, when the world offers them


class TextPlanner(Protocol):
    name: str
    needs_expert_plan: bool  # the world must attach ALFWorld's planner expert for this backend

    def next_subgoal(self, context: TextPlanningContext) -> TextSubgoal | None: ...


class ExpertTextPlanner:
    """Follows ALFWorld's planner expert; None when its plan is empty (the task is done)."""

    name = "expert"
    needs_expert_plan = True

    def next_subgoal(self, context: TextPlanningContext) -> TextSubgoal | None:
        if context.expert_plan is None:
            raise TextPlannerError("the expert planner needs the world's expert plan: enable the expert")
        if not context.expert_plan:
            return None
        command = context.expert_plan[0]
        subgoal = subgoal_for_command(command)
        if subgoal is None:
            raise TextPlannerError(
                f"the planner expert's command {command!r} is outside the skill vocabulary"
            )
        return subgoal


TEXT_PLANNERS: dict[str, Callable[[], TextPlanner]] = {"expert": ExpertTextPlanner}


def make_text_planner(name: str) -> TextPlanner:
    if name not in TEXT_PLANNERS:
        raise ValueError(f"unknown ALFWorld planner {name!r}; known: {', '.join(sorted(TEXT_PLANNERS))}")
    return TEXT_PLANNERS[name]()
