"""sim_bridge: the MuJoCo tabletop behind the interfaces a real arm bridge offers.

Steps physics at a fixed rate, publishes `SceneState` and `joint_states` every tick, takes end-effector
twist and gripper-width commands, holds the arm still when commands stop arriving or are invalid (twists
are judged by their stamps too, ros_nodes/stamps.py), and resets the scene to a seeded task on request.
"""

from __future__ import annotations

import time

import numpy as np
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.msg import SceneState as SceneStateMsg
from hgpo_msgs.srv import ResetScene
from rclpy.node import Node
from sensor_msgs.msg import JointState
from std_msgs.msg import Float64

from ros_nodes.conversions import joint_state_msg, scene_to_msg
from ros_nodes.node_main import Parameters, run_node
from ros_nodes.stamps import MAX_CLOCK_SKEW_S, RefusalLog, stamp_problem
from sim.tabletop import TASKS, TabletopWorld, WorldConfig, make_task
from sim.tabletop.model import MAX_GRIPPER_WIDTH


class SimBridge(Node):
    def __init__(self) -> None:
        super().__init__("sim_bridge")
        self._ticks, self._wall_start = 0, time.monotonic()  # first: destroy_node reports them
        p = Parameters(self)
        self.rate_hz = p.positive(
            "rate_hz", 100.0, "physics ticks per second; each advances the world by 1/rate_hz s"
        )
        self.command_timeout_s = p.positive(
            "command_timeout_s", 0.2, "hold the arm still when no twist came this long"
        )
        self.max_linear_speed = p.positive(
            "max_linear_speed", 0.25, "twists faster than this (m/s) are refused"
        )
        self.max_clock_skew_s = p.positive(
            "max_clock_skew_s", MAX_CLOCK_SKEW_S, "twists stamped further ahead of our clock are refused (s)"
        )
        self.frame_id = p("frame_id", "world", "frame of every published pose")
        self.refusals = RefusalLog(self.get_logger(), "command refused, holding still")
        task, seed = p("task", "stack", "task set up at start"), p.seed("seed", "scene seed at start")

        self.world = TabletopWorld(
            WorldConfig(control_dt=1.0 / self.rate_hz, max_speed=self.max_linear_speed)
        )
        self.task = make_task(task, seed=seed)
        self.state = self.world.reset(self.task)
        self._velocity = np.zeros(3)
        self._gripper_width = float(self.state.gripper_width)
        self._last_command = -np.inf
        self._holding = True

        self.scene_pub = self.create_publisher(SceneStateMsg, "scene_state", 10)
        self.joint_pub = self.create_publisher(JointState, "joint_states", 10)
        self.create_subscription(TwistStamped, "cmd_twist", self._on_twist, 10)
        self.create_subscription(Float64, "gripper_cmd", self._on_gripper, 10)
        self.create_service(ResetScene, "reset_scene", self._on_reset)
        self.create_timer(1.0 / self.rate_hz, self._tick)
        self.get_logger().info(
            f"task {task!r} seed {seed}: {self.task.instruction!r}; stepping at {self.rate_hz} Hz"
        )

    def _refuse(self, reason: str) -> None:
        self._velocity = np.zeros(3)
        self._last_command = time.monotonic()
        self.refusals.refused(reason)

    def _on_twist(self, msg: TwistStamped) -> None:
        linear = np.array([msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z])
        angular = np.array([msg.twist.angular.x, msg.twist.angular.y, msg.twist.angular.z])
        if not (np.all(np.isfinite(linear)) and np.all(np.isfinite(angular))):
            return self._refuse(f"non-finite twist {linear.tolist()} / {angular.tolist()}")
        speed = float(np.linalg.norm(linear))
        if speed > self.max_linear_speed * (1 + 1e-9):
            return self._refuse(f"speed {speed:.3f} m/s above the limit {self.max_linear_speed} m/s")
        now_ns = self.get_clock().now().nanoseconds
        problem = stamp_problem(msg.header.stamp, now_ns, self.command_timeout_s, self.max_clock_skew_s)
        if problem:
            return self._refuse(f"twist {problem}")
        # Orientation is held top-down by the simulated servo; angular velocity is not commanded.
        self._velocity = linear
        self._last_command = time.monotonic()
        self.refusals.accepted()

    def _on_gripper(self, msg: Float64) -> None:
        width, max_width = msg.data, MAX_GRIPPER_WIDTH
        if not (np.isfinite(width) and 0.0 <= width <= max_width):
            return self._refuse(f"gripper width {width} outside [0, {max_width}] m")
        self._gripper_width = float(width)

    def _on_reset(self, request: ResetScene.Request, response: ResetScene.Response) -> ResetScene.Response:
        name = request.task or self.get_parameter("task").value
        if name not in TASKS:
            response.success = False
            response.message = f"unknown task {name!r}; known: {', '.join(sorted(TASKS))}"
            return response
        self.task = make_task(name, seed=request.seed)
        self.state = self.world.reset(self.task)
        self._velocity, self._gripper_width, self._last_command = (
            np.zeros(3),
            self.state.gripper_width,
            -np.inf,
        )
        response.success, response.task, response.instruction = True, name, self.task.instruction
        response.scene = scene_to_msg(self.state, self.get_clock().now().to_msg(), self.frame_id)
        self.get_logger().info(f"reset: task {name!r} seed {request.seed}: {self.task.instruction!r}")
        return response

    def _tick(self) -> None:
        stale = time.monotonic() - self._last_command > self.command_timeout_s
        if stale and not self._holding and np.any(self._velocity):
            self.get_logger().info(f"no twist for {self.command_timeout_s} s: holding still")
        self._holding = stale
        velocity = np.zeros(3) if stale else self._velocity
        self.state = self.world.step(velocity, self._gripper_width)
        stamp = self.get_clock().now().to_msg()
        self.scene_pub.publish(scene_to_msg(self.state, stamp, self.frame_id))
        self.joint_pub.publish(joint_state_msg(self.state, stamp))
        self._ticks += 1

    def rate_report(self) -> str:
        wall = time.monotonic() - self._wall_start
        sim = self._ticks / self.rate_hz
        wall = max(wall, 1e-9)
        rate, rtf = self._ticks / wall, sim / wall
        return f"{self._ticks} ticks in {wall:.1f} s: {rate:.1f} Hz, real-time factor {rtf:.2f}"

    def destroy_node(self) -> None:
        # After Ctrl-C the context is already shut down and rosout is gone: print the last word instead.
        if self._ticks:
            print(f"sim_bridge: {self.rate_report()}; {self.refusals.count} commands refused", flush=True)
        super().destroy_node()


def main() -> int:
    return run_node(SimBridge)
