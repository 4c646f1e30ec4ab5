"""Fault injection on the sim graph over DDS: killed nodes, bad and huge inputs, stamps, concurrent goals.

Bridge, controller and planner run as separate processes (hgpo/bench/faults.py's harness, the launch file's
YAML) under a namespace of this test run's own, in the session's DDS domain. Time bounds here are generous
behaviour bounds for a loaded machine; `hgpo bench faults` measures the real times (docs/faults.md).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Time
from geometry_msgs.msg import TwistStamped
from hgpo_msgs.action import ExecuteSubgoal, RunTask
from rclpy.action import ActionClient
from unique_identifier_msgs.msg import UUID

from hgpo.bench.faults import ARM_TASK, VICTIMS, Graph, NodeProcess, Probe, inject
from ros_nodes.liveness import HEARTBEAT_PERIOD_S, ClientHeartbeat
from ros_nodes.waiting import send_goal, wait_for
from tests.processes import Captured
from tests.ros.helpers import DISCOVERY_S, ActionCall, becomes_true, wait_until
from tests.ros.test_graph import SceneWatch, subgoal
from tests.skill_policy_files import policy_failing_on_real_goals

NS = f"faults_{os.getpid()}"
REPO = Path(__file__).resolve().parents[2]
TASK = ("-p", "task:=stack", "-p", "seed:=1")  # run_task's parameters: a task whose pick lasts seconds
SHIPPED_SKILLS = Path(__file__).resolve().parents[2] / "policies" / "pretrained" / "skills"
# Caller-side bounds: detection targets are about 1 s (bench figures); these leave room for a loaded machine.
DETECTED_WITHIN_S = 5.0
ARM_STILL_WITHIN_S = 3.0
STOP_ATTEMPTS, STOP_WAIT_S = 5, 3.0  # goals failing on their first tick, and how long each waits for its stop


@pytest.fixture(scope="module")
def graph(ros_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    """The three nodes with the launch file's parameters."""
    logs = tmp_path_factory.mktemp("fault_logs")
    started = Graph(NS, ros_env, logs, {})
    yield started
    codes = started.stop()
    assert all(code == 0 for code in codes.values()), {n: p.output() for n, p in started.nodes.items()}


@pytest.fixture(scope="module")
def arm_graph(ros_env: dict[str, str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Graph]:
    """The real-arm graph with fake hardware (fake_arm, arm_bridge, controller, planner)."""
    logs = tmp_path_factory.mktemp("arm_fault_logs")
    started = Graph(f"{NS}_arm", ros_env, logs, {}, bridge="arm_bridge")
    yield started
    codes = started.stop()
    assert all(code == 0 for code in codes.values()), {n: p.output() for n, p in started.nodes.items()}


@pytest.mark.parametrize("victim", VICTIMS)
def test_a_killed_node_is_detected_the_arm_stops_and_its_restart_alone_recovers(
    request: pytest.FixtureRequest, test_node, victim: str
) -> None:
    if victim == "arm_bridge":  # the fake arm outlives it and must stop on its own command timeout
        graph = request.getfixturevalue("arm_graph")
        record = inject(graph, Probe(test_node, graph.namespace), victim, ARM_TASK, ARM_TASK)
    else:
        graph = request.getfixturevalue("graph")
        record = inject(graph, Probe(test_node, NS), victim)
    logs = {name: node.output()[-3000:] for name, node in graph.nodes.items()}
    assert record["detected_s"] is not None and record["detected_s"] < DETECTED_WITHIN_S, (record, logs)
    caller = record["caller"]
    if victim == "planner":  # the controller stopped the arm for the dead client; its caller hears it too
        assert "sent no heartbeat" in record["detected_by"]
        assert not caller["success"] and "planner stopped answering" in caller["message"], record
        assert caller["after_s"] < DETECTED_WITHIN_S, record  # not the caller's task timeout
    elif victim == "controller":  # the planner says so at once, and sent nothing more to the dead server
        assert not caller["success"] and "controller stopped answering" in caller["message"], record
        assert graph.nodes["planner"].output().count("stopped answering") == 1
    else:  # a bridge: the planner, having heard scenes in this task, gives up after stream_timeout_s (2 s);
        # or a SIGKILL stalled DDS between the others for about a second, and a node's silence was reported
        # first (docs/faults.md, "Not covered"): detected all the same, the wrong node named
        heard = (record["detected_by"], caller["message"])
        assert all("SceneState" in m or "stopped answering" in m for m in heard), record
        assert not caller["success"], record
        assert caller["after_s"] < 8.0, record  # not peer_timeout_s (10 s) after the subgoal failed
    if victim != "sim_bridge":  # the simulated arm dies with its bridge
        assert record["arm_stopped_s"] is not None and record["arm_stopped_s"] < ARM_STILL_WITHIN_S, record
    assert record["next_task"]["success"], (record, logs)
    # A first request the restarted node dropped is resent within seconds, not after peer_timeout_s (10 s);
    # the time to acceptance, not the task's whole wall time (a loaded machine's reach alone took 9.2 s)
    assert record["next_task"]["accepted_s"] < 9.0, (record, logs)


def start_run_task(graph: Graph) -> Captured:
    """`run_task` sending `stack` seed 1 (its pick lasts seconds) to the graph's planner."""
    executable = os.path.join(sys.prefix, "lib", "hgpo", "run_task")
    return Captured(
        [executable, "--ros-args", "-r", f"__ns:=/{graph.namespace}", *TASK],
        cwd=REPO,
        env=graph.nodes["planner"].env,
    )


def test_run_task_exits_3_soon_after_its_planner_is_killed(graph: Graph, test_node) -> None:
    """Regression: a killed planner's run_task waited for its result up to task_timeout_s (600 s)."""
    probe = Probe(test_node, NS)
    probe.discovered()
    sent = time.monotonic()
    caller = start_run_task(graph)
    try:
        wait_until(lambda: probe.moving(sent), 60, f"the arm to move under run_task:\n{caller.output}")
        graph.nodes["planner"].kill()
        killed = time.monotonic()
        assert caller.wait(timeout=DETECTED_WITHIN_S + 5) == 3, caller.output
        assert time.monotonic() - killed < DETECTED_WITHIN_S, caller.output
        assert "the planner stopped answering" in caller.output
    finally:
        caller.stop(timeout=10)
        graph.restart("planner")


def test_a_killed_run_task_ends_its_task_and_the_arm_stops(graph: Graph, test_node) -> None:
    """Regression: the planner ran a killed caller's task to its end, the arm moving for nobody."""
    probe = Probe(test_node, NS)
    probe.discovered()
    sent = time.monotonic()
    caller = start_run_task(graph)
    planner = graph.nodes["planner"]
    try:
        wait_until(lambda: probe.moving(sent), 60, f"the arm to move under run_task:\n{caller.output}")
        caller.proc.kill()
        killed = time.monotonic()
        wait_until(
            lambda: "its caller sent no heartbeat" in planner.output(),
            DETECTED_WITHIN_S,
            f"the planner to end the task of its dead caller:\n{planner.output()[-2000:]}",
        )
        wait_until(lambda: probe.still_after(killed) is not None, 10, "the arm to stand still")
        assert probe.still_after(killed) < ARM_STILL_WITHIN_S  # type: ignore[operator]
        response = wait_for(probe.send_task("reach", seed=0), 120.0, "the next task")
        assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.message
    finally:
        caller.stop(timeout=10)


def test_a_late_heartbeat_holds_the_arm_and_the_subgoal_resumes_when_it_comes(
    ros_env, tmp_path: Path, test_node
) -> None:
    """A live client whose heartbeat is late (a stall) holds the arm still instead of losing its subgoal;
    the arm is still before the abort would come. Regression: the arm was driven until client_timeout_s."""
    ns = f"{NS}_hold"
    params = ("client_hold_s:=0.3", "client_timeout_s:=30.0", "max_linear_speed:=0.05")
    nodes = [
        NodeProcess("sim_bridge", ns, ros_env, tmp_path, ()),
        NodeProcess("controller", ns, ros_env, tmp_path, params),
    ]
    for node in nodes:
        node.start()
    try:
        for node in nodes:
            node.wait_ready()
        controller = nodes[1]
        scene = SceneWatch(test_node, f"/{ns}/scene_state")
        scene.wait_new()
        call = ActionCall(test_node, ExecuteSubgoal, f"/{ns}/execute_subgoal")
        heartbeat, goal_id = ClientHeartbeat(test_node, f"/{ns}/execute_subgoal"), UUID(uuid=list(range(16)))
        beating, stop = threading.Event(), threading.Event()
        beating.set()

        def beat() -> None:
            while not stop.wait(HEARTBEAT_PERIOD_S):
                if beating.is_set():
                    heartbeat.beat(goal_id)

        beater = threading.Thread(target=beat, daemon=True)
        beater.start()
        try:
            wait_until(
                lambda: test_node.count_subscribers(f"/{ns}/execute_subgoal/client_heartbeat") > 0,
                DISCOVERY_S,
                "the controller's heartbeat subscription",
            )
            call.handle = send_goal(
                call.client,
                subgoal("reach", "yellow_block", timeout_s=120.0),
                10.0,
                "controller",
                feedback_callback=lambda m: call.feedback.append(m.feedback),
                goal_id=goal_id,
            )
            result = call.handle.get_result_async()
            start = scene.ee()
            wait_until(lambda: np.linalg.norm(scene.ee() - start) > 0.005, DISCOVERY_S, "the arm to move")
            beating.clear()  # the client stalls
            wait_until(lambda: "holding" in controller.output(), 10, "the controller to hold the arm")
            scene.wait_new(10)  # 0.1 s at the bridge's 100 Hz: the stop twist applied
            held_at = scene.ee()
            assert not becomes_true(result.done, 1.0), "a late heartbeat aborted the subgoal"
            assert np.linalg.norm(scene.ee() - held_at) < 1e-3, "the arm moved while held"
            beating.set()  # the client is back: the subgoal carries on and succeeds
            response = wait_for(result, 120.0, "the subgoal's result")
            assert response.status == GoalStatus.STATUS_SUCCEEDED, (
                response.result.message,
                controller.output(),
            )
            assert "resuming" in controller.output()
        finally:
            stop.set()
            beater.join(timeout=5)
    finally:
        for node in nodes:
            node.stop()


def test_concurrent_run_task_goals_are_accepted_or_rejected_never_accepted_then_aborted(
    graph: Graph, test_node
) -> None:
    clients = [ActionClient(test_node, RunTask, f"/{NS}/run_task") for _ in range(5)]
    for client in clients:
        assert client.wait_for_server(timeout_sec=DISCOVERY_S)
    go, handles = threading.Event(), [None] * len(clients)

    def send(i: int) -> None:
        go.wait()
        # sort (eight subgoals): a task long enough that every goal arrives while it runs (after a reach
        # ended, a late goal was rightly accepted as the only one)
        handles[i] = send_goal(clients[i], RunTask.Goal(task="sort", seed=2, reset=True), 10.0, "planner")

    threads = [threading.Thread(target=send, args=(i,)) for i in range(len(clients))]
    for thread in threads:
        thread.start()
    go.set()
    for thread in threads:
        thread.join(timeout=60)
    accepted = [h for h in handles if h is not None and h.accepted]
    assert len(accepted) == 1, f"{len(accepted)} of 5 accepted"
    response = wait_for(accepted[0].get_result_async(), 120.0, "the accepted task")
    assert response.status == GoalStatus.STATUS_SUCCEEDED, response.result.message


@pytest.mark.parametrize(
    ("budget", "expected"),
    [("max_decision_s:=0.000001", "decision over its budget"), ("max_task_s:=1.0", "task over its budget")],
)
def test_a_decision_or_a_task_over_its_budget_fails_saying_which(
    graph: Graph, test_node, budget: str, expected: str
) -> None:
    """The planner's budgets, set from config: its planner restarted with one of them tight."""
    planner = graph.nodes["planner"]
    planner.stop()
    planner.params = (budget,)
    planner.start()
    try:
        planner.wait_ready()
        call = ActionCall(
            test_node, RunTask, f"/{NS}/run_task", RunTask.Goal(task="stack", seed=1, reset=True)
        )
        status, result = call.result(120.0)
        assert status == GoalStatus.STATUS_ABORTED and expected in result.message, result.message
        assert budget.split(":=")[0] in result.message
    finally:
        planner.stop()
        planner.params = ()
        planner.start()
        planner.wait_ready()


def test_huge_and_unbounded_inputs_are_refused_with_short_clear_messages(graph: Graph, test_node) -> None:
    call = ActionCall(test_node, RunTask, f"/{NS}/run_task", RunTask.Goal(instruction="stack " * 1000))
    status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and "max_instruction_chars" in result.message
    assert len(result.message) < 200
    for goal, expected in (
        (subgoal("reach", "red_block", timeout_s=1e308), "max_timeout_s"),
        (subgoal("x" * 10_000, "red_block"), "max_name_chars"),
        (subgoal("reach", "y" * 10_000), "max_name_chars"),
    ):
        call = ActionCall(test_node, ExecuteSubgoal, f"/{NS}/execute_subgoal", goal)
        status, result = call.result(DISCOVERY_S)
        assert status == GoalStatus.STATUS_ABORTED and expected in result.message
        assert len(result.message) < 300, len(result.message)  # never the 10 kB name echoed back


def stamped(node, vz: float, offset_s: float | None) -> TwistStamped:
    """A twist stamped `offset_s` from now by the node's clock; None: stamp 0."""
    msg = TwistStamped()
    if offset_s is not None:
        ns = node.get_clock().now().nanoseconds + round(offset_s * 1e9)
        msg.header.stamp = Time(sec=ns // 10**9, nanosec=ns % 10**9)
    msg.twist.linear.z = vz
    return msg


def test_unstamped_stale_and_future_twists_do_not_move_the_arm(graph: Graph, test_node) -> None:
    scene = SceneWatch(test_node, f"/{NS}/scene_state")
    pub = test_node.create_publisher(TwistStamped, f"/{NS}/cmd_twist", 10)
    wait_until(lambda: pub.get_subscription_count() > 0, DISCOVERY_S, "the bridge to subscribe to cmd_twist")
    bridge = graph.nodes["sim_bridge"]

    def send(offset_s: float | None, vz: float = 0.1, n: int = 20) -> np.ndarray:
        start = scene.ee()
        for _ in range(n):
            pub.publish(stamped(test_node, vz, offset_s))
            scene.wait_new(2)
        return scene.ee() - start

    for offset_s, reason in ((None, "stamp 0"), (-3600.0, "s ago, older than"), (3600.0, "in the future")):
        before = bridge.output().count(reason)
        assert np.linalg.norm(send(offset_s)) < 2e-3, reason
        logged = lambda r=reason, b=before: bridge.output().count(r) > b  # noqa: E731
        wait_until(logged, 10, f"the bridge to log {reason!r}")
        assert bridge.output().count(reason) == before + 1, "twenty refusals in a burst, logged once"
        send(0.0, vz=0.0, n=2)  # an accepted twist ends the burst
    assert send(0.0)[2] > 0.01  # a fresh stamp moves the arm: the refusals above can fail


def test_an_exception_in_a_control_tick_stops_the_arm_and_aborts_with_its_text(
    ros_env, tmp_path: Path, test_node
) -> None:
    """Regression: the goal aborted with an empty message and the traceback went only to the log."""
    bad = policy_failing_on_real_goals(SHIPPED_SKILLS, tmp_path / "bad")
    ns = f"{NS}_tick"
    nodes = [
        NodeProcess("sim_bridge", ns, ros_env, tmp_path, ()),
        NodeProcess("controller", ns, ros_env, tmp_path, ("policy:=onnx", f"model_dir:={bad}")),
    ]
    for node in nodes:
        node.start()
    try:
        for node in nodes:
            node.wait_ready()
        twists: list[TwistStamped] = []
        heard = test_node.create_subscription(TwistStamped, f"/{ns}/cmd_twist", twists.append, 10)
        scene_topic = f"/{ns}/scene_state"
        wait_until(lambda: test_node.count_subscribers(scene_topic) > 0, DISCOVERY_S, "a controller")
        wait_until(
            lambda: heard.get_publisher_count() > 0, DISCOVERY_S, "the controller's cmd_twist publisher"
        )
        # The stop is published once, volatile, and the controller's writer may match this reader after
        # this side already sees it (discovery is asymmetric; CI lost the first stop twice). Every goal
        # fails on its first tick, so every twist heard is a stop: repeat the failing goal until one comes.
        for _ in range(STOP_ATTEMPTS):
            call = ActionCall(
                test_node, ExecuteSubgoal, f"/{ns}/execute_subgoal", subgoal("reach", "red_block")
            )
            status, result = call.result(DISCOVERY_S)
            assert status == GoalStatus.STATUS_ABORTED, nodes[1].output()
            assert "control tick raised" in result.message and "out of data bounds" in result.message
            if becomes_true(lambda: bool(twists), STOP_WAIT_S):
                break
        assert twists, f"no stop command after {STOP_ATTEMPTS} aborted goals"
        last = twists[-1].twist.linear
        assert (last.x, last.y, last.z) == (0.0, 0.0, 0.0)
    finally:
        for node in nodes:
            node.stop()
