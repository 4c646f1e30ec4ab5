"""controller: the `ExecuteSubgoal` action server that runs a skill policy π(a | s, g) at a fixed rate.

Each tick it reads the latest `SceneState`, asks `SubgoalExecution` (shared with in-process rollouts)
whether the subgoal succeeded or timed out, and otherwise publishes the policy's action as an
end-effector twist and a gripper width. A newer goal preempts the running one; cancel is honoured;
a scene that stops arriving aborts the goal instead of hanging.
"""

from __future__ import annotations

import threading
import time

import numpy as np
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.action import ExecuteSubgoal
from hgpo_msgs.msg import SceneState as SceneStateMsg
from hgpo_msgs.msg import SubgoalStatus
from rclpy.action import ActionServer, CancelResponse, GoalResponse
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup, ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Float64

from policies.control import ExecutionStatus, SubgoalExecution, make_skill_policy
from ros_nodes.conversions import scene_from_msg, subgoal_from_msg
from ros_nodes.node_main import Parameters, log_outcome, run_node
from sim.tabletop import SceneState, SubgoalError, WorldConfig, action_to_command


class Controller(Node):
    def __init__(self) -> None:
        super().__init__("controller")
        p = Parameters(self)
        self.rate_hz = p("control_rate_hz", 25.0, "control loop rate (Hz)")
        self.default_timeout_s = p("default_timeout_s", 30.0, "subgoal timeout when the goal gives none (s)")
        self.scene_timeout_s = p("scene_timeout_s", 1.0, "abort when no SceneState arrived for this long (s)")
        self.first_scene_timeout_s = p(
            "first_scene_timeout_s", 10.0, "at start-up, wait this long for the bridge's first SceneState (s)"
        )
        self.frame_id = p("frame_id", "world", "frame of the published twist")
        policy = p("policy", "expert", "skill policy backend")
        self.command_scale = WorldConfig(
            max_speed=p("max_linear_speed", 0.25, "twist at a full action (m/s)")
        )
        self.policy = make_skill_policy(policy)

        # The latest message and when it came; converted only when a tick reads it (100 Hz in, 25 Hz used).
        self._scene: tuple[SceneStateMsg, float] | None = None
        self._scene_cond = threading.Condition()
        self._goal_lock = threading.Lock()
        self._active: ServerGoalHandle | None = None

        self.twist_pub = self.create_publisher(TwistStamped, "cmd_twist", 10)
        self.gripper_pub = self.create_publisher(Float64, "gripper_cmd", 10)
        self.status_pub = self.create_publisher(SubgoalStatus, "subgoal_status", 10)
        self.create_subscription(
            SceneStateMsg, "scene_state", self._on_scene, 10, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self._server = ActionServer(
            self,
            ExecuteSubgoal,
            "execute_subgoal",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            handle_accepted_callback=self._on_accepted,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
        )
        self.get_logger().info(f"policy {policy!r} at {self.rate_hz} Hz")

    def _on_scene(self, msg: SceneStateMsg) -> None:
        with self._scene_cond:
            self._scene = (msg, time.monotonic())
            self._scene_cond.notify_all()

    def _fresh_scene(self) -> SceneState | None:
        """The latest scene, waiting for one if it is stale; None when the bridge has gone quiet.

        Before the first scene has arrived (DDS discovery of the bridge can take seconds on a loaded
        machine) the wait is first_scene_timeout_s; afterwards, scene_timeout_s.
        """

        def fresh() -> bool:
            return self._scene is not None and time.monotonic() - self._scene[1] <= self.scene_timeout_s

        with self._scene_cond:
            timeout = self.scene_timeout_s if self._scene is not None else self.first_scene_timeout_s
            if not self._scene_cond.wait_for(fresh, timeout=timeout):
                return None
            assert self._scene is not None
            return scene_from_msg(self._scene[0])

    def _on_accepted(self, goal_handle: ServerGoalHandle) -> None:
        with self._goal_lock:
            self._active = goal_handle  # a running goal sees it is no longer active and aborts: preemption
        goal_handle.execute()

    def _stop(self) -> None:
        msg = TwistStamped()
        msg.header.stamp, msg.header.frame_id = self.get_clock().now().to_msg(), self.frame_id
        self.twist_pub.publish(msg)

    def _publish(self, action: np.ndarray) -> None:
        velocity, width = action_to_command(action, self.command_scale)
        msg = TwistStamped()
        msg.header.stamp, msg.header.frame_id = self.get_clock().now().to_msg(), self.frame_id
        msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(v) for v in velocity)
        self.twist_pub.publish(msg)
        self.gripper_pub.publish(Float64(data=float(width)))

    def _finish(
        self,
        goal_handle: ServerGoalHandle,
        success: bool,
        message: str,
        distance: float,
        steps: int,
        canceled: bool = False,
    ) -> ExecuteSubgoal.Result:
        self._stop()
        subgoal = goal_handle.request.subgoal
        if canceled:
            goal_handle.canceled()
        elif success:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        state = (
            SubgoalStatus.SUCCEEDED
            if success
            else (SubgoalStatus.ABORTED if canceled else SubgoalStatus.FAILED)
        )
        self.status_pub.publish(SubgoalStatus(id=subgoal.id, state=state, message=message))
        log_outcome(self.get_logger(), success, f"[{subgoal.id}] {message}")
        return ExecuteSubgoal.Result(
            success=success, message=message, final_distance=float(distance), steps=steps
        )

    def _execute(self, goal_handle: ServerGoalHandle) -> ExecuteSubgoal.Result:
        request = goal_handle.request.subgoal
        subgoal = subgoal_from_msg(request)
        self.status_pub.publish(
            SubgoalStatus(id=request.id, state=SubgoalStatus.ACTIVE, message=str(subgoal))
        )
        scene = self._fresh_scene()
        if scene is None:
            return self._finish(goal_handle, False, self._lost_scene_message(), np.nan, 0)
        try:
            execution = SubgoalExecution(
                subgoal, self.policy, scene, request.timeout_s or self.default_timeout_s, time.monotonic()
            )
        except SubgoalError as err:
            return self._finish(goal_handle, False, f"{subgoal} rejected: {err}", np.nan, 0)
        period, ticks = 1.0 / self.rate_hz, []
        next_tick = time.monotonic()
        distance = np.nan
        while True:
            ticks.append(time.monotonic())
            if goal_handle.is_cancel_requested:
                return self._finish(
                    goal_handle, False, f"{subgoal} canceled", distance, execution.steps, True
                )
            if self._active is not goal_handle or not goal_handle.is_active:
                return self._finish(
                    goal_handle, False, f"{subgoal} preempted by a newer subgoal", distance, execution.steps
                )
            scene = self._fresh_scene()
            if scene is None:
                return self._finish(goal_handle, False, self._lost_scene_message(), distance, execution.steps)
            step = execution.step(scene, time.monotonic())
            distance = step.distance
            if step.status is not ExecutionStatus.RUNNING:
                success = step.status is ExecutionStatus.SUCCEEDED
                message = f"{step.message} ({self._rate_summary(ticks)})"
                return self._finish(goal_handle, success, message, distance, step.steps)
            assert step.action is not None  # a running step always carries an action
            self._publish(step.action)
            goal_handle.publish_feedback(ExecuteSubgoal.Feedback(distance=float(distance), steps=step.steps))
            next_tick += period
            delay = next_tick - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            else:
                next_tick = time.monotonic()  # overran: drop the missed ticks rather than bursting

    def _lost_scene_message(self) -> str:
        topic = self.resolve_topic_name("scene_state")
        first = self._scene is None
        waited = f"within {self.first_scene_timeout_s}" if first else f"for {self.scene_timeout_s}"
        return f"no SceneState {waited} s on {topic}: is the sim or arm bridge running?"

    @staticmethod
    def _rate_summary(ticks: list[float]) -> str:
        if len(ticks) < 3:
            return f"{len(ticks)} ticks"
        intervals = np.diff(ticks)
        return (
            f"{len(ticks)} ticks at {1.0 / intervals.mean():.1f} Hz, "
            f"jitter p99 {np.percentile(np.abs(intervals - intervals.mean()), 99) * 1e3:.1f} ms"
        )


def main() -> int:
    return run_node(Controller, multi_threaded=True)
