"""arm_bridge: the stack on a ROS 2 arm, in place of sim_bridge.

Takes the controller's `cmd_twist` and `gripper_cmd` as sim_bridge does, passes them through the safety
layer (ros_nodes/arm/safety.py) and sends them the way the arm takes them: twists to MoveIt Servo, or
joint velocities / positions to a ros2_control forward controller (`command_interface`). Reads
`/joint_states`, computes the end-effector pose on the arm's model, merges the objects of the perception
topic (`hgpo_msgs/ObjectStateArray`) and publishes `scene_state`. Owns the emergency stop: `estop`
(std_msgs/Bool, transient local) latches it, `reset_estop` (std_srvs/Trigger) clears it, `estop_state`
tells the planner and controller.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.msg import ObjectStateArray
from hgpo_msgs.msg import SceneState as SceneStateMsg
from hgpo_msgs.srv import ResetScene
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.client import Client
from rclpy.node import Node
from rclpy.task import Future
from rclpy.time import Time
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64, Float64MultiArray
from std_srvs.srv import Trigger

from ros_nodes.arm.interfaces import command_interface, joint_command
from ros_nodes.arm.kinematics import ArmKinematics, JointIndex, JointStateMismatchError
from ros_nodes.arm.safety import CommandGate, Halt, SafetyLimits, Twist
from ros_nodes.arm_parameters import arm_description, declare, max_joint_velocity
from ros_nodes.conversions import pose_msg
from ros_nodes.estop import ESTOP_STATE_TOPIC, ESTOP_TOPIC, RESET_ESTOP_SERVICE, latched_qos
from ros_nodes.node_main import Parameters, run_node
from ros_nodes.stamps import MAX_CLOCK_SKEW_S, RefusalLog, stamp_problem
from sim.tabletop import TASKS, make_task

WORLD_RESET_RESEND_S = 1.0  # the fake arm answers a world reset within milliseconds


@dataclass(frozen=True)
class ArmReading:
    q: np.ndarray
    fingers: np.ndarray | None
    received: float  # monotonic
    stamp_ns: int  # the joint state's header stamp


@dataclass(frozen=True)
class Since:
    """When a reset began: a reading counts as after it when it was received later and, when the world
    itself was reset (fake hardware), is stamped no earlier than the world's answer. A reading received
    later may still have been sent before the world reset (the old layout, the arm before going home)."""

    received: float  # monotonic
    stamp_ns: int = 0

    def covers(self, received: float, stamp_ns: int) -> bool:
        return received > self.received and stamp_ns >= self.stamp_ns


class ArmBridge(Node):
    def __init__(self) -> None:
        super().__init__("arm_bridge")
        p = Parameters(self)
        self.rate_hz = p.positive("rate_hz", 100.0, "command stream and scene_state rate (Hz)")
        self.interface = command_interface(
            p("command_interface", "forward_velocity", "servo, forward_velocity or forward_position")
        )
        command_topic = p("command_topic", "", "where commands go; empty: the interface's usual topic")
        self.command_frame = p("command_frame", "world", "frame_id of the twists sent to Servo")
        self.frame_id = p("frame_id", "world", "frame of the model's base: scene_state and perception poses")
        joint_states_topic = p("joint_states_topic", "/joint_states", "sensor_msgs/JointState of the arm")
        self.joint_state_timeout_s = p.positive(
            "joint_state_timeout_s", 0.5, "hold still and stop publishing scenes when joint states stop"
        )
        gripper_topic = p("gripper_topic", "/gripper/width_cmd", "std_msgs/Float64 gripper width target (m)")
        perception_topic = p("perception_topic", "/perception/objects", "hgpo_msgs/ObjectStateArray")
        self.perception_timeout_s = p.positive(
            "perception_timeout_s", 1.0, "warn when perception has been silent this long (s)"
        )
        self.task = p("task", "reach", "task a reset_scene without a task name sets up")
        self._joint_states_topic = self.resolve_topic_name(joint_states_topic)
        self._perception_topic = self.resolve_topic_name(perception_topic)
        self.world_reset_service = p(
            "world_reset_service", "", "ResetScene service that resets the world (fake hardware); empty: none"
        )
        self.reset_timeout_s = p.positive("reset_timeout_s", 5.0, "wait this long for the world's reset (s)")
        d = SafetyLimits()
        self.limits = SafetyLimits(
            workspace_low=declare(
                self, "workspace_low", list(d.workspace_low), "end-effector box, low corner (m)"
            ),
            workspace_high=declare(self, "workspace_high", list(d.workspace_high), "box, high corner (m)"),
            max_linear_speed=p.positive(
                "max_linear_speed", d.max_linear_speed, "end-effector speed limit (m/s)"
            ),
            max_angular_speed=p.positive("max_angular_speed", d.max_angular_speed, "angular limit (rad/s)"),
            command_timeout_s=p.positive(
                "command_timeout_s", d.command_timeout_s, "stop when the last twist is older than this (s)"
            ),
            workspace_lookahead_s=p.positive(
                "workspace_lookahead_s",
                d.workspace_lookahead_s,
                "slow near the box's faces (s to reach them)",
            ),
            max_gripper_width=p.positive("max_gripper_width", d.max_gripper_width, "widest opening (m)"),
        )
        description = arm_description(self)
        self.kinematics = ArmKinematics(description)
        self.max_joint_velocity = max_joint_velocity(self, len(description.arm_joints))
        self.max_clock_skew_s = p.positive(
            "max_clock_skew_s", MAX_CLOCK_SKEW_S, "twists stamped further ahead of our clock are refused (s)"
        )
        self.twist_refusals = RefusalLog(self.get_logger(), "twist refused, holding still")
        self.gate = CommandGate(self.limits)
        self.joints = JointIndex(description.arm_joints, description.gripper_joints)

        self._arm: ArmReading | None = None
        self._joint_error: str | None = None
        self._objects: tuple[ObjectStateArray, float] | None = None
        self._width: float | None = None  # last gripper width sent
        self._halt: Halt | None = Halt.NO_COMMAND
        self._sent_linear = np.zeros(3)  # the end-effector velocity last commanded

        # One thread spins every callback (run_node's single-threaded executor): rclpy's MultiThreadedExecutor
        # busy-waits on entities whose group is running and burned a whole core here, so that twists queued up
        # and reached the arm 0.4 s late (refused as stale) on a loaded machine (run_node's HandOffExecutor
        # does not, but one thread is enough here). The reset, which waits on the world and on fresh readings,
        # is a coroutine instead, so the readings keep coming meanwhile.
        if self.interface.message == "TwistStamped":
            self.command_pub = self.create_publisher(
                TwistStamped, command_topic or self.interface.default_topic, 10
            )
        else:
            self.command_pub = self.create_publisher(
                Float64MultiArray, command_topic or self.interface.default_topic, 10
            )
        self.gripper_pub = self.create_publisher(Float64, gripper_topic, 10)
        self.scene_pub = self.create_publisher(SceneStateMsg, "scene_state", 10)
        self.estop_state_pub = self.create_publisher(Bool, ESTOP_STATE_TOPIC, latched_qos())
        # Depth 1 for commands and the arm's state: only the latest counts (ros2_control's realtime buffer);
        # older ones read late would be lag, each refused as stale.
        self.create_subscription(TwistStamped, "cmd_twist", self._on_twist, 1)
        self.create_subscription(Float64, "gripper_cmd", self._on_gripper, 10)
        self.create_subscription(JointState, joint_states_topic, self._on_joints, 1)
        self.create_subscription(ObjectStateArray, perception_topic, self._on_objects, 10)
        self.create_subscription(Bool, ESTOP_TOPIC, self._on_estop, latched_qos())
        self.create_service(Trigger, RESET_ESTOP_SERVICE, self._on_reset_estop)
        # Its own group: the default one is held while a coroutine callback is suspended, and the reset
        # awaits the other callbacks (readings, the world's answer, its poll timer).
        self.create_service(
            ResetScene, "reset_scene", self._on_reset, callback_group=MutuallyExclusiveCallbackGroup()
        )
        self.world_reset: Client[ResetScene.Request, ResetScene.Response] | None = (
            self.create_client(ResetScene, self.world_reset_service) if self.world_reset_service else None
        )
        self.create_timer(1.0 / self.rate_hz, self._tick)
        self.estop_state_pub.publish(Bool(data=False))
        self.get_logger().info(
            f"{self.interface.name} ({self.interface.description}) on "
            f"{self.resolve_topic_name(command_topic or self.interface.default_topic)} at {self.rate_hz} Hz; "
            f"joints {', '.join(description.arm_joints)} from {self.resolve_topic_name(joint_states_topic)}"
        )

    # --- inputs -------------------------------------------------------------------------------------------
    def _on_twist(self, msg: TwistStamped) -> None:
        now = time.monotonic()
        t = msg.twist
        now_ns = self.get_clock().now().nanoseconds
        reason = self.gate.offer(
            np.array([t.linear.x, t.linear.y, t.linear.z]),
            np.array([t.angular.x, t.angular.y, t.angular.z]),
            now,
            stamp_problem(msg.header.stamp, now_ns, self.limits.command_timeout_s, self.max_clock_skew_s),
        )
        if reason is None:
            self.twist_refusals.accepted()
        else:
            self.twist_refusals.refused(reason)
        self._command(now)  # at once, not at the next tick: the command's latency is the bridge's to keep low

    def _on_gripper(self, msg: Float64) -> None:
        self._send_gripper(msg.data)

    def _send_gripper(self, width: float) -> None:
        if self.gate.estop_latched:
            self.get_logger().warning(
                "gripper command refused: emergency stop latched", throttle_duration_sec=1.0
            )
            return
        reason = self.gate.check_gripper(width)
        if reason is not None:
            self.get_logger().warning(f"gripper command refused: {reason}", throttle_duration_sec=1.0)
            return
        self._width = float(width)
        self.gripper_pub.publish(Float64(data=self._width))

    def _on_joints(self, msg: JointState) -> None:
        try:
            q, _qdot, fingers = self.joints.read(msg.name, msg.position, msg.velocity)
            if not np.all(np.isfinite(q)):
                raise JointStateMismatchError(f"non-finite joint positions {q.tolist()}")
        except JointStateMismatchError as err:
            if self._joint_error is None:
                self.get_logger().error(f"joint state refused, holding still: {err}")
            self._joint_error = str(err)
            return
        self._joint_error = None
        self._arm = ArmReading(q, fingers, time.monotonic(), Time.from_msg(msg.header.stamp).nanoseconds)

    def _on_objects(self, msg: ObjectStateArray) -> None:
        if msg.header.frame_id not in ("", self.frame_id):
            self.get_logger().error(
                f"perception in frame {msg.header.frame_id!r} ignored: the bridge works in {self.frame_id!r} "
                "(no TF here); publish the objects in that frame",
                throttle_duration_sec=5.0,
            )
            return
        self._objects = (msg, time.monotonic())

    def _on_estop(self, msg: Bool) -> None:
        self._estop(bool(msg.data))

    def _estop(self, pressed: bool) -> None:
        if self.gate.estop(pressed):
            self.get_logger().error("EMERGENCY STOP latched: holding the arm still until reset_estop")
            self.estop_state_pub.publish(Bool(data=True))
            self._command(time.monotonic())
        elif not pressed and self.gate.estop_latched:
            reset = self.resolve_service_name(RESET_ESTOP_SERVICE)
            self.get_logger().warning(f"emergency stop released; still latched until {reset} is called")

    def _on_reset_estop(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        response.success, response.message = self.gate.reset_estop()
        self.estop_state_pub.publish(Bool(data=self.gate.estop_latched))
        self.get_logger().warning(f"reset_estop: {response.message}")
        return response

    # --- outputs ------------------------------------------------------------------------------------------
    def _fresh_arm(self, now: float) -> ArmReading | None:
        arm = self._arm
        return arm if arm is not None and now - arm.received <= self.joint_state_timeout_s else None

    def _tick(self) -> None:
        now = time.monotonic()
        self._command(now)
        if self._fresh_arm(now) is not None:
            self.scene_pub.publish(self._scene(now))

    def _command(self, now: float) -> None:
        """Send what the arm should do now: the latest twist through the limits, or a stop."""
        arm = self._fresh_arm(now)
        halt = self.gate.halt(now) if arm is not None else Halt.NO_COMMAND
        self._report(halt, arm is not None)
        self._command_arm(now, arm, halt)

    def _command_arm(self, now: float, arm: ArmReading | None, halt: Halt | None) -> None:
        if arm is not None:
            self.kinematics.set_positions(arm.q, arm.fingers)
        if halt is not None:
            self.kinematics.hold_here()
            self._sent_linear = np.zeros(3)
            if self.interface.message == "TwistStamped":
                self._send_twist(Twist.zero())
            elif self.interface.name == "forward_velocity":
                self._send_joints(np.zeros(len(self.kinematics.joint_names)))
            elif arm is not None:  # a position interface holds where the arm is
                self._send_joints(arm.q)
            return
        assert arm is not None
        ee_position, _ = self.kinematics.ee_pose()
        # Where the end effector is now, not when the joint state was taken: it kept the last velocity since.
        age_s = max(0.0, (self.get_clock().now().nanoseconds - arm.stamp_ns) * 1e-9) if arm.stamp_ns else 0.0
        twist = self.gate.twist(now, ee_position + self._sent_linear * min(age_s, self.joint_state_timeout_s))
        self._sent_linear = twist.linear
        if self.interface.message == "TwistStamped":
            self._send_twist(twist)
        else:
            self._send_joints(
                joint_command(
                    self.interface, self.kinematics, twist, arm.q, 1.0 / self.rate_hz, self.max_joint_velocity
                )
            )

    def _report(self, halt: Halt | None, have_arm: bool) -> None:
        if not have_arm and self._arm is not None:
            self.get_logger().warning(
                f"no joint state for {self.joint_state_timeout_s} s: holding still",
                throttle_duration_sec=5.0,
            )
        if halt is self._halt:
            return
        if halt is None:
            self.get_logger().info("moving")
        elif halt in (Halt.STALE, Halt.REFUSED):
            self.get_logger().info(f"holding still: {halt.value}")
        self._halt = halt

    def _send_twist(self, twist: Twist) -> None:
        msg = TwistStamped()
        msg.header.stamp, msg.header.frame_id = self.get_clock().now().to_msg(), self.command_frame
        msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(v) for v in twist.linear)
        msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z = (float(v) for v in twist.angular)
        self.command_pub.publish(msg)

    def _send_joints(self, values: np.ndarray) -> None:
        self.command_pub.publish(Float64MultiArray(data=[float(v) for v in values]))

    def _scene(self, now: float) -> SceneStateMsg:
        """The scene from the arm's latest joint state and the latest objects."""
        arm = self._arm
        assert arm is not None
        msg = SceneStateMsg()
        msg.header.stamp, msg.header.frame_id = self.get_clock().now().to_msg(), self.frame_id
        self.kinematics.set_positions(arm.q, arm.fingers)
        position, quaternion = self.kinematics.ee_pose()
        msg.ee_pose = pose_msg(position, quaternion)
        if arm.fingers is not None:
            msg.gripper_width = float(np.sum(arm.fingers))
        elif self._width is not None:  # no finger joints in /joint_states: the last width sent
            msg.gripper_width = self._width
        if self._objects is not None:
            objects, received = self._objects
            if now - received > self.perception_timeout_s:
                self.get_logger().warning(
                    f"perception silent for {now - received:.1f} s: objects as last seen",
                    throttle_duration_sec=5.0,
                )
            msg.objects = list(objects.objects)
        return msg

    # --- reset ----------------------------------------------------------------------------------------------
    def _awaited(self, since: Since, needed: frozenset[str]) -> str:
        """What the reset still waits for: '' once a joint state and objects that include those the task
        names (every task names some) came after `since`."""
        arm = self._arm
        if arm is None or not since.covers(arm.received, arm.stamp_ns):
            return (
                f"no joint state on {self._joint_states_topic}: is the arm's driver up? "
                "(no arm: use_fake_hardware:=true)"
            )
        if self._objects is None or not since.covers(
            self._objects[1], Time.from_msg(self._objects[0].header.stamp).nanoseconds
        ):
            return f"no objects on {self._perception_topic}: is perception running?"
        missing = needed - {obj.name for obj in self._objects[0].objects}
        if missing:
            return f"perception on {self._perception_topic} does not report {', '.join(sorted(missing))}"
        return ""

    async def _until(self, done: Callable[[], bool], timeout_s: float) -> bool:
        """Whether `done()` held within `timeout_s`, polled on a timer: the one executor thread keeps
        spinning the other callbacks meanwhile."""
        deadline = time.monotonic() + timeout_s
        finished: Future[bool] = Future()

        def poll() -> None:
            if not finished.done() and (done() or time.monotonic() >= deadline):
                finished.set_result(done())

        timer = self.create_timer(0.02, poll)
        try:
            return bool(await finished)
        finally:
            self.destroy_timer(timer)

    async def _world_reset_answer(self, request: ResetScene.Request) -> ResetScene.Response | None:
        """The fake arm's answer to a world reset; None after reset_timeout_s. A bridge just restarted may
        not yet be matched by the fake arm, which then drops its answer: the request (a reset to a seed, a
        repeat does no harm) is resent every WORLD_RESET_RESEND_S, and the first answer to any copy wins.
        Regression: the answer was awaited once, and the first reset after a restart failed after 5 s."""
        assert self.world_reset is not None
        client, calls = self.world_reset, []
        deadline = time.monotonic() + self.reset_timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            calls.append(client.call_async(request))
            if await self._until(lambda: any(c.done() for c in calls), min(remaining, WORLD_RESET_RESEND_S)):
                break
        answers = [c.result() for c in calls if c.done()]
        for call in calls:
            if not call.done():
                client.remove_pending_request(call)
        return next((a for a in answers if a is not None), None)

    async def _on_reset(
        self, request: ResetScene.Request, response: ResetScene.Response
    ) -> ResetScene.Response:
        name = request.task or self.task
        response.task = name
        if name not in TASKS:
            response.message = f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}"
            return response
        if self.gate.estop_latched:
            reset = self.resolve_service_name(RESET_ESTOP_SERVICE)
            response.message = f"emergency stop latched: release it and call {reset} before a reset"
            return response
        since = Since(time.monotonic())
        if self.world_reset is not None:
            service = self.world_reset.srv_name
            if not await self._until(self.world_reset.service_is_ready, self.reset_timeout_s):
                response.message = (
                    f"world reset failed: service {service} not available: is the fake arm running?"
                )
                return response
            world = await self._world_reset_answer(request)
            if world is None:
                response.message = (
                    f"world reset failed: service {service}: no answer within {self.reset_timeout_s:.1f} s: "
                    "is the fake arm running?"
                )
                return response
            if not world.success:
                response.message = f"world reset refused: {world.message}"
                return response
            response.message = "world reset"
            since = Since(since.received, Time.from_msg(world.scene.header.stamp).nanoseconds)
        else:
            response.message = (
                "the real world is not reset: the task refers to the objects perception reports"
            )
        task = make_task(name, seed=request.seed)
        needed = frozenset(arg for atom in task.goal for arg in atom.args)
        if not await self._until(lambda: not self._awaited(since, needed), self.reset_timeout_s):
            waited = f"waited {self.reset_timeout_s} s"
            response.message = f"reset of task {name!r}: {self._awaited(since, needed)} ({waited})"
            return response
        response.success = True
        response.instruction = task.instruction
        response.scene = self._scene(time.monotonic())
        self.get_logger().info(f"reset: task {name!r} seed {request.seed}: {response.message}")
        return response


def main() -> int:
    return run_node(ArmBridge)
