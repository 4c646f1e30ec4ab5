"""controller: the `ExecuteSubgoal` action server that runs a skill policy π(a | s, g) at a fixed rate.

Each tick it reads the latest `SceneState`, asks `SubgoalExecution` (shared with in-process rollouts)
whether the subgoal succeeded or timed out, and otherwise publishes the policy's action as an
end-effector twist and a gripper width. A newer goal preempts the running one; cancel is honoured;
a scene that stops arriving, a client whose heartbeat stops (ros_nodes/liveness.py) and an exception in a
tick each stop the arm and abort the goal instead of hanging or driving the arm for nobody. A client silent
for a shorter while (client_hold_s) only holds the arm still: a stalled but live planner costs a pause,
never its subgoal, and a dead one has the arm still well before the abort.
"""

from __future__ import annotations

import enum
import math
import threading
import time
from pathlib import Path

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

from policies.control import ExecutionStatus, SkillPolicyConfig, SubgoalExecution, make_skill_policy
from policies.control.skill_policy import GOAL_HORIZON_M
from ros_nodes.conversions import clip, scene_from_msg, subgoal_from_msg
from ros_nodes.estop import EmergencyStopError, EstopMonitor
from ros_nodes.fixed_rate import FixedRate
from ros_nodes.liveness import KEEPALIVE_S, ClientWatch
from ros_nodes.node_main import Parameters, log_outcome, run_node
from ros_nodes.waiting import RESULT_KEPT_S
from sim.tabletop import SKILLS, SceneState, SubgoalError, WorldConfig, action_to_command


class Ending(enum.Enum):
    """How a subgoal's execution ended."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    CANCELED = "canceled"
    PREEMPTED = "preempted"

    @property
    def status(self) -> int:
        """The SubgoalStatus state it is reported as: canceled and preempted goals were aborted."""
        return {
            Ending.SUCCEEDED: SubgoalStatus.SUCCEEDED,
            Ending.FAILED: SubgoalStatus.FAILED,
        }.get(self, SubgoalStatus.ABORTED)


class Controller(Node):
    def __init__(self) -> None:
        super().__init__("controller")
        p = Parameters(self)
        self.rate_hz = p.positive("control_rate_hz", 25.0, "control loop rate (Hz)")
        self.feedback_period_s = 1.0 / p.positive(
            "feedback_rate_hz", 25.0, "ExecuteSubgoal feedback rate (Hz); at most one per control tick"
        )
        self.default_timeout_s = p.positive(
            "default_timeout_s", 30.0, "subgoal timeout when the goal gives none (s)"
        )
        self.max_timeout_s = p.positive("max_timeout_s", 300.0, "subgoals asking for longer are refused (s)")
        self.max_name_chars = int(
            p.positive("max_name_chars", 64, "skill and argument names longer than this are refused")
        )
        self.client_hold_s = p.positive(
            "client_hold_s",
            0.25,
            "hold the arm still while its client's heartbeat is silent this long; it resumes when heard (s)",
        )
        self.client_timeout_s = p.positive(
            "client_timeout_s", 0.5, "abort a subgoal whose client's heartbeat stopped for this long (s)"
        )
        self.scene_timeout_s = p.positive(
            "scene_timeout_s", 1.0, "abort when no SceneState arrived for this long (s)"
        )
        self.first_scene_timeout_s = p.positive(
            "first_scene_timeout_s", 10.0, "a subgoal starting waits this long for a fresh SceneState (s)"
        )
        self.frame_id = p("frame_id", "world", "frame of the published twist")
        policy = p("policy", "expert", "skill policy backend: onnx (learned) or expert (scripted)")
        model_dir = p("model_dir", "", "onnx: folder of <skill>/policy.onnx files; empty: the shipped ones")
        fallback = p("fallback_policy", "expert", "onnx: backend for skills without a file; none: they fail")
        horizon = p(
            "goal_horizon_m",
            GOAL_HORIZON_M,
            "onnx: feed goals farther than this as a waypoint this far (0.0: off)",
        )
        self.command_scale = WorldConfig(
            max_speed=p.positive("max_linear_speed", 0.25, "twist at a full action (m/s)")
        )
        config = SkillPolicyConfig(Path(model_dir) if model_dir else None, fallback, horizon)
        self.policy = make_skill_policy(policy, config)  # a bad policy file: exit 2 with its error
        for skill in SKILLS:
            self.get_logger().info(f"{skill}: {self.policy.source(skill)}")
        for note in self.policy.deployment_differences(self.command_scale.max_speed, 1.0 / self.rate_hz):
            self.get_logger().warning(note)
        self.estop = EstopMonitor(self)  # arm_bridge's latched e-stop: no subgoal starts or runs under it

        # The latest message and when it came; converted only when a tick reads it (100 Hz in, 25 Hz used).
        self._scene: tuple[SceneStateMsg, float] | None = None
        self._scene_cond = threading.Condition()
        self._active: ServerGoalHandle | None = None
        self._stopping = threading.Event()  # Ctrl-C: a running subgoal stops the arm and ends

        self.twist_pub = self.create_publisher(TwistStamped, "cmd_twist", 10)
        self.gripper_pub = self.create_publisher(Float64, "gripper_cmd", 10)
        self.status_pub = self.create_publisher(SubgoalStatus, "subgoal_status", 10)
        self.create_subscription(
            SceneStateMsg, "scene_state", self._on_scene, 10, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self.client_watch = ClientWatch(self, "execute_subgoal", MutuallyExclusiveCallbackGroup())
        self._server = ActionServer(
            self,
            ExecuteSubgoal,
            "execute_subgoal",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT,
            handle_accepted_callback=self._on_accepted,
            cancel_callback=lambda _goal: CancelResponse.ACCEPT,
            callback_group=ReentrantCallbackGroup(),
            result_timeout=RESULT_KEPT_S,
        )
        self.get_logger().info(f"policy {policy!r} at {self.rate_hz} Hz")

    def _on_scene(self, msg: SceneStateMsg) -> None:
        with self._scene_cond:
            self._scene = (msg, time.monotonic())
            self._scene_cond.notify_all()

    def _fresh_scene(self, goal_handle: ServerGoalHandle, starting: bool) -> SceneState | None:
        """The latest scene; None when the bridge has gone quiet.

        Mid-subgoal, a scene older than scene_timeout_s means the bridge is gone (waiting for a fresh one on
        top of that doubled the detection time). When a subgoal starts, it waits up to first_scene_timeout_s
        for a fresh one: DDS discovery of a bridge that just started can take seconds on a loaded machine.
        Meanwhile keep-alive feedback tells the client that the controller itself is alive.
        """
        with self._scene_cond:

            def stale() -> bool:
                return self._scene is None or time.monotonic() - self._scene[1] > self.scene_timeout_s

            deadline = time.monotonic() + self.first_scene_timeout_s
            while starting and stale() and (remaining := deadline - time.monotonic()) > 0:
                if not self._scene_cond.wait(timeout=min(remaining, KEEPALIVE_S)):
                    goal_handle.publish_feedback(ExecuteSubgoal.Feedback(distance=math.nan, steps=0))
            if stale():
                return None
            assert self._scene is not None
            return scene_from_msg(self._scene[0])

    def _on_accepted(self, goal_handle: ServerGoalHandle) -> None:
        self._active = goal_handle  # a running goal sees it is no longer the active one: preemption
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
        self, goal_handle: ServerGoalHandle, ending: Ending, message: str, distance: float, steps: int
    ) -> ExecuteSubgoal.Result:
        if ending is not Ending.PREEMPTED:  # a preempting goal is already commanding the arm
            self._stop()
        if ending is Ending.CANCELED:
            goal_handle.canceled()
        elif ending is Ending.SUCCEEDED:
            goal_handle.succeed()
        else:
            goal_handle.abort()
        subgoal = goal_handle.request.subgoal
        self.status_pub.publish(SubgoalStatus(id=subgoal.id, state=ending.status, message=message))
        success = ending is Ending.SUCCEEDED
        log_outcome(self.get_logger(), success, f"[{subgoal.id}] {message}")
        return ExecuteSubgoal.Result(
            success=success, message=message, final_distance=float(distance), steps=steps
        )

    def stop_work(self) -> None:
        self._stopping.set()

    def _execute(self, goal_handle: ServerGoalHandle) -> ExecuteSubgoal.Result:
        request = goal_handle.request.subgoal
        subgoal = subgoal_from_msg(request)
        self.status_pub.publish(
            SubgoalStatus(id=request.id, state=SubgoalStatus.ACTIVE, message=clip(str(subgoal)))
        )
        timeout_s = request.timeout_s or self.default_timeout_s
        refusal = self._refusal(request.skill, list(request.args), timeout_s)
        if refusal:  # named clipped: a 10 kB name is not echoed into results and logs
            message = f"{clip(str(subgoal))} rejected: {refusal}"
            return self._finish(goal_handle, Ending.FAILED, message, np.nan, 0)
        try:
            self.estop.check(f"starting {subgoal}")
        except EmergencyStopError as err:
            return self._finish(goal_handle, Ending.FAILED, str(err), np.nan, 0)
        scene = self._fresh_scene(goal_handle, starting=True)
        if scene is None:
            return self._finish(goal_handle, Ending.FAILED, self._lost_scene_message(True), np.nan, 0)
        try:
            execution = SubgoalExecution(subgoal, self.policy, scene, timeout_s, time.monotonic())
        except SubgoalError as err:
            return self._finish(goal_handle, Ending.FAILED, f"{subgoal} rejected: {err}", np.nan, 0)
        rate, ticks = FixedRate(1.0 / self.rate_hz), []
        next_feedback = -math.inf
        distance = np.nan
        holding = False  # the client's heartbeat is late: the arm holds still until it is heard again
        while True:
            ticks.append(time.monotonic())
            if goal_handle.is_cancel_requested:
                return self._finish(
                    goal_handle, Ending.CANCELED, f"{subgoal} canceled", distance, execution.steps
                )
            if self._active is not goal_handle or not goal_handle.is_active:
                message = f"{subgoal} preempted by a newer subgoal"
                return self._finish(goal_handle, Ending.PREEMPTED, message, distance, execution.steps)
            if self._stopping.is_set():
                message = f"{subgoal} stopped: the controller is shutting down"
                return self._finish(goal_handle, Ending.FAILED, message, distance, execution.steps)
            if self.estop.latched:
                message = f"{subgoal} stopped: emergency stop latched"
                return self._finish(goal_handle, Ending.FAILED, message, distance, execution.steps)
            silent = self.client_watch.silent_for(goal_handle.goal_id, ticks[-1])
            if silent is not None and silent > self.client_timeout_s:
                message = f"{subgoal} stopped: its client sent no heartbeat for {silent:.2f} s (gone?)"
                return self._finish(goal_handle, Ending.FAILED, message, distance, execution.steps)
            scene = self._fresh_scene(goal_handle, starting=False)
            if scene is None:
                return self._finish(
                    goal_handle, Ending.FAILED, self._lost_scene_message(False), distance, execution.steps
                )
            try:
                step = execution.step(scene, time.monotonic())
            except SubgoalError as err:  # e.g. an object perception no longer reports
                return self._finish(
                    goal_handle, Ending.FAILED, f"{subgoal} failed: {err}", distance, execution.steps
                )
            except Exception as err:  # a policy failing mid-subgoal: the arm stops, the caller hears why
                message = f"{subgoal} failed: control tick raised {type(err).__name__}: {err}"
                return self._finish(goal_handle, Ending.FAILED, message, distance, execution.steps)
            distance = step.distance
            if step.status is not ExecutionStatus.RUNNING:
                ending = Ending.SUCCEEDED if step.status is ExecutionStatus.SUCCEEDED else Ending.FAILED
                message = f"{step.message} ({self._rate_summary(ticks, rate.period_s)})"
                return self._finish(goal_handle, ending, message, distance, step.steps)
            assert step.action is not None  # a running step always carries an action
            late = silent is not None and silent > self.client_hold_s
            if late and not holding:
                self.get_logger().warning(f"{subgoal}: its client silent for {silent:.2f} s: holding still")
            elif holding and not late:
                self.get_logger().info(f"{subgoal}: its client is heard again: resuming")
            holding = late
            if holding:  # the gripper keeps its width: a held block is not dropped
                self._stop()
            else:
                self._publish(step.action)
            if ticks[-1] >= next_feedback:  # per tick at 200 Hz on 2 loaded cores: 0.6 ms of the 5 ms (mean)
                next_feedback = ticks[-1] + self.feedback_period_s
                feedback = ExecuteSubgoal.Feedback(distance=float(distance), steps=step.steps)
                goal_handle.publish_feedback(feedback)
            rate.sleep()

    def _refusal(self, skill: str, args: list[str], timeout_s: float) -> str | None:
        """Why a subgoal is refused before it starts (unbounded inputs), or None."""
        if not (math.isfinite(timeout_s) and 0 < timeout_s <= self.max_timeout_s):
            return f"timeout_s {timeout_s} is not in (0, {self.max_timeout_s}] s (max_timeout_s)"
        long = [name for name in (skill, *args) if len(name) > self.max_name_chars]
        if long:
            return f"a name of {len(long[0])} characters (max_name_chars {self.max_name_chars})"
        return None

    def _lost_scene_message(self, starting: bool) -> str:
        topic = self.resolve_topic_name("scene_state")
        waited = f"within {self.first_scene_timeout_s}" if starting else f"for {self.scene_timeout_s}"
        return f"no SceneState {waited} s on {topic}: is the sim or arm bridge running?"

    @staticmethod
    def _rate_summary(ticks: list[float], period: float) -> str:
        """Achieved rate and jitter (|tick interval - period|, as `hgpo bench graph` reports it)."""
        if len(ticks) < 3:
            return f"{len(ticks)} ticks"
        intervals = np.diff(ticks)
        return (
            f"{len(ticks)} ticks at {1.0 / intervals.mean():.1f} Hz, "
            f"jitter p99 {np.percentile(np.abs(intervals - period), 99) * 1e3:.1f} ms"
        )


def main() -> int:
    return run_node(Controller, multi_threaded=True)
