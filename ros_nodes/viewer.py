"""viewer: a live view of the tabletop graph (`view:=true`) over Foxglove's WebSocket protocol.

Connect the Foxglove app to ws://HOST:PORT (docs/recording.md). Topics it serves: `/view/scene` (the arm's
links from the MuJoCo model at the joint state, blocks, plates, the gripper and the current subgoal's target
as 3D entities, at `scene_rate_hz`), `/view/status`
(instruction, subgoal, its status), `/view/decisions` (the planner's decisions as log lines),
`/view/controller_rate` (the controller's command rate and jitter once a second, for a plot). Thin: the
entities come from `ros_nodes.view`.
"""

from __future__ import annotations

import itertools
import statistics
import sys
import time

import foxglove
from foxglove.channels import LogChannel, SceneUpdateChannel
from foxglove.messages import Log, LogLevel, Timestamp
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.action import RunTask
from hgpo_msgs.msg import SceneState, Subgoal, SubgoalStatus
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile
from sensor_msgs.msg import JointState
from std_msgs.msg import String

from ros_nodes.node_main import Parameters, run_node
from ros_nodes.view.arm import ArmGeometry
from ros_nodes.view.scene import Body, scene_update, timestamp

_STATES = {
    SubgoalStatus.ACTIVE: "active",
    SubgoalStatus.SUCCEEDED: "succeeded",
    SubgoalStatus.FAILED: "failed",
}
_STATUS_SCHEMA = {
    "type": "object",
    "properties": {
        "instruction": {"type": "string"},
        "subgoal": {"type": "string"},
        "status": {"type": "string"},
    },
}
_RATE_SCHEMA = {
    "type": "object",
    "properties": {"rate_hz": {"type": "number"}, "jitter_ms": {"type": "number"}},
}


class Viewer(Node):
    def __init__(self) -> None:
        super().__init__("viewer")
        p = Parameters(self)
        host = p("host", "127.0.0.1", "address the WebSocket server listens on (0.0.0.0: every interface)")
        port = p("port", 8765, "WebSocket port the Foxglove app connects to")
        scene_rate = p.positive("scene_rate_hz", 20.0, "3D scene updates per second")
        self.server = foxglove.start_server(name="hgpo", host=host, port=port)
        self.scene_channel = SceneUpdateChannel("/view/scene")
        self.log_channel = LogChannel("/view/decisions")
        self.status_channel = foxglove.Channel("/view/status", schema=_STATUS_SCHEMA)
        self.rate_channel = foxglove.Channel("/view/controller_rate", schema=_RATE_SCHEMA)
        self.status = {"instruction": "", "subgoal": "", "status": ""}
        self._scene: SceneState | None = None
        self._target: tuple[float, float, float] | None = None
        self._twists: list[float] = []
        self.arm = ArmGeometry()
        self._joints: dict[str, float] = {}
        latched = QoSProfile(depth=1, durability=DurabilityPolicy.TRANSIENT_LOCAL)
        self.create_subscription(SceneState, "scene_state", self._on_scene, 10)
        self.create_subscription(JointState, "joint_states", self._on_joints, 10)
        self.create_subscription(Subgoal, "subgoal", self._on_subgoal, 10)
        self.create_subscription(SubgoalStatus, "subgoal_status", self._on_status, 10)
        self.create_subscription(String, "instruction", self._on_instruction, latched)
        self.create_subscription(
            TwistStamped, "cmd_twist", lambda _msg: self._twists.append(time.monotonic()), 10
        )
        self.create_subscription(
            RunTask.Impl.FeedbackMessage, "run_task/_action/feedback", self._on_decision, 10
        )
        self.create_timer(1.0 / scene_rate, self._send_scene)
        self.create_timer(1.0, self._send_rate)
        self.get_logger().info(
            f"Foxglove view on ws://{host}:{self.server.port} (open it in the Foxglove app)"
        )

    def _on_scene(self, msg: SceneState) -> None:
        self._scene = msg

    def _on_joints(self, msg: JointState) -> None:
        self._joints = dict(zip(msg.name, msg.position, strict=False))

    def _on_instruction(self, msg: String) -> None:
        self._set_status(instruction=msg.data, subgoal="", status="")

    def _on_subgoal(self, msg: Subgoal) -> None:
        self._target = (msg.goal[0], msg.goal[1], msg.goal[2]) if len(msg.goal) >= 3 else None
        self._set_status(subgoal=msg.text, status="planned")

    def _on_status(self, msg: SubgoalStatus) -> None:
        self._set_status(status=_STATES.get(msg.state, "aborted"))

    def _on_decision(self, msg: RunTask.Impl.FeedbackMessage) -> None:
        fb = msg.feedback
        level = LogLevel.Warning if fb.status == "failed" else LogLevel.Info
        self.log_channel.log(
            Log(
                timestamp=Timestamp.from_epoch_secs(time.time()),
                level=level,
                name="planner",
                message=f"{fb.index + 1}. {fb.subgoal}: {fb.status}",
            )
        )

    def _set_status(self, **changes: str) -> None:
        self.status.update(changes)
        self.status_channel.log(dict(self.status))

    def _send_scene(self) -> None:
        msg = self._scene
        if msg is None:
            return
        bodies = [
            Body(
                o.name,
                o.category,
                (o.pose.position.x, o.pose.position.y, o.pose.position.z),
                (o.pose.orientation.x, o.pose.orientation.y, o.pose.orientation.z, o.pose.orientation.w),
                (o.size[0], o.size[1], o.size[2]),
            )
            for o in msg.objects
        ]
        ee = msg.ee_pose.position
        stamp = timestamp(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)
        arm = self.arm.entity(self._joints, stamp)
        target, label = self._target, self.status["subgoal"]
        update = scene_update(stamp, bodies, (ee.x, ee.y, ee.z), msg.gripper_width, target, label, [arm])
        self.scene_channel.log(update)

    def _send_rate(self) -> None:
        """The controller's commands of the last second: their rate and the spread of their intervals."""
        now = time.monotonic()
        recent = [t for t in self._twists if t > now - 1.0]
        self._twists = recent
        intervals = [b - a for a, b in itertools.pairwise(recent)]
        jitter = statistics.pstdev(intervals) * 1000 if len(intervals) > 1 else 0.0
        self.rate_channel.log({"rate_hz": float(len(recent)), "jitter_ms": jitter})

    def destroy_node(self) -> None:
        self.server.stop()
        super().destroy_node()


def main() -> int:
    return run_node(Viewer)


if __name__ == "__main__":
    sys.exit(main())
