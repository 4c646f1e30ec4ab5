"""fake_arm: mock hardware for `real.launch.xml use_fake_hardware:=true`, where no arm is connected.

Behaves like ros2_control's mock components behind the interface arm_bridge talks to (a forward velocity
or position controller, or MoveIt Servo, emulated with the same differential-IK servo the simulator
uses): integrates the latest command at `rate_hz` within joint limits, drops commands older than
`command_timeout_s`, publishes `/joint_states` (arm and finger joints) and, as a stand-in for perception,
the tabletop task's objects on the perception topic. It is kinematic: the arm moves, objects never do,
so tasks that need grasping cannot succeed on it (reach does).
"""

from __future__ import annotations

import time

import numpy as np
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.msg import ObjectStateArray
from hgpo_msgs.srv import ResetScene
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64, Float64MultiArray

from ros_nodes.arm.fake_hardware import FakeArm, FakeArmLimits
from ros_nodes.arm.interfaces import command_interface
from ros_nodes.arm.kinematics import ArmKinematics
from ros_nodes.arm.safety import clip_joint_velocity
from ros_nodes.arm_parameters import arm_description, max_joint_velocity
from ros_nodes.conversions import pose_msg, scene_to_msg
from ros_nodes.node_main import Parameters, run_node
from sim.tabletop import TASKS, TabletopWorld, make_task
from sim.tabletop.model import MAX_GRIPPER_WIDTH


class FakeArmNode(Node):
    def __init__(self) -> None:
        super().__init__("fake_arm")
        p = Parameters(self)
        self.rate_hz = p.positive("rate_hz", 100.0, "hardware loop rate: integration and /joint_states (Hz)")
        self.interface = command_interface(
            p("command_interface", "forward_velocity", "servo, forward_velocity or forward_position")
        )
        command_topic = p("command_topic", "", "commands in; empty: the interface's usual topic")
        joint_states_topic = p("joint_states_topic", "/joint_states", "where joint states go")
        gripper_topic = p("gripper_topic", "/gripper/width_cmd", "std_msgs/Float64 gripper width target (m)")
        perception_topic = p("perception_topic", "/perception/objects", "simulated perception output")
        perception_rate_hz = p.positive("perception_rate_hz", 30.0, "object poses per second")
        self.frame_id = p("frame_id", "world", "frame of the object poses")
        self.task = p("task", "reach", "tabletop task whose objects are reported at start")
        seed = p.seed("seed", "its layout seed")
        description = arm_description(self)
        self.kinematics = ArmKinematics(description)
        self.home = np.array(description.home)
        self.arm = FakeArm(
            FakeArmLimits(
                position=self.kinematics.limits,
                velocity=max_joint_velocity(self, len(description.arm_joints)),
                command_timeout_s=p.positive("command_timeout_s", 0.1, "drop commands older than this (s)"),
                gripper_speed=p.positive("gripper_speed", 0.1, "finger opening speed (m/s)"),
            ),
            self.home,
            MAX_GRIPPER_WIDTH,
        )
        self.joint_names = [*description.arm_joints, *description.gripper_joints]
        self._fingers = len(description.gripper_joints)
        self._world = TabletopWorld()  # lays out the task's objects; never stepped
        self._objects = self._layout(self.task, seed)
        self._twist: tuple[np.ndarray, float] | None = None
        self._last_tick = time.monotonic()

        self.joint_pub = self.create_publisher(JointState, joint_states_topic, 10)
        self.objects_pub = self.create_publisher(ObjectStateArray, perception_topic, 10)
        topic = command_topic or self.interface.default_topic
        # Depth 1: only the latest command counts (ros2_control's forward controllers keep one in a realtime
        # buffer); a queue of old ones, read late by a loaded loop, would each look fresh and keep it moving.
        if self.interface.message == "TwistStamped":
            self.create_subscription(TwistStamped, topic, self._on_twist, 1)
        else:
            self.create_subscription(Float64MultiArray, topic, self._on_joint_command, 1)
        self.create_subscription(Float64, gripper_topic, self._on_gripper, 1)
        self.create_service(ResetScene, "~/reset_world", self._on_reset)
        self.create_timer(1.0 / self.rate_hz, self._tick)
        self.create_timer(1.0 / perception_rate_hz, self._publish_objects)
        self.get_logger().info(
            f"fake hardware: {self.interface.name} on {self.resolve_topic_name(topic)}, {self.rate_hz} Hz; "
            f"task {self.task!r} seed {seed} on {self.resolve_topic_name(perception_topic)}"
        )

    def _layout(self, task: str, seed: int) -> ObjectStateArray:
        state = self._world.reset(make_task(task, seed=seed))
        scene = scene_to_msg(state, self.get_clock().now().to_msg(), self.frame_id)
        return ObjectStateArray(header=scene.header, objects=scene.objects)

    def _on_joint_command(self, msg: Float64MultiArray) -> None:
        kind = "velocity" if self.interface.name == "forward_velocity" else "position"
        reason = self.arm.command(kind, np.array(msg.data), time.monotonic())
        if reason is not None:
            self.get_logger().warning(f"command dropped: {reason}", throttle_duration_sec=1.0)

    def _on_twist(self, msg: TwistStamped) -> None:
        linear = np.array([msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z])
        self._twist = (linear, time.monotonic())

    def _servo(self) -> None:
        """MoveIt Servo's part: a fresh non-zero twist becomes joint velocities; zero halts."""
        if self._twist is None:
            return
        linear, received = self._twist
        self.kinematics.set_positions(self.arm.q)
        if not np.all(np.isfinite(linear)) or not np.any(linear):
            self.kinematics.hold_here()
            self.arm.command("velocity", np.zeros_like(self.arm.q), received)
            return
        qdot = clip_joint_velocity(self.kinematics.joint_velocity(linear), self.arm.limits.velocity)
        self.arm.command("velocity", qdot, received)

    def _on_gripper(self, msg: Float64) -> None:
        reason = self.arm.command_gripper(msg.data)
        if reason is not None:
            self.get_logger().warning(f"gripper command dropped: {reason}", throttle_duration_sec=1.0)

    def _tick(self) -> None:
        now = time.monotonic()
        # The time that really passed, as a physical arm keeps moving when its loop runs late; bounded by the
        # command timeout, beyond which a command would have been dropped anyway.
        dt = min(max(now - self._last_tick, 1e-4), self.arm.limits.command_timeout_s)
        self._last_tick = now
        if self.interface.message == "TwistStamped":
            self._servo()
        self.arm.step(dt, now)
        msg = JointState(name=self.joint_names)
        msg.header.stamp = self.get_clock().now().to_msg()
        half = self.arm.gripper_width / 2
        msg.position = [*(float(v) for v in self.arm.q), *([half] * self._fingers)]
        msg.velocity = [
            *(float(v) for v in self.arm.qdot),
            *([self.arm.gripper_velocity / 2] * self._fingers),
        ]
        self.joint_pub.publish(msg)

    def _publish_objects(self) -> None:
        self._objects.header.stamp = self.get_clock().now().to_msg()
        self.objects_pub.publish(self._objects)

    def _on_reset(self, request: ResetScene.Request, response: ResetScene.Response) -> ResetScene.Response:
        name = request.task or self.task
        if name not in TASKS:
            response.message = f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}"
            return response
        self._objects = self._layout(name, request.seed)
        self.arm.reset(self.home, MAX_GRIPPER_WIDTH)
        self._twist = None
        self.kinematics.set_positions(self.home)
        self.kinematics.hold_here()
        response.success, response.task = True, name
        response.instruction = make_task(name, seed=request.seed).instruction
        response.scene.header = self._objects.header
        response.scene.ee_pose = pose_msg(*self.kinematics.ee_pose())
        response.scene.gripper_width = MAX_GRIPPER_WIDTH
        response.scene.objects = self._objects.objects
        self.get_logger().info(f"reset: task {name!r} seed {request.seed}: arm at home, objects laid out")
        return response


def main() -> int:
    return run_node(FakeArmNode)
