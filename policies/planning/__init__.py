"""Task planners that emit the next subgoal, and the closed loop that runs them."""

from policies.planning.closed_loop import EventHook, LoopConfig, TaskOutcome, format_step, run_closed_loop
from policies.planning.planner import (
    PLANNERS,
    ExpertPlannerBackend,
    Planner,
    PlannerError,
    PlanningContext,
    StepRecord,
    make_planner,
)

__all__ = [
    "PLANNERS",
    "EventHook",
    "ExpertPlannerBackend",
    "LoopConfig",
    "Planner",
    "PlannerError",
    "PlanningContext",
    "StepRecord",
    "TaskOutcome",
    "format_step",
    "make_planner",
    "run_closed_loop",
]
