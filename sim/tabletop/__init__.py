"""MuJoCo tabletop: a Panda-like arm under Cartesian velocity control, blocks, plates, tasks and experts.

world = TabletopWorld(WorldConfig(control_dt=0.04))
task = make_task("stack", seed=3)
state = world.reset(task)
subgoal = ExpertPlanner().next_subgoal(task, state)
velocity, width = action_to_command(expert_action(subgoal, state), world.config)
state = world.step(velocity, width)
"""

from sim.tabletop.errors import (
    ArgumentTypeError,
    ArityError,
    SubgoalError,
    UnknownObjectError,
    UnknownSkillError,
    UnknownTaskError,
)
from sim.tabletop.expert_planner import ExpertPlanner
from sim.tabletop.experts import (
    ExpertConfig,
    action_to_command,
    expert_action,
    obstacle_top,
    releasing,
    travel_waypoint,
)
from sim.tabletop.ik import IKConfig, Workspace
from sim.tabletop.layout import Layout, LayoutRanges
from sim.tabletop.predicates import PREDICATES
from sim.tabletop.skills import (
    SKILLS,
    Param,
    Skill,
    Subgoal,
    check_subgoal,
    goal_distance,
    ground,
    subgoal_succeeded,
)
from sim.tabletop.state import ObjectState, SceneState
from sim.tabletop.tasks import TASK_GROUPS, TASKS, Atom, Task, TaskSpec, make_task, task_names
from sim.tabletop.world import TabletopWorld, WorldConfig

__all__ = [
    "PREDICATES",
    "SKILLS",
    "TASKS",
    "TASK_GROUPS",
    "ArgumentTypeError",
    "ArityError",
    "Atom",
    "ExpertConfig",
    "ExpertPlanner",
    "IKConfig",
    "Layout",
    "LayoutRanges",
    "ObjectState",
    "Param",
    "SceneState",
    "Skill",
    "Subgoal",
    "SubgoalError",
    "TabletopWorld",
    "Task",
    "TaskSpec",
    "UnknownObjectError",
    "UnknownSkillError",
    "UnknownTaskError",
    "Workspace",
    "WorldConfig",
    "action_to_command",
    "check_subgoal",
    "expert_action",
    "goal_distance",
    "ground",
    "make_task",
    "obstacle_top",
    "releasing",
    "subgoal_succeeded",
    "task_names",
    "travel_waypoint",
]
