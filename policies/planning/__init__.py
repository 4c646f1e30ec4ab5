"""Task planners that emit the next subgoal, and the closed loop that runs them; no world lives here.

`domain.py` is the contract between the LLM planner and a world (see its docstring to add one);
`registry.py` holds worlds by name, and `policies/worlds.py` registers the project's.
"""

from policies.planning.closed_loop import EventHook, LoopConfig, TaskOutcome, format_step, run_closed_loop
from policies.planning.decisions import Attempt, Decision, DecisionLog, DecisionTrace, Message
from policies.planning.domain import PlanningDomain, SkillParam, SkillSpec
from policies.planning.llm_config import LLMConfig
from policies.planning.llm_planner import LLMPlanner
from policies.planning.parsing import DONE, ParseError, format_subgoal, parse_subgoal
from policies.planning.planner import (
    Planner,
    PlannerError,
    PlanningContext,
    StepRecord,
    TaskGoal,
)
from policies.planning.registry import PlannerFactory, World, WorldRegistry, llm_planner

__all__ = [
    "DONE",
    "Attempt",
    "Decision",
    "DecisionLog",
    "DecisionTrace",
    "EventHook",
    "LLMConfig",
    "LLMPlanner",
    "LoopConfig",
    "Message",
    "ParseError",
    "Planner",
    "PlannerError",
    "PlannerFactory",
    "PlanningContext",
    "PlanningDomain",
    "SkillParam",
    "SkillSpec",
    "StepRecord",
    "TaskGoal",
    "TaskOutcome",
    "World",
    "WorldRegistry",
    "format_step",
    "format_subgoal",
    "llm_planner",
    "parse_subgoal",
    "run_closed_loop",
]
