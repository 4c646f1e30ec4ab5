"""Task planners that emit the next subgoal, and the closed loop that runs them."""

from policies.planning.closed_loop import LoopConfig, StepRecord, TaskOutcome, run_closed_loop
from policies.planning.planner import (
    PLANNERS,
    ExpertPlanner,
    Planner,
    PlannerError,
    PlanningContext,
    make_planner,
)

__all__ = [
    "PLANNERS",
    "ExpertPlanner",
    "LoopConfig",
    "Planner",
    "PlannerError",
    "PlanningContext",
    "StepRecord",
    "TaskOutcome",
    "make_planner",
    "run_closed_loop",
]
