"""The tabletop's scripted planner behind the project's `Planner` protocol (registered as the `tabletop`
world's `expert` in `policies.worlds`)."""

from __future__ import annotations

from policies.planning.decisions import DecisionTrace
from policies.planning.planner import PlannerError, PlanningContext
from sim.tabletop import ExpertPlanner, SceneState, Subgoal, Task


class ExpertPlannerBackend:
    """The scripted task decomposition of `sim.tabletop`, the reference planner; it needs the task's goals."""

    name = "expert"
    last_trace: DecisionTrace | None = None

    def __init__(self) -> None:
        self._decomposer = ExpertPlanner()

    def next_subgoal(self, context: PlanningContext[SceneState]) -> Subgoal | None:
        if not isinstance(context.task, Task):
            raise PlannerError(
                f"the expert planner needs a known task, and {context.instruction!r} is not one; "
                "reset the scene with a task name or phrase the instruction as a task's instruction"
            )
        return self._decomposer.next_subgoal(context.task, context.state)
