"""The low-level controller: skill policies π(a | s, g) and the loop that executes one subgoal."""

from policies.control.execution import ControlStep, ExecutionStatus, SubgoalExecution
from policies.control.registry import SKILL_POLICIES, make_skill_policy
from policies.control.rollout import ControlWatch, SubgoalResult, execute_subgoal
from policies.control.skill_policy import ExpertSkillPolicy, SkillPolicy, SkillPolicyConfig

__all__ = [
    "SKILL_POLICIES",
    "ControlStep",
    "ControlWatch",
    "ExecutionStatus",
    "ExpertSkillPolicy",
    "SkillPolicy",
    "SkillPolicyConfig",
    "SubgoalExecution",
    "SubgoalResult",
    "execute_subgoal",
    "make_skill_policy",
]
