"""An in-process tabletop episode (`hgpo run-task|eval-planner --record`) recorded as the graph's recorder
records `make sim`: the same topics under /hgpo, types, QoS metadata, cdr and embedded definitions, so
`hgpo bag info|replay`, `ros2 bag` and Foxglove read both alike. No rclpy: messages are built by
ros_nodes/conversions.py, as the nodes build them, and serialized by ros_nodes/bag/encoder.py.

What the in-process loop has an equivalent for, and who publishes it in the graph:

- planner: `instruction` (once), `subgoal` (each subgoal sent to the controller, with its grounded goal),
  `run_task/_action/feedback` (each subgoal planned, then succeeded or failed; not the graph's 0.2 s
  "running" keep-alives) and `run_task/_action/status` (executing, then succeeded or aborted);
- controller: `subgoal_status` (active, then succeeded or failed), per control tick `cmd_twist`,
  `gripper_cmd` and `execute_subgoal/_action/feedback` (distance, steps), a zero twist when a subgoal ends;
- sim_bridge: `scene_state` and `joint_states` after the reset and after every world step.

Not recorded: the action liveness heartbeats and the controller's goal status (DDS bookkeeping the loop
has no equivalent for). Time is **simulated time**, anchored at the wall-clock time the episode started:
log time, publish time and header stamps all read `start + world time`, so rates are the graph's (100 Hz
scene, 25 Hz control) however fast the process ran, and a decision takes no time on that clock (the world
stands still while the planner thinks).
"""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from action_msgs.msg import GoalInfo, GoalStatus, GoalStatusArray
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.action import ExecuteSubgoal, RunTask
from hgpo_msgs.msg import SubgoalStatus
from std_msgs.msg import Float64, String

from policies.control import ControlStep
from policies.evaluation import EpisodeResult
from policies.planning import StepRecord
from ros_nodes.bag.definitions import message_definition
from ros_nodes.bag.encoder import CdrEncoder
from ros_nodes.bag.writer import BagWriter, OfferedQos
from ros_nodes.conversions import clip, joint_state_msg, scene_to_msg, subgoal_to_msg
from sim.tabletop import SceneState, Subgoal, SubgoalError, Task, ground

NAMESPACE = "/hgpo"
FRAME_ID = "world"
_LATCHED = OfferedQos(durability="transient_local", depth=1)
# topic (under NAMESPACE) -> (type, the QoS its node publishes it with)
TOPICS: dict[str, tuple[str, OfferedQos]] = {
    "instruction": ("std_msgs/msg/String", _LATCHED),
    "subgoal": ("hgpo_msgs/msg/Subgoal", OfferedQos()),
    "run_task/_action/feedback": ("hgpo_msgs/action/RunTask_FeedbackMessage", OfferedQos()),
    "run_task/_action/status": ("action_msgs/msg/GoalStatusArray", _LATCHED),
    "subgoal_status": ("hgpo_msgs/msg/SubgoalStatus", OfferedQos()),
    "execute_subgoal/_action/feedback": ("hgpo_msgs/action/ExecuteSubgoal_FeedbackMessage", OfferedQos()),
    "cmd_twist": ("geometry_msgs/msg/TwistStamped", OfferedQos()),
    "gripper_cmd": ("std_msgs/msg/Float64", OfferedQos()),
    "scene_state": ("hgpo_msgs/msg/SceneState", OfferedQos()),
    "joint_states": ("sensor_msgs/msg/JointState", OfferedQos()),
}


def _uuid() -> list[int]:
    return list(uuid.uuid4().bytes)


class EpisodeRecording:
    """One episode into one new MCAP file (an EpisodeWatch: run_episode calls it). `close()` (or leaving
    the `with` block, by an exception or Ctrl-C too) writes the footer; chunks are flushed after every
    subgoal, so a killed process leaves a file readable up to the last finished subgoal."""

    def __init__(self, path: Path) -> None:
        definitions = {topic: message_definition(type_name) for topic, (type_name, _) in TOPICS.items()}
        self._encoders = {topic: CdrEncoder(TOPICS[topic][0], text) for topic, text in definitions.items()}
        self.writer = BagWriter(path)  # once nothing can fail: no empty file for a missing definition
        for topic, (type_name, qos) in TOPICS.items():
            self.writer.add_topic(f"{NAMESPACE}/{topic}", type_name, definitions[topic], [qos])
        self._start_ns = time.time_ns()
        self._sim_time = 0.0
        self._timeout_s = 0.0
        self._state: SceneState | None = None
        self._task_goal = _uuid()
        self._subgoal_goal = _uuid()
        self._sent: int | None = None  # the id of the subgoal the controller runs, if one was sent

    def __enter__(self) -> EpisodeRecording:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    @property
    def path(self) -> Path:
        return self.writer.path

    def close(self) -> None:
        self.writer.close()

    def _now(self) -> int:
        return self._start_ns + round(self._sim_time * 1e9)

    def _stamp(self) -> Time:
        sec, nanosec = divmod(self._now(), 10**9)
        return Time(sec=sec, nanosec=nanosec)

    def _write(self, topic: str, message: Any) -> None:
        now = self._now()
        self.writer.write(f"{NAMESPACE}/{topic}", self._encoders[topic](message), now, now)

    def _task_status(self, status: int) -> None:
        info = GoalInfo(stamp=self._stamp())
        info.goal_id.uuid = self._task_goal
        self._write(
            "run_task/_action/status",
            GoalStatusArray(status_list=[GoalStatus(goal_info=info, status=status)]),
        )

    def _task_feedback(self, index: int, subgoal: Subgoal, status: str) -> None:
        message = RunTask.Impl.FeedbackMessage()
        message.goal_id.uuid = self._task_goal
        message.feedback = RunTask.Feedback(index=index, subgoal=str(subgoal), status=status)
        self._write("run_task/_action/feedback", message)

    # EpisodeWatch
    def started(self, task: Task, state: SceneState, subgoal_timeout_s: float) -> None:
        self._start_ns, self._sim_time = time.time_ns() - round(state.time * 1e9), state.time
        self._timeout_s = subgoal_timeout_s
        self._write("instruction", String(data=task.instruction))
        self._task_status(GoalStatus.STATUS_EXECUTING)
        self.stepped(state)

    def event(self, index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
        if record is None:
            self._planned(index, subgoal)
            return
        if self._sent is not None:
            self._write("cmd_twist", self._twist(np.zeros(3)))  # the controller stops the arm at the end
            state = SubgoalStatus.SUCCEEDED if record.success else SubgoalStatus.FAILED
            self._write("subgoal_status", SubgoalStatus(id=self._sent, state=state, message=record.message))
            self._sent = None
        self._task_feedback(index, subgoal, "succeeded" if record.success else "failed")
        self.writer.flush()

    def _planned(self, index: int, subgoal: Subgoal) -> None:
        self._task_feedback(index, subgoal, "planned")
        assert self._state is not None, "started() first"
        try:  # the planner node sends only what it can ground; the loop then reports the failure
            message = subgoal_to_msg(subgoal, index, ground(subgoal, self._state), self._timeout_s)
        except SubgoalError:
            return
        message.header.stamp = self._stamp()
        self._write("subgoal", message)
        self._sent, self._subgoal_goal = index, _uuid()
        self._write(
            "subgoal_status", SubgoalStatus(id=index, state=SubgoalStatus.ACTIVE, message=clip(str(subgoal)))
        )

    def _twist(self, velocity: np.ndarray) -> TwistStamped:
        message = TwistStamped()
        message.header.stamp, message.header.frame_id = self._stamp(), FRAME_ID
        message.twist.linear.x, message.twist.linear.y, message.twist.linear.z = (float(v) for v in velocity)
        return message

    def commanded(self, step: ControlStep, velocity: np.ndarray, gripper_width: float) -> None:
        self._write("cmd_twist", self._twist(velocity))
        self._write("gripper_cmd", Float64(data=float(gripper_width)))
        feedback = ExecuteSubgoal.Impl.FeedbackMessage()
        feedback.goal_id.uuid = self._subgoal_goal
        feedback.feedback = ExecuteSubgoal.Feedback(distance=float(step.distance), steps=step.steps)
        self._write("execute_subgoal/_action/feedback", feedback)

    def stepped(self, state: SceneState) -> None:
        self._state, self._sim_time = state, state.time
        stamp = self._stamp()
        self._write("scene_state", scene_to_msg(state, stamp, FRAME_ID))
        self._write("joint_states", joint_state_msg(state, stamp))

    def finished(self, result: EpisodeResult) -> None:
        self._task_status(GoalStatus.STATUS_SUCCEEDED if result.success else GoalStatus.STATUS_ABORTED)


@dataclass(frozen=True)
class EpisodeRecorder:
    """`folder/<task>-seed<seed>.mcap` per episode (EpisodeWatches for TabletopPlayers; picklable)."""

    folder: Path

    def path(self, task: str, seed: int) -> Path:
        return self.folder / f"{task}-seed{seed}.mcap"

    def __call__(self, task: Task) -> EpisodeRecording:
        return EpisodeRecording(self.path(task.name, task.seed))
