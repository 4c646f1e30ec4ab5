"""The real-arm graph over DDS with fake hardware: the launch end to end, and each safety behaviour of
arm_bridge at node level (fake_arm stands in for the arm, as mock hardware behind ros2_control would)."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.action import ExecuteSubgoal, RunTask
from hgpo_msgs.msg import ObjectStateArray, SceneState
from hgpo_msgs.srv import ResetScene
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.task import Future
from sensor_msgs.msg import JointState
from std_msgs.msg import Bool, Float64MultiArray
from std_srvs.srv import Trigger

from ros_nodes.arm.kinematics import ArmDescription, ArmKinematics
from ros_nodes.estop import latched_qos
from ros_nodes.launcher.parse import parse_launch_file
from ros_nodes.launcher.spec import ParamValue
from ros_nodes.waiting import wait_for
from sim.tabletop import make_task
from sim.tabletop.model import HOME_QPOS
from tests.processes import Captured
from tests.ros.conftest import REPO
from tests.ros.helpers import DISCOVERY_S, ActionCall, wait_until
from tests.ros.test_graph import subgoal

TASK_TIMEOUT_S = 180.0
NS = "arm_safety"
BOX_MARGIN = 0.03  # the workspace box's top this far above the home pose


@pytest.mark.parametrize("interface", ["forward_velocity", "forward_position", "servo"])
def test_real_launch_with_fake_hardware_runs_reach(launch, interface: str) -> None:
    launched = launch("real", "use_fake_hardware:=true", f"command_interface:={interface}", "seed:=2")
    assert launched.wait(timeout=TASK_TIMEOUT_S) == 0, launched.output
    assert "SUCCESS" in launched.output and f"fake hardware: {interface}" in launched.output


@pytest.mark.parametrize(("fake", "reset_service"), [("true", "/fake_arm/reset_world"), ("false", "")])
def test_use_fake_hardware_starts_the_fake_arm(monkeypatch, fake: str, reset_service: str) -> None:
    monkeypatch.setenv("AMENT_PREFIX_PATH", sys.prefix)
    nodes = parse_launch_file(REPO / "launch" / "real.launch.xml", {"use_fake_hardware": fake})
    names = [node.name for node in nodes]
    assert names[:4] == ["arm_bridge", "controller", "planner", "run_task"]
    assert ("fake_arm" in names) == (fake == "true")
    assert ParamValue("world_reset_service", reset_service) in nodes[0].params


def home_z() -> float:
    arm = ArmKinematics(ArmDescription())
    arm.set_positions(np.array(HOME_QPOS))
    return float(arm.ee_pose()[0][2])


def start(executable: str, env: dict[str, str], namespace: str, *params: str) -> Captured:
    args = [os.path.join(sys.prefix, "lib", "hgpo", executable), "--ros-args", "-r", f"__ns:=/{namespace}"]
    for param in params:
        args += ["-p", param]
    return Captured(args, cwd=REPO, env=env)


# The hardware's topics, relative so that the whole graph lives under /arm_safety.
HARDWARE = (
    "joint_states_topic:=joint_states",
    "command_topic:=commands",
    "gripper_topic:=gripper",
    "perception_topic:=objects",
)


@pytest.fixture(scope="module")
def arm_graph(ros_env: dict[str, str]) -> Iterator[dict[str, Captured]]:
    """fake_arm, arm_bridge (workspace top just above home), controller and planner under /arm_safety."""
    top = home_z() + BOX_MARGIN
    nodes = {
        "fake_arm": start("fake_arm", ros_env, NS, *HARDWARE, "task:=reach"),
        "arm_bridge": start(
            "arm_bridge",
            ros_env,
            NS,
            *HARDWARE,
            f"world_reset_service:=/{NS}/fake_arm/reset_world",
            f"workspace_high:=[0.75, 0.45, {top}]",
        ),
        "controller": start("controller", ros_env, NS),
        "planner": start("planner", ros_env, NS, "peer_timeout_s:=5.0"),
    }
    yield nodes
    for name, node in nodes.items():
        assert node.stop(timeout=20) == 0, f"{name}:\n{node.output}"


class Watch:
    """The latest message of a topic and how many came."""

    def __init__(self, node, msg_type, topic: str, qos=10, flag=None) -> None:
        self.latest = None
        self.count = 0
        self.flagged = threading.Event()  # set by any message for which `flag(msg)` holds
        self._flag = flag
        self._lock = threading.Lock()
        self.sub = node.create_subscription(msg_type, topic, self._on, qos)

    def _on(self, msg) -> None:
        with self._lock:
            self.latest, self.count = msg, self.count + 1
        if self._flag is not None and self._flag(msg):
            self.flagged.set()

    def next(self):
        start = self.count
        wait_until(lambda: self.count > start, DISCOVERY_S, f"a message on {self.sub.topic_name}")
        return self.latest

    def since(self, node):
        """The first message stamped from now on: never one that waited in a queue of a loaded machine."""
        now = node.get_clock().now().nanoseconds

        def fresh() -> bool:
            stamp = self.latest.header.stamp if self.latest is not None else None
            return stamp is not None and stamp.sec * 10**9 + stamp.nanosec >= now

        wait_until(fresh, DISCOVERY_S, f"a fresh message on {self.sub.topic_name}")
        return self.latest


class Arm:
    """The test's side of the graph: twists in; bridge commands, joint states, scenes, e-stop state out."""

    def __init__(self, node) -> None:
        self.node = node
        self.twist_pub = node.create_publisher(TwistStamped, f"/{NS}/cmd_twist", 10)
        self.estop_pub = node.create_publisher(Bool, f"/{NS}/estop", latched_qos())
        self.commands = Watch(node, Float64MultiArray, f"/{NS}/commands", flag=lambda m: np.any(m.data))
        self.joints = Watch(
            node, JointState, f"/{NS}/joint_states", flag=lambda m: np.any(np.abs(m.velocity[:7]) > 1e-6)
        )
        self.scene = Watch(node, SceneState, f"/{NS}/scene_state")
        self.estop_state = Watch(node, Bool, f"/{NS}/estop_state", latched_qos())
        self.reset_client = node.create_client(Trigger, f"/{NS}/reset_estop")
        wait_until(lambda: self.twist_pub.get_subscription_count() > 0, DISCOVERY_S, "the bridge's cmd_twist")
        wait_until(lambda: self.estop_pub.get_subscription_count() > 0, DISCOVERY_S, "the bridge's estop")
        self.scene.next()
        # DDS matches each writer to each reader on its own: the bridge hearing the arm's joint states says
        # nothing of the arm hearing the bridge's commands. Only a twist that moves the arm proves the loop.
        self.joints.flagged.clear()
        wait_until(
            lambda: self.stream((0.02, 0.0, 0.0), 1) or self.joints.flagged.is_set(),
            DISCOVERY_S,
            "a twist to move the arm",
        )
        self.stand()

    def stream(self, linear: tuple[float, float, float], n: int, ahead_s: float | None = 0.0) -> None:
        """n twists at the controller's 25 Hz, each stamped now + ahead_s (None: stamp 0)."""
        tick = threading.Event()
        for _ in range(n):
            msg = TwistStamped()
            if ahead_s is not None:
                stamp_ns = self.node.get_clock().now().nanoseconds + round(ahead_s * 1e9)
                msg.header.stamp = Time(sec=stamp_ns // 10**9, nanosec=stamp_ns % 10**9)
            msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = linear
            self.twist_pub.publish(msg)
            tick.wait(0.04)

    def moves_under(self, linear: tuple[float, float, float], n: int) -> None:
        """Stream n twists; the bridge must have sent a non-zero command and the arm moved meanwhile."""
        self.commands.flagged.clear()
        self.joints.flagged.clear()
        self.stream(linear, n)
        assert self.commands.flagged.wait(DISCOVERY_S), "no non-zero command from the bridge"
        assert self.joints.flagged.wait(DISCOVERY_S), "the arm never moved"

    def moving(self) -> bool:
        return bool(np.any(np.abs(self.joints.since(self.node).velocity[:7]) > 1e-6))

    def stand(self) -> None:
        wait_until(lambda: not self.moving(), 10.0, "the arm to stand still")

    def ee(self) -> np.ndarray:
        """Where the end effector stands now (after the arm stopped)."""
        self.stand()
        p = self.scene.since(self.node).ee_pose.position
        return np.array([p.x, p.y, p.z])

    def reset_estop(self) -> Trigger.Response:
        assert self.reset_client.wait_for_service(timeout_sec=DISCOVERY_S), "reset_estop never appeared"
        return wait_for(self.reset_client.call_async(Trigger.Request()), DISCOVERY_S, "reset_estop")


@pytest.fixture
def arm(arm_graph, test_node) -> Arm:
    return Arm(test_node)


def test_twists_move_the_arm_and_stale_ones_stop_it(arm: Arm, arm_graph) -> None:
    arm.moves_under((0.1, 0.0, 0.0), 10)
    # No more twists: within command_timeout_s (0.1 s) the bridge commands zero and the arm stands.
    wait_until(lambda: not np.any(arm.commands.next().data), 5.0, "the bridge to command a stop")
    wait_until(lambda: not arm.moving(), 5.0, "the arm to stand still")
    wait_until(lambda: "holding still: command timed out" in arm_graph["arm_bridge"].output, 5.0, "the log")


def test_non_finite_twist_is_refused(arm: Arm, arm_graph) -> None:
    arm.moves_under((0.1, 0.0, 0.0), 5)
    start = arm.ee()
    arm.stream((float("nan"), 0.0, 0.0), 5)
    sent = arm.commands.next().data
    assert np.all(np.isfinite(sent)) and not np.any(sent)  # nothing non-finite reaches the arm
    assert np.linalg.norm(arm.ee() - start) < 1e-4
    wait_until(
        lambda: "twist refused, holding still: non-finite" in arm_graph["arm_bridge"].output, 5.0, "log"
    )


@pytest.mark.parametrize(("ahead_s", "reason"), [(None, "stamp 0"), (3600.0, "s in the future")])
def test_unstamped_and_future_twists_are_refused(arm: Arm, arm_graph, ahead_s, reason: str) -> None:
    """Regression: arm_bridge took stamp 0 and stamps from the future for fresh commands."""
    arm.moves_under((0.1, 0.0, 0.0), 5)
    start = arm.ee()
    arm.stream((0.1, 0.0, 0.0), 5, ahead_s)
    assert not np.any(arm.commands.next().data)
    assert np.linalg.norm(arm.ee() - start) < 1e-4

    def logged() -> bool:
        lines = arm_graph["arm_bridge"].output.splitlines()
        return any("twist refused, holding still: twist" in line and reason in line for line in lines)

    wait_until(logged, 5.0, "log")


def test_workspace_box_stops_the_end_effector_at_its_top(arm: Arm) -> None:
    top = home_z() + BOX_MARGIN
    start = arm.ee()[2]
    arm.stream((0.0, 0.0, 0.25), 40)  # 1.6 s at full speed: 0.4 m if nothing clipped it
    end = arm.ee()[2]
    assert end > start + 0.5 * (top - start)  # it did move up: the check below can fail
    assert end <= top + 3e-3
    arm.stream((0.0, 0.0, -0.1), 10)  # and back down is allowed
    assert arm.ee()[2] < end - 0.01


def test_too_fast_twists_are_scaled_to_the_speed_limit(arm: Arm, arm_graph) -> None:
    start = arm.ee()
    began = time.monotonic()
    arm.stream((0.0, 2.0, 0.0), 10)  # 0.4 s at 2 m/s: 0.8 m if nothing limited it
    streamed = time.monotonic() - began  # longer than 0.4 s on a loaded machine
    moved = arm.ee()[1] - start[1]
    # max_linear_speed 0.25 m/s for the stream and the command timeout after it. (On a loaded machine some
    # twists may arrive older than the timeout and be refused: the arm then moves less, never more.)
    assert 0.005 < moved <= 0.25 * (streamed + 0.1) + 0.01, arm_graph["arm_bridge"].output[-2000:]


def test_estop_halts_latches_blocks_subgoals_and_resets(arm: Arm, arm_graph, test_node) -> None:
    stream = threading.Thread(target=arm.stream, args=((0.0, 0.1, 0.0), 150))  # 6 s of twists
    stream.start()
    try:
        wait_until(arm.moving, DISCOVERY_S, "the arm to move")
        arm.estop_pub.publish(Bool(data=True))
        wait_until(
            lambda: arm.estop_state.latest is not None and arm.estop_state.latest.data, 5.0, "the latch"
        )
        # Twists keep coming, yet the bridge commands zero and the arm stands.
        wait_until(lambda: not arm.moving(), 5.0, "the arm to stop")
        assert not np.any(arm.commands.next().data) and not arm.moving()
    finally:
        stream.join()
    late = Watch(test_node, Bool, f"/{NS}/estop_state", latched_qos())  # a late joiner sees the latch
    wait_until(lambda: late.latest is not None and late.latest.data, DISCOVERY_S, "the latched state")

    call = ActionCall(test_node, ExecuteSubgoal, f"/{NS}/execute_subgoal", subgoal("reach", "red_block"))
    status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and "emergency stop latched" in result.message
    call = ActionCall(test_node, RunTask, f"/{NS}/run_task", RunTask.Goal(task="reach", reset=True))
    status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and result.subgoals_executed == 0
    assert "emergency stop latched" in result.message and "reset_estop" in result.message

    response = arm.reset_estop()
    assert not response.success and "still asserted" in response.message
    arm.estop_pub.publish(Bool(data=False))
    wait_until(lambda: "emergency stop released" in arm_graph["arm_bridge"].output, 5.0, "the release")
    assert arm.estop_state.latest.data  # released is not reset
    response = arm.reset_estop()
    assert response.success, response.message
    wait_until(lambda: not arm.estop_state.latest.data, 5.0, "the latch to clear")
    arm.moves_under((0.0, 0.1, 0.0), 10)
    call = ActionCall(test_node, RunTask, f"/{NS}/run_task", RunTask.Goal(task="reach", reset=True, seed=1))
    status, result = call.result(TASK_TIMEOUT_S)
    assert status == GoalStatus.STATUS_SUCCEEDED, result.message


def test_estop_asserted_before_the_bridge_starts_latches_it(ros_env, test_node) -> None:
    """Transient-local durability: a stop pressed while the bridge was down still reaches it."""
    estop = test_node.create_publisher(Bool, "/early/estop", latched_qos())
    estop.publish(Bool(data=True))
    state = Watch(test_node, Bool, "/early/estop_state", latched_qos())
    bridge = start("arm_bridge", ros_env, "early")
    try:
        wait_until(lambda: state.latest is not None and state.latest.data, DISCOVERY_S, "the bridge to latch")
    finally:
        assert bridge.stop(timeout=20) == 0, bridge.output
    assert "EMERGENCY STOP latched" in bridge.output


def test_joint_states_that_disagree_with_the_model_are_refused(ros_env, test_node) -> None:
    bridge = start("arm_bridge", ros_env, "mismatch", "joint_states_topic:=joint_states")
    try:
        pub = test_node.create_publisher(JointState, "/mismatch/joint_states", 10)
        scenes = Watch(test_node, SceneState, "/mismatch/scene_state")
        wait_until(lambda: pub.get_subscription_count() > 0, DISCOVERY_S, "the bridge's joint_states")
        ur = [
            "shoulder_pan_joint",
            "shoulder_lift_joint",
            "elbow_joint",
            "wrist_1_joint",
            "wrist_2_joint",
            "wrist_3_joint",
        ]
        msg = JointState(name=ur, position=[0.0] * 6)
        wait_until(
            lambda: pub.publish(msg) or "joint state refused" in bridge.output, DISCOVERY_S, "the error"
        )
        assert "lacks joint(s) joint1" in bridge.output and "arm_joints" in bridge.output
        assert scenes.count == 0  # no scene from a joint state it cannot read
    finally:
        assert bridge.stop(timeout=20) == 0, bridge.output


def test_arm_joints_not_in_the_model_are_a_configuration_error(ros_env) -> None:
    bridge = start("arm_bridge", ros_env, "bad_config", "arm_joints:=[a, b]")
    assert bridge.wait(timeout=60) == 2
    assert "error: arm_joints a, b not in the model; its joints: joint1" in bridge.output


def test_a_reset_waits_for_perception_to_report_the_tasks_objects(ros_env, test_node) -> None:
    """Perception is its own DDS match: a reset answered before it was heard from had a scene without the
    task's objects, and the planner crashed judging the goal (CI, 2026-12-03). Here perception reaches the
    bridge only through the test's relay, switched on for the second reset."""
    ns = "late_perception"
    hardware = ("joint_states_topic:=joint_states", "command_topic:=commands", "gripper_topic:=gripper")
    nodes = [
        start("fake_arm", ros_env, ns, *hardware, "perception_topic:=camera_objects"),
        start(
            "arm_bridge",
            ros_env,
            ns,
            *hardware,
            "perception_topic:=objects",
            f"world_reset_service:=/{ns}/fake_arm/reset_world",
            "reset_timeout_s:=2.0",
        ),
    ]
    try:
        relay = threading.Event()
        out = test_node.create_publisher(ObjectStateArray, f"/{ns}/objects", 10)
        test_node.create_subscription(
            ObjectStateArray, f"/{ns}/camera_objects", lambda m: relay.is_set() and out.publish(m), 10
        )
        scenes = Watch(test_node, SceneState, f"/{ns}/scene_state", flag=lambda m: bool(m.objects))
        client = test_node.create_client(ResetScene, f"/{ns}/reset_scene")
        assert client.wait_for_service(timeout_sec=DISCOVERY_S), "reset_scene never appeared"
        scenes.next()  # the bridge hears the arm

        def reset() -> ResetScene.Response:
            request = ResetScene.Request(task="reach", seed=2)
            return wait_for(client.call_async(request), DISCOVERY_S, "reset_scene")

        response = reset()
        assert not response.success and not response.scene.objects
        assert f"no objects on /{ns}/objects: is perception running?" in response.message, response.message
        relay.set()
        assert scenes.flagged.wait(DISCOVERY_S), "perception never reached the bridge through the relay"
        response = reset()
        assert response.success, response.message
        target = make_task("reach", seed=2).goal[0].args[0]
        assert target in {obj.name for obj in response.scene.objects}
    finally:
        for node in nodes:
            assert node.stop(timeout=20) == 0, node.output


def test_a_lost_world_reset_answer_is_resent_not_waited_out(ros_env, test_node) -> None:
    """A restarted bridge may not yet be matched by the fake arm, which then drops its answer to the world
    reset. Regression: the bridge awaited that one answer, and the first reset after a restart failed after
    reset_timeout_s. Here the test's world-reset service never answers its first request."""
    ns = "lost_world_reset"
    requests: list[int] = []
    never: Future[None] = Future()  # the first request's answer: lost

    async def answer(request: ResetScene.Request, response: ResetScene.Response) -> ResetScene.Response:
        requests.append(request.seed)
        if len(requests) == 1:
            await never
        response.success, response.task = True, request.task
        response.scene.header.stamp = test_node.get_clock().now().to_msg()
        return response

    test_node.create_service(
        ResetScene, f"/{ns}/world_reset", answer, callback_group=ReentrantCallbackGroup()
    )
    nodes = [
        start("fake_arm", ros_env, ns, *HARDWARE, "task:=reach"),
        start("arm_bridge", ros_env, ns, *HARDWARE, f"world_reset_service:=/{ns}/world_reset"),
    ]
    try:
        scenes = Watch(test_node, SceneState, f"/{ns}/scene_state", flag=lambda m: bool(m.objects))
        client = test_node.create_client(ResetScene, f"/{ns}/reset_scene")
        assert client.wait_for_service(timeout_sec=DISCOVERY_S), "reset_scene never appeared"
        assert scenes.flagged.wait(DISCOVERY_S), "the bridge never heard the arm and perception"
        started = time.monotonic()
        response = wait_for(
            client.call_async(ResetScene.Request(task="reach", seed=3)), DISCOVERY_S, "reset_scene"
        )
        assert response.success, response.message
        assert time.monotonic() - started < 4.0  # resent after 1 s, not failed after reset_timeout_s (5 s)
        assert requests[:2] == [3, 3]
    finally:
        for node in nodes:
            assert node.stop(timeout=20) == 0, node.output
