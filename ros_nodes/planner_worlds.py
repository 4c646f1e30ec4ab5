"""What the planner node does differently per planning domain, as small adapters selected by its `domain`
parameter: which topic it observes and how a message becomes the domain's observation, what a reset sets
up as the task's goal, and how a planned subgoal becomes a `Subgoal` message (tabletop: grounded to a goal
vector). Everything else — the RunTask server, the closed loop, waiting on peers, cancel — is the node's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol

from hgpo_msgs.msg import SceneState as SceneStateMsg
from hgpo_msgs.msg import Subgoal as SubgoalMsg
from hgpo_msgs.srv import ResetScene
from rclpy.qos import QoSProfile

from policies.planning import TaskGoal
from ros_nodes.conversions import scene_from_msg, subgoal_to_msg
from sim.tabletop import SceneState, Subgoal, Task, ground, make_task


class PlannerWorld(Protocol):
    """One domain as the planner node sees it over ROS."""

    domain: str
    msg_type: Any  # the observation message type
    topic: str
    qos: QoSProfile | int
    streamed: bool  # published continuously (wait for one after each call) or once per reset and step
    source: str  # who publishes the observations, for error messages
    executor: str  # who serves execute_subgoal, for error messages

    def accept(self, msg: Any) -> bool:
        """Whether `msg` describes the world after the last reset (topics and services are not ordered)."""
        ...

    def observation(self, msg: Any) -> Any:
        """The planning domain's observation of a message."""
        ...

    def after_reset(self, request: ResetScene.Request, response: ResetScene.Response) -> TaskGoal[Any] | None:
        """Note a successful reset; the goal of the task it set up (None: not known)."""
        ...

    def goal_for(self, instruction: str) -> TaskGoal[Any] | None:
        """The known goal for an instruction given without a reset, if any."""
        ...

    def subgoal_msg(
        self, subgoal: Subgoal, observation: Any, subgoal_id: int, timeout_s: float
    ) -> SubgoalMsg:
        """The message to execute; raises ValueError (SubgoalError) when it cannot be grounded."""
        ...

    def ended(self, observation: Any) -> str | None:
        """Why the world ended the task unsolved, or None."""
        ...


class TabletopWorld:
    """The MuJoCo tabletop (or a real arm): SceneState at the bridge's rate, subgoals grounded to goals."""

    domain = "tabletop"
    msg_type = SceneStateMsg
    topic = "scene_state"
    qos: QoSProfile | int = 10
    streamed = True
    source = "the sim or arm bridge"
    executor = "the controller"

    def __init__(self) -> None:
        self._not_before_ns = 0  # scenes stamped before the last reset describe the old world
        self._last_task: Task | None = None  # set up by the last reset

    def accept(self, msg: SceneStateMsg) -> bool:
        stamp = msg.header.stamp
        return bool(stamp.sec * 10**9 + stamp.nanosec >= self._not_before_ns)

    def observation(self, msg: SceneStateMsg) -> SceneState:
        return scene_from_msg(msg)

    def after_reset(self, request: ResetScene.Request, response: ResetScene.Response) -> Task | None:
        stamp = response.scene.header.stamp
        self._not_before_ns = stamp.sec * 10**9 + stamp.nanosec
        self._last_task = make_task(response.task, seed=request.seed)
        return self._last_task

    def goal_for(self, instruction: str) -> Task | None:
        known = self._last_task is not None and self._last_task.instruction == instruction
        return self._last_task if known else None

    def subgoal_msg(
        self, subgoal: Subgoal, observation: SceneState, subgoal_id: int, timeout_s: float
    ) -> SubgoalMsg:
        return subgoal_to_msg(subgoal, subgoal_id, ground(subgoal, observation), timeout_s)

    def ended(self, observation: SceneState) -> str | None:
        return None


def _alfworld() -> PlannerWorld:
    from ros_nodes.planner_alfworld import AlfworldWorld  # imports ALFWorld only when asked for

    return AlfworldWorld()


WORLDS: Mapping[str, Callable[[], PlannerWorld]] = {"tabletop": TabletopWorld, "alfworld": _alfworld}


def make_world(domain: str) -> PlannerWorld:
    if domain not in WORLDS:
        raise ValueError(f"unknown planner domain {domain!r}; known: {', '.join(sorted(WORLDS))}")
    return WORLDS[domain]()
