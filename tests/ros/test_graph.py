"""The sim graph over real DDS: bridge, controller and planner as launched processes."""

from __future__ import annotations

import math
import threading
from collections.abc import Iterator

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.action import ExecuteSubgoal, RunTask
from hgpo_msgs.msg import SceneState, Subgoal
from hgpo_msgs.srv import ResetScene

from ros_nodes.waiting import call_service
from sim.tabletop import make_task
from tests.ros.conftest import Launched
from tests.ros.helpers import DISCOVERY_S, ActionCall, wait_until

TASK_TIMEOUT_S = 180.0


@pytest.fixture(scope="module")
def graph(ros_env: dict[str, str]) -> Iterator[Launched]:
    """The sim graph without run_task and with the expert planner: tests drive it over DDS."""
    launched = Launched(["sim", "run_task:=false", "planner:=expert"], ros_env)
    yield launched
    assert launched.stop(timeout=20) == 0, launched.output


class SceneWatch:
    """Latest SceneState of a namespace, for assertions on the world."""

    def __init__(self, node, topic: str) -> None:
        self.latest: SceneState | None = None
        self.count = 0
        self._lock = threading.Lock()
        self.sub = node.create_subscription(SceneState, topic, self._on, 10)

    def _on(self, msg: SceneState) -> None:
        with self._lock:
            self.latest, self.count = msg, self.count + 1

    def ee(self) -> np.ndarray:
        wait_until(lambda: self.latest is not None, DISCOVERY_S, "a SceneState")
        p = self.latest.ee_pose.position
        return np.array([p.x, p.y, p.z])

    def wait_new(self, n: int = 1) -> None:
        start = self.count
        wait_until(lambda: self.count >= start + n, DISCOVERY_S, f"{n} new SceneState messages")


def subgoal(skill: str, *args: str, timeout_s: float = 0.0) -> ExecuteSubgoal.Goal:
    return ExecuteSubgoal.Goal(
        subgoal=Subgoal(text=f"{skill}({', '.join(args)})", skill=skill, args=list(args), timeout_s=timeout_s)
    )


def reset(node, seed: int, task: str = "stack", service: str = "/hgpo/reset_scene") -> ResetScene.Response:
    client = node.create_client(ResetScene, service)
    assert client.wait_for_service(timeout_sec=DISCOVERY_S), "reset_scene never appeared"
    return call_service(client, ResetScene.Request(task=task, seed=seed), DISCOVERY_S, "reset")


def test_run_task_over_dds(graph: Launched, test_node) -> None:
    planned: list[Subgoal] = []
    heard = test_node.create_subscription(Subgoal, "/hgpo/subgoal", planned.append, 10)
    wait_until(lambda: heard.get_publisher_count() > 0, DISCOVERY_S, "the planner's subgoal publisher")
    call = ActionCall(test_node, RunTask, "/hgpo/run_task", RunTask.Goal(task="stack", reset=True, seed=1))
    status, result = call.result(TASK_TIMEOUT_S)
    assert status == GoalStatus.STATUS_SUCCEEDED, (result.message, graph.output)
    assert result.success and result.subgoals_executed == 2
    top, base = make_task("stack", seed=1).goal[0].args
    done = [(f.subgoal, f.status) for f in call.feedback if f.status in ("succeeded", "failed")]
    assert done == [(f"pick({top})", "succeeded"), (f"place({top}, {base})", "succeeded")], graph.output
    wait_until(lambda: len(planned) == 2, DISCOVERY_S, "two Subgoal messages")
    assert planned[0].skill == "pick" and list(planned[0].args) == [top] and len(planned[0].goal) == 3


@pytest.mark.parametrize(
    ("skill", "args", "expected"),
    [
        ("pick", ("purple_block",), "unknown object 'purple_block'"),
        ("juggle", ("red_block",), "unknown skill 'juggle'"),
        ("place", ("red_block",), "takes 2 argument(s), got 1"),
    ],
)
def test_bad_subgoal_is_aborted_with_reason(graph: Launched, test_node, skill, args, expected) -> None:
    call = ActionCall(test_node, ExecuteSubgoal, "/hgpo/execute_subgoal", subgoal(skill, *args))
    status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED
    assert not result.success and expected in result.message


def test_controller_succeeds_after_failures(graph: Launched, test_node) -> None:
    """Regression: a second outcome logged at another severity used to crash the execute callback."""
    reset(test_node, seed=4)
    for goal in (subgoal("pick", "purple_block"), subgoal("reach", "red_block")):
        call = ActionCall(test_node, ExecuteSubgoal, "/hgpo/execute_subgoal", goal)
        status, result = call.result(TASK_TIMEOUT_S)
    assert status == GoalStatus.STATUS_SUCCEEDED and result.success, result.message
    assert "reach(red_block) succeeded" in result.message


def test_empty_instruction_is_rejected(graph: Launched, test_node) -> None:
    call = ActionCall(test_node, RunTask, "/hgpo/run_task", RunTask.Goal(instruction="   ", reset=False))
    status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and "empty instruction" in result.message


def test_own_instruction_with_reset_is_planned_as_given(graph: Launched, test_node) -> None:
    """Regression: the reset task's goal used to be planned (and reported done) under the user's words."""
    goal = RunTask.Goal(instruction="wave at the camera", task="stack", reset=True, seed=0)
    status, result = ActionCall(test_node, RunTask, "/hgpo/run_task", goal).result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and result.subgoals_executed == 0
    assert "needs a known task" in result.message and "wave at the camera" in result.message


def test_reset_to_unknown_task_is_refused(graph: Launched, test_node) -> None:
    response = reset(test_node, seed=0, task="juggle")
    assert (
        not response.success and "unknown task 'juggle'" in response.message and "stack" in response.message
    )


def test_invalid_twist_is_refused_and_arm_holds_still(graph: Launched, test_node) -> None:
    reset(test_node, seed=2)
    scene = SceneWatch(test_node, "/hgpo/scene_state")
    pub = test_node.create_publisher(TwistStamped, "/hgpo/cmd_twist", 10)
    wait_until(lambda: pub.get_subscription_count() > 0, DISCOVERY_S, "the bridge to subscribe to cmd_twist")

    def send(vz: float, n: int) -> np.ndarray:
        start = scene.ee()
        for _ in range(n):
            msg = TwistStamped()
            msg.header.stamp = test_node.get_clock().now().to_msg()  # unstamped twists are refused too
            msg.twist.linear.z = vz
            pub.publish(msg)
            scene.wait_new(2)
        return scene.ee() - start

    assert np.linalg.norm(send(math.nan, 30)) < 2e-3
    assert np.linalg.norm(send(5.0, 30)) < 2e-3  # far above max_linear_speed
    assert send(0.1, 30)[2] > 0.01  # a valid command does move the arm: the checks above can fail
    wait_until(
        lambda: "command refused, holding still: non-finite twist" in graph.output, 10, "the bridge's warning"
    )


def test_cancel_and_preemption(graph: Launched, test_node) -> None:
    reset(test_node, seed=3)
    # Both clients are discovered first, so that the second goal follows the first within milliseconds,
    # long before a reach across the table (about 1.5 s) could finish.
    first = ActionCall(test_node, ExecuteSubgoal, "/hgpo/execute_subgoal")
    second = ActionCall(test_node, ExecuteSubgoal, "/hgpo/execute_subgoal")
    first.send(subgoal("reach", "yellow_block"))
    wait_until(lambda: first.feedback, DISCOVERY_S, "feedback from the first subgoal")
    second.send(subgoal("reach", "green_block"))
    status, result = first.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and "preempted" in result.message
    wait_until(lambda: second.feedback, DISCOVERY_S, "feedback from the second subgoal")
    second.cancel()
    status, result = second.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_CANCELED and "canceled" in result.message


def test_controller_reports_a_lost_bridge(start_node, test_node) -> None:
    bridge = start_node("sim_bridge", "lost_bridge")
    controller = start_node("controller", "lost_bridge", "scene_timeout_s:=0.5")
    scene = SceneWatch(test_node, "/lost_bridge/scene_state")
    scene.wait_new()
    wait_until(
        lambda: test_node.count_subscribers("/lost_bridge/scene_state") >= 2,
        DISCOVERY_S,
        "the controller to subscribe to the bridge's scene",
    )
    call = ActionCall(
        test_node,
        ExecuteSubgoal,
        "/lost_bridge/execute_subgoal",
        subgoal("reach", "yellow_block", timeout_s=60.0),
    )
    wait_until(lambda: call.feedback, DISCOVERY_S, "feedback")
    bridge.proc.kill()
    status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED, controller.output
    assert "no SceneState" in result.message and "bridge" in result.message


def test_planner_reports_a_missing_controller(start_node, test_node) -> None:
    start_node("sim_bridge", "no_controller")
    planner = start_node("planner", "no_controller", "peer_timeout_s:=3.0")
    bridge_up = test_node.create_client(ResetScene, "/no_controller/reset_scene")
    assert bridge_up.wait_for_service(timeout_sec=DISCOVERY_S), (
        "the bridge never came up"
    )  # only the controller is missing
    call = ActionCall(test_node, RunTask, "/no_controller/run_task", RunTask.Goal(task="reach", reset=True))
    status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and "is the controller running?" in result.message, (
        planner.output
    )


def test_make_sim_runs_the_task_and_exits_zero(launch) -> None:
    launched = launch("sim", "planner:=expert", "task:=pick_place", "seed:=4")
    assert launched.wait(timeout=TASK_TIMEOUT_S) == 0, launched.output
    assert "SUCCESS" in launched.output


def test_failed_task_exits_non_zero(launch) -> None:
    launched = launch("sim", "task:=juggle")
    assert launched.wait(timeout=TASK_TIMEOUT_S) != 0
    assert "unknown task 'juggle'" in launched.output


def test_ctrl_c_mid_task_stops_every_node_cleanly(launch) -> None:
    """Regression: the planner, blocked on the controller's result, outlived Ctrl-C until the launcher
    killed it (10 s, exit 1). Now the running goals end, reported, before the nodes go."""
    launched = launch("sim", "planner:=expert", "task:=stack", "seed:=1")
    wait_until(lambda: "[0]" in launched.output, TASK_TIMEOUT_S, "the first subgoal's result")
    assert launched.stop(timeout=20) == 0, launched.output
    assert "SIGKILL" not in launched.output and "Traceback" not in launched.output, launched.output
    # rclpy's executor shutdown raced the callbacks it had handed out (node_main._finish_handed_out_callbacks)
    assert "never retrieved" not in launched.output, launched.output
    assert "'planner' exited with exit code 0" in launched.output
    # run_task cancels its goal on Ctrl-C while the planner stops its work: whichever comes first ends the
    # task, and the planner reports either ending
    endings = ("task stopped: the planner is shutting down", "task canceled")
    assert any(f"[hgpo.planner]: {ending}" in launched.output for ending in endings), launched.output
