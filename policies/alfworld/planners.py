"""ALFWorld planner backends behind one interface, selected by exact name.

`expert` maps the first command of ALFWorld's planner expert (Fast Downward on the game's PDDL, replanned
from the current state) onto the subgoal vocabulary: the oracle for generated games and the source of
demonstrations. `llm` is the project's LLM planner over the `alfworld` planning domain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from policies.planning.alfworld_domain import AlfworldView
from policies.planning.domain import Subgoal
from policies.planning.llm_config import LLMConfig
from policies.planning.planner import PlannerError, PlanningContext, StepRecord
from sim.alfworld import TextObservation, TextSubgoal, subgoal_for_command


@dataclass(frozen=True)
class TextStep:
    """One executed subgoal and the game's answer."""

    subgoal: TextSubgoal
    success: bool
    feedback: str


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


class LLMTextPlanner:
    """The project's LLM planner (policies.planning) over the `alfworld` planning domain: the prompt shows
    the room, the game's last answer and the recent subgoals; decoding is constrained to the admissible
    subgoals (or done()) where the backend can."""

    name = "llm"
    needs_expert_plan = False

    def __init__(self, config: LLMConfig | None = None) -> None:
        from policies.planning.llm_planner import LLMPlanner  # loads model backends: only when asked for

        self.config = replace(config or LLMConfig(), domain="alfworld")
        self.planner = LLMPlanner.from_config(self.config)

    def next_subgoal(self, context: TextPlanningContext) -> TextSubgoal | None:
        try:
            subgoal = self.planner.next_subgoal(planning_context(context))
        except PlannerError as err:
            raise TextPlannerError(str(err)) from err
        return None if subgoal is None else TextSubgoal(subgoal.skill, subgoal.args)


def planning_context(context: TextPlanningContext) -> PlanningContext[AlfworldView]:
    """The LLM planner's view of a text planning context (the alfworld planning domain's observation)."""
    observation = context.observation
    view = AlfworldView(context.first_observation, observation.text, observation.admissible_commands)
    history = tuple(
        StepRecord(Subgoal(s.subgoal.skill, s.subgoal.args), s.success, s.feedback) for s in context.history
    )
    return PlanningContext(observation.task, view, history)


TEXT_PLANNERS: dict[str, Callable[[], TextPlanner]] = {"expert": ExpertTextPlanner, "llm": LLMTextPlanner}


def make_text_planner(name: str) -> TextPlanner:
    if name not in TEXT_PLANNERS:
        raise ValueError(f"unknown ALFWorld planner {name!r}; known: {', '.join(sorted(TEXT_PLANNERS))}")
    return TEXT_PLANNERS[name]()
