"""ALFWorld planners behind the project's `Planner` protocol, on the `alfworld` planning domain's observation
(`AlfworldView`), registered under the `alfworld` domain in `policies.planning.registry`.

`expert` maps the first command of ALFWorld's planner expert (Fast Downward on the game's PDDL, replanned
from the current state) onto the subgoal vocabulary: the oracle for generated games and the source of
demonstrations. `llm` is the project's `LLMPlanner` on the `alfworld` domain (built by the registry).
"""

from __future__ import annotations

from policies.planning.alfworld_domain import AlfworldView
from policies.planning.decisions import DecisionTrace
from policies.planning.domain import Subgoal
from policies.planning.planner import PlannerError, PlanningContext
from sim.alfworld import subgoal_for_command


class ExpertAlfworldPlanner:
    """Follows ALFWorld's planner expert; None when its plan is empty (the task is done)."""

    name = "expert"
    last_trace: DecisionTrace | None = None

    def next_subgoal(self, context: PlanningContext[AlfworldView]) -> Subgoal | None:
        plan = context.state.expert_plan
        if plan is None:
            raise PlannerError(
                "the expert planner needs the world's expert plan: run the bridge or env with expert enabled"
            )
        if not plan:
            return None
        subgoal = subgoal_for_command(plan[0])
        if subgoal is None:
            raise PlannerError(f"the planner expert's command {plan[0]!r} is outside the skill vocabulary")
        return Subgoal(subgoal.skill, subgoal.args)
