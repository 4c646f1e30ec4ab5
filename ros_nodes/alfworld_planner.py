"""alfworld_planner: the `RunTask` action server for text households, closed-loop over the bridge.

It resets the bridge to a game (RunTask's `task` names the game, `seed` picks one by index when `task` is
empty), then runs `run_text_loop` (shared with in-process evaluation): plan a subgoal from the latest
`text_observation`, send it to the bridge's `ExecuteSubgoal`, wait for the observation that follows, replan.
"""

from __future__ import annotations

import threading
import time

from hgpo_msgs.action import ExecuteSubgoal, RunTask
from hgpo_msgs.msg import Subgoal as SubgoalMsg
from hgpo_msgs.msg import TextObservation as TextObservationMsg
from hgpo_msgs.srv import ResetScene
from rclpy.action import ActionClient, ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.client import Client
from rclpy.node import Node

from policies.alfworld.episodes import Observed, run_text_loop
from policies.alfworld.planners import TextStep, make_text_planner
from ros_nodes.alfworld_bridge import LATCHED
from ros_nodes.node_main import Parameters, log_outcome, run_node
from ros_nodes.waiting import PeerTimeoutError, send_goal, wait_for
from sim.alfworld import TextObservation, TextSubgoal


def observation_from_msg(msg: TextObservationMsg) -> Observed:
    observation = TextObservation(
        text=msg.text,
        task=msg.task,
        admissible_commands=tuple(msg.admissible_commands),
        won=msg.won,
        done=msg.done,
        steps=msg.steps,
    )
    # An empty plan means "done" only once won; otherwise the bridge runs without its expert.
    plan = tuple(msg.expert_plan) if msg.expert_plan or msg.won else None
    return observation, plan


class TaskCanceledError(Exception):
    """The RunTask client canceled the task."""


class AlfworldPlanner(Node):
    def __init__(self) -> None:
        super().__init__("alfworld_planner")
        p = Parameters(self)
        name = p("planner", "expert", "ALFWorld planner backend")
        self.max_subgoals = p("max_subgoals", 50, "fail the task after this many subgoals")
        self.peer_timeout_s = p.positive(
            "peer_timeout_s", 60.0, "wait this long for the bridge (s): resets take seconds"
        )
        self.planner = make_text_planner(name)
        group = ReentrantCallbackGroup()
        self._cond = threading.Condition()
        self._latest: TextObservationMsg | None = None
        self._count = 0
        self._busy = threading.Lock()
        self.create_subscription(
            TextObservationMsg,
            "text_observation",
            self._on_observation,
            LATCHED,
            callback_group=MutuallyExclusiveCallbackGroup(),
        )
        self.subgoal_pub = self.create_publisher(SubgoalMsg, "subgoal", 10)
        self.reset_client: Client[ResetScene.Request, ResetScene.Response] = self.create_client(
            ResetScene, "reset_scene", callback_group=group
        )
        self.execute_client: ActionClient[
            ExecuteSubgoal.Goal, ExecuteSubgoal.Result, ExecuteSubgoal.Feedback
        ] = ActionClient(self, ExecuteSubgoal, "execute_subgoal", callback_group=group)
        self._server = ActionServer(
            self,
            RunTask,
            "run_task",
            execute_callback=self._execute,
            goal_callback=lambda _r: GoalResponse.REJECT if self._busy.locked() else GoalResponse.ACCEPT,
            callback_group=group,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
        )
        self.get_logger().info(f"ALFWorld planner {name!r} ready")

    def _on_observation(self, msg: TextObservationMsg) -> None:
        with self._cond:
            self._latest, self._count = msg, self._count + 1
            self._cond.notify_all()

    def _observation_after(self, seen: int) -> TextObservationMsg:
        """The first observation published after the `seen`-th one."""
        with self._cond:
            if not self._cond.wait_for(lambda: self._count > seen, timeout=self.peer_timeout_s):
                raise PeerTimeoutError(
                    f"no TextObservation on {self.resolve_topic_name('text_observation')} for "
                    f"{self.peer_timeout_s} s: is the alfworld bridge running?"
                )
            assert self._latest is not None
            return self._latest

    def _reset(self, task: str, seed: int) -> TextObservationMsg:
        if not self.reset_client.wait_for_service(timeout_sec=self.peer_timeout_s):
            raise PeerTimeoutError(
                f"service {self.reset_client.srv_name} not available: is the bridge running?"
            )
        seen = self._count
        future = self.reset_client.call_async(ResetScene.Request(task=task, seed=seed))
        response = wait_for(future, self.peer_timeout_s, f"service {self.reset_client.srv_name}")
        if not response.success:
            raise ValueError(f"reset refused: {response.message}")
        return self._observation_after(seen)

    def _send(self, subgoal: TextSubgoal, index: int, canceled: threading.Event) -> tuple[TextStep, Observed]:
        if canceled.is_set():
            raise TaskCanceledError
        msg = SubgoalMsg(id=index, text=str(subgoal), skill=subgoal.skill, args=list(subgoal.args))
        msg.header.stamp = self.get_clock().now().to_msg()
        self.subgoal_pub.publish(msg)
        seen = self._count
        handle = send_goal(
            self.execute_client, ExecuteSubgoal.Goal(subgoal=msg), self.peer_timeout_s, "bridge"
        )
        if not handle.accepted:
            raise PeerTimeoutError(f"the bridge rejected {subgoal}")
        result = wait_for(
            handle.get_result_async(), self.peer_timeout_s, f"bridge result of {subgoal}"
        ).result
        observed = observation_from_msg(self._observation_after(seen))
        return TextStep(subgoal, bool(result.success), result.message), observed

    def _execute(self, goal_handle: ServerGoalHandle) -> RunTask.Result:
        if not self._busy.acquire(blocking=False):
            goal_handle.abort()
            return RunTask.Result(success=False, message="another task is running")
        try:
            return self._run(goal_handle)
        finally:
            self._busy.release()

    def _run(self, goal_handle: ServerGoalHandle) -> RunTask.Result:
        started, request = time.monotonic(), goal_handle.request
        canceled = threading.Event()
        executed = 0

        def execute(subgoal: TextSubgoal) -> tuple[TextStep, Observed]:
            nonlocal executed
            if goal_handle.is_cancel_requested:
                canceled.set()
            goal_handle.publish_feedback(
                RunTask.Feedback(index=executed, subgoal=str(subgoal), status="planned")
            )
            step = self._send(subgoal, executed, canceled)
            status = "succeeded" if step[0].success else "failed"
            goal_handle.publish_feedback(
                RunTask.Feedback(index=executed, subgoal=str(subgoal), status=status)
            )
            log_outcome(self.get_logger(), step[0].success, f"[{executed}] {subgoal}: {step[0].feedback}")
            executed += 1
            return step

        try:
            if request.reset:
                first = self._reset(request.task, request.seed)
            else:
                with self._cond:
                    if self._latest is None:
                        raise PeerTimeoutError("no text observation yet: reset to a game first")
                    first = self._latest
            if not self.execute_client.wait_for_server(timeout_sec=self.peer_timeout_s):
                raise PeerTimeoutError(
                    "action execute_subgoal not available: is the alfworld bridge running?"
                )
            self.get_logger().info(f"game {first.game}: {first.task!r}")
            outcome = run_text_loop(self.planner, observation_from_msg(first), execute, self.max_subgoals)
        except TaskCanceledError:
            goal_handle.canceled()
            return RunTask.Result(success=False, subgoals_executed=executed, message="task canceled")
        except (PeerTimeoutError, ValueError) as err:
            goal_handle.abort()
            self.get_logger().error(str(err))
            return RunTask.Result(success=False, subgoals_executed=executed, message=str(err))
        goal_handle.succeed() if outcome.won else goal_handle.abort()
        message = f"{outcome.message} ({time.monotonic() - started:.1f} s)"
        log_outcome(self.get_logger(), outcome.won, message)
        return RunTask.Result(success=outcome.won, subgoals_executed=executed, message=message)


def main() -> int:
    return run_node(AlfworldPlanner, multi_threaded=True)
