"""Task planners that emit the next subgoal, and the closed loop that runs them.

`domain.py` is the contract between the LLM planner and a world (see its docstring to add one).
"""

from policies.planning.closed_loop import EventHook, LoopConfig, TaskOutcome, format_step, run_closed_loop
from policies.planning.decisions import Attempt, Decision, DecisionLog, DecisionTrace, Message
from policies.planning.domain import PlanningDomain, SkillParam, SkillSpec
from policies.planning.domains import DOMAINS, make_domain
from policies.planning.llm_config import LLMConfig
from policies.planning.llm_planner import LLMPlanner
from policies.planning.parsing import DONE, ParseError, format_subgoal, parse_subgoal
from policies.planning.planner import (
    ExpertPlannerBackend,
    Planner,
    PlannerError,
    PlanningContext,
    StepRecord,
    TaskGoal,
)
from policies.planning.registry import PLANNERS, make_planner
from policies.planning.tabletop_domain import TabletopDomain

__all__ = [
    "DOMAINS",
    "DONE",
    "PLANNERS",
    "Attempt",
    "Decision",
    "DecisionLog",
    "DecisionTrace",
    "EventHook",
    "ExpertPlannerBackend",
    "LLMConfig",
    "LLMPlanner",
    "LoopConfig",
    "Message",
    "ParseError",
    "Planner",
    "PlannerError",
    "PlanningContext",
    "PlanningDomain",
    "SkillParam",
    "SkillSpec",
    "StepRecord",
    "TabletopDomain",
    "TaskGoal",
    "TaskOutcome",
    "format_step",
    "format_subgoal",
    "make_domain",
    "make_planner",
    "parse_subgoal",
    "run_closed_loop",
]
