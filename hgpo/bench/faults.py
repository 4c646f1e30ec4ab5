"""`hgpo bench faults`: each node of the graph SIGKILLed mid-subgoal, then restarted alone.

The bridge, controller and planner run as separate processes (the launch file's nodes, with its YAML) in a
DDS domain of their own: the sim graph (sim_bridge) for the planner, controller and sim_bridge, the real-arm
graph with fake hardware (arm_bridge and fake_arm, real.launch.xml's nodes) for arm_bridge. For each victim a
task is sent through `RunTask`; once the arm moves, the victim is killed with SIGKILL. Measured from the
kill: when the graph noticed (the controller's SubgoalStatus or the planner's RunTask result, whichever
reports that fault), when the arm stood still (the bridge's SceneState; the fake arm's joint states when the
bridge is the victim), and what the RunTask caller heard (a caller as `run_task` is: it gives up on a planner
silent for 1 s). The victim is then restarted, and only it; the next task must succeed.
`tests/ros/test_faults.py` runs the same scenarios with generous bounds; exact times are here.
"""

from __future__ import annotations

import argparse
import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hgpo.bench.arguments import add_graph_arguments
from hgpo.bench.report import table, write_json
from ros_nodes.local_graph import init_local_ros, local_graph_env

if TYPE_CHECKING:  # rclpy is imported only when the benchmark runs
    from rclpy.node import Node

CONFIG = Path(__file__).resolve().parents[2] / "launch" / "config"
SIM_VICTIMS = ("planner", "controller", "sim_bridge")
VICTIMS = (*SIM_VICTIMS, "arm_bridge")  # arm_bridge: on the real-arm graph with fake hardware
READY = {
    "sim_bridge": "stepping at",
    "arm_bridge": " Hz; joints ",
    "fake_arm": "fake hardware:",
    "controller": " Hz",
    "planner": "ready; decisions to",
}
"""A line each node logs when it is up (its constructor's last)."""
DETECTED = {
    "planner": "sent no heartbeat",  # the controller's SubgoalStatus
    "controller": "stopped answering",  # the planner's RunTask result
    "sim_bridge": "no SceneState",  # the controller's SubgoalStatus
    "arm_bridge": "no SceneState",
}
# The fake arm's topics relative, so that the real-arm graph lives in its namespace as the sim graph does.
HARDWARE = (
    "joint_states_topic:=joint_states",
    "command_topic:=commands",
    "gripper_topic:=gripper",
    "perception_topic:=objects",
)
ARM_TASK = "reach"  # the fake arm moves no objects: reach is the task that can succeed on it
START_S = 60.0  # a node's start-up on a loaded 2-core machine: imports, model, DDS discovery
MOVING_SPEED = 0.02  # m/s: the arm is moving when its end effector is this fast
RUNNING_S = 0.3  # ... under a subgoal that started at least this long ago
STILL_M, STILL_FOR_S = 0.001, 0.3  # ... and still once it moves less than 1 mm in 0.3 s
OBSERVE_S = 20.0  # after a kill: the caller hears within the planner's peer_timeout_s (10 s) + detection
PLANNER_SILENCE_S = 1.0  # the RunTask caller's bound on the planner's silence (run_task's planner_silence_s)


@dataclass(frozen=True)
class BenchFaultsConfig:
    faults: tuple[str, ...] = VICTIMS
    trials: int = 3  # kills of each node
    task: str = "stack"  # killed during this task: a pick lasts seconds (the arm graph: reach)
    next_task: str = "reach"  # must succeed after the restart (the arm graph: reach)
    domain_id: int = 1 + os.getpid() % 100
    json: Path = Path("runs/bench/faults.json")
    params: dict[str, tuple[str, ...]] = field(default_factory=dict)  # extra `name:=value` per node


class NodeProcess:
    """One node of the graph as its own process, its output in a log file; restartable."""

    def __init__(
        self, name: str, namespace: str, env: dict[str, str], log_dir: Path, params: tuple[str, ...]
    ):
        self.name, self.namespace, self.env, self.log_dir, self.params = name, namespace, env, log_dir, params
        self.starts = 0
        self.proc: subprocess.Popen[bytes] | None = None
        self.log_path = log_dir / f"{name}.log"

    def start(self) -> None:
        self.starts += 1
        self.log_path = self.log_dir / f"{self.name}.{self.starts}.log"
        args = [
            os.path.join(sys.prefix, "lib", "hgpo", self.name),
            "--ros-args",
            "-r",
            f"__ns:=/{self.namespace}",
        ]
        args += ["--params-file", str(CONFIG / f"{self.name}.yaml")]
        if self.name == "controller":
            args += ["-p", "policy:=expert"]
        for param in self.params:
            args += ["-p", param]
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                args, env=self.env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )

    def output(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def wait_ready(self, timeout_s: float = START_S) -> None:
        deadline = time.monotonic() + timeout_s
        while READY[self.name] not in self.output():
            assert self.proc is not None
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"{self.name} did not come up:\n{self.output()}")
            threading.Event().wait(0.1)

    def kill(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self) -> int:
        """Ctrl-C, then SIGKILL if it does not end in time; its exit code."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                return self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        return self.proc.wait()


class Graph:
    """The graph's nodes under one namespace, each started from the launch file's YAML: sim_bridge,
    controller and planner; or, with bridge="arm_bridge", fake_arm (the hardware), arm_bridge, controller
    and planner as real.launch.xml starts them with use_fake_hardware:=true."""

    def __init__(
        self,
        namespace: str,
        env: dict[str, str],
        log_dir: Path,
        params: dict[str, tuple[str, ...]],
        bridge: str = "sim_bridge",
    ):
        log_dir.mkdir(parents=True, exist_ok=True)
        self.namespace = namespace
        defaults: dict[str, tuple[str, ...]] = {}
        if bridge == "arm_bridge":
            reset = f"world_reset_service:=/{namespace}/fake_arm/reset_world"
            defaults = {
                "fake_arm": (*HARDWARE, f"task:={ARM_TASK}"),
                "arm_bridge": (*HARDWARE, reset),
            }
        names = ("fake_arm", "arm_bridge") if bridge == "arm_bridge" else (bridge,)
        self.nodes = {
            name: NodeProcess(name, namespace, env, log_dir, defaults.get(name, ()) + params.get(name, ()))
            for name in (*names, "controller", "planner")
        }
        for node in self.nodes.values():
            node.start()
        for node in self.nodes.values():
            node.wait_ready()

    def restart(self, name: str) -> None:
        self.nodes[name].start()
        self.nodes[name].wait_ready()

    def stop(self) -> dict[str, int]:
        return {name: node.stop() for name, node in self.nodes.items()}


class Probe:
    """The bench's eyes on the graph: the end effector (SceneState), SubgoalStatus, a RunTask client."""

    def __init__(self, node: Node, namespace: str) -> None:
        from hgpo_msgs.action import RunTask
        from hgpo_msgs.msg import SceneState, SubgoalStatus
        from rclpy.action import ActionClient
        from sensor_msgs.msg import JointState

        self.node = node
        self.scenes: list[tuple[float, float, np.ndarray]] = []  # (received, stamp, ee position)
        self.statuses: list[tuple[float, int, str]] = []  # (received, state, message)
        self.joints: list[tuple[float, np.ndarray]] = []  # (received, arm joint positions): the fake arm's
        self._lock = threading.Lock()
        ns = f"/{namespace}"
        node.create_subscription(SceneState, f"{ns}/scene_state", self._on_scene, 100)
        node.create_subscription(JointState, f"{ns}/joint_states", self._on_joints, 100)
        node.create_subscription(SubgoalStatus, f"{ns}/subgoal_status", self._on_status, 100)
        self.client: Any = ActionClient(node, RunTask, f"{ns}/run_task")
        self._status_topic = f"{ns}/subgoal_status"
        self._scene_topic = f"{ns}/scene_state"

    def _on_scene(self, msg: Any) -> None:
        p, stamp = msg.ee_pose.position, msg.header.stamp
        with self._lock:
            self.scenes.append(
                (time.monotonic(), stamp.sec + stamp.nanosec * 1e-9, np.array([p.x, p.y, p.z]))
            )

    def _on_joints(self, msg: Any) -> None:
        with self._lock:
            self.joints.append((time.monotonic(), np.array(msg.position)))

    def _on_status(self, msg: Any) -> None:
        with self._lock:
            self.statuses.append((time.monotonic(), int(msg.state), str(msg.message)))

    def discovered(self, timeout_s: float = START_S) -> None:
        """The graph's topics matched, and the planner's RunTask server."""
        deadline = time.monotonic() + timeout_s
        for topic in (self._scene_topic, self._status_topic):
            while self.node.count_publishers(topic) == 0:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"no publisher of {topic} after {timeout_s} s")
                threading.Event().wait(0.05)
        if not self.client.wait_for_server(timeout_sec=max(0.0, deadline - time.monotonic())):
            raise RuntimeError(f"no RunTask server after {timeout_s} s")

    def speed(self, since: float) -> list[tuple[float, float]]:
        """(time received, end-effector speed between stamps) of each scene received after `since`."""
        with self._lock:
            scenes = [s for s in self.scenes if s[0] > since]
        return [
            (t1, float(np.linalg.norm(p1 - p0) / max(s1 - s0, 1e-3)))
            for (_, s0, p0), (t1, s1, p1) in itertools.pairwise(scenes)
        ]

    def moving(self, since: float) -> bool:
        """The arm moves under a subgoal that has run for RUNNING_S (the latest SubgoalStatus is ACTIVE):
        not still coasting from the one before, and with its client's first heartbeat long delivered."""
        from hgpo_msgs.msg import SubgoalStatus

        with self._lock:
            last = self.statuses[-1] if self.statuses else None
        if last is None or last[1] != SubgoalStatus.ACTIVE or time.monotonic() - last[0] < RUNNING_S:
            return False
        recent = self.speed(max(since, last[0], time.monotonic() - 0.2))
        return bool(recent) and recent[-1][1] > MOVING_SPEED

    def still_after(self, t0: float, joints: bool = False) -> float | None:
        """Seconds from t0 until the end effector stood still: moved less than STILL_M over the next
        STILL_FOR_S (positions, not a speed from noisy stamps); None if it never did. `joints`: the fake
        arm's joint positions instead (less than STILL_M rad), for when the bridge is gone."""
        with self._lock:
            scenes = (
                [(t, p) for t, p in self.joints if t > t0]
                if joints
                else [(t, p) for t, _, p in self.scenes if t > t0]
            )
        for i, (t, p) in enumerate(scenes):
            if scenes[-1][0] < t + STILL_FOR_S:
                return None
            window = [q for s, q in scenes[i:] if s <= t + STILL_FOR_S]
            if max(float(np.linalg.norm(q - p)) for q in window) < STILL_M:
                return t - t0
        return None

    def status_after(self, t0: float, text: str) -> tuple[float, str] | None:
        with self._lock:
            return next(((t - t0, m) for t, _state, m in self.statuses if t > t0 and text in m), None)

    def send_task(self, task: str, seed: int, feedback: Any = None) -> Any:
        from hgpo_msgs.action import RunTask

        from ros_nodes.waiting import send_goal

        # resent every second (a planner just restarted drops a goal that comes before it matched us)
        goal = RunTask.Goal(task=task, seed=seed, reset=True)
        handle = send_goal(self.client, goal, 1.0, "planner", feedback, attempts=30)
        if not handle.accepted:
            raise RuntimeError(f"the planner rejected task {task!r}")
        return handle.get_result_async()


class Caller:
    """A RunTask caller as `run_task` is one: it waits for the result while the planner's feedback comes,
    and gives up on a planner silent for PLANNER_SILENCE_S. `heard`: (when, success, message)."""

    def __init__(self, probe: Probe, task: str, seed: int) -> None:
        from ros_nodes.liveness import ServerWatch

        self.watch = ServerWatch(PLANNER_SILENCE_S, 10.0)
        self.heard: tuple[float, bool, str] | None = None
        self._result = probe.send_task(task, seed, self.watch.heard)
        self._thread = threading.Thread(target=self._wait, daemon=True)
        self._thread.start()

    def _wait(self) -> None:
        from ros_nodes.liveness import wait_for_live_result
        from ros_nodes.waiting import PeerTimeoutError

        try:
            response = wait_for_live_result(self._result, self.watch, START_S + OBSERVE_S, "the planner")
            self.heard = (time.monotonic(), bool(response.result.success), str(response.result.message))
        except PeerTimeoutError as err:
            self.heard = (time.monotonic(), False, str(err))


def wait(predicate: Any, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            return False
        threading.Event().wait(0.01)
    return True


def moving_task(probe: Probe, task: str) -> Caller:
    """`task` sent and its arm seen moving; a task that ends before the arm moves (its first reset lost on a
    graph just started) is sent again, once."""
    for attempt in range(2):
        sent, call = time.monotonic(), Caller(probe, task, seed=1)
        moved = False

        def moved_or_ended(sent: float = sent, call: Caller = call) -> bool:
            nonlocal moved
            moved = probe.moving(sent)
            return moved or call.heard is not None

        wait(moved_or_ended, START_S)
        if moved:
            return call
        if attempt or call.heard is None:
            break
    ended = f"; the task ended: {call.heard[2]!r}" if call.heard else ""
    raise RuntimeError(f"the arm never moved during {task!r}{ended}")


def inject(graph: Graph, probe: Probe, victim: str, task: str = "stack", next_task: str = "reach") -> dict:
    """Kill `victim` while the arm moves during `task`, restart it alone, run `next_task`: the record."""
    from ros_nodes.waiting import PeerTimeoutError, wait_for

    probe.discovered()
    call = moving_task(probe, task)
    killed = time.monotonic()
    graph.nodes[victim].kill()
    detected = lambda: (  # noqa: E731
        call.heard is not None
        if victim == "controller"
        else probe.status_after(killed, DETECTED[victim]) is not None
    )
    wait(lambda: detected() and call.heard is not None, OBSERVE_S)
    caller: dict[str, Any] | None = None
    detection = probe.status_after(killed, DETECTED[victim])
    if call.heard is not None:
        when, success, message = call.heard
        caller = {"after_s": when - killed, "success": success, "message": message}
        # The controller reports a lost client or bridge, the planner a lost controller. A bridge killed
        # just as a subgoal ended is noticed by the planner instead, as it waits for the next scene; and
        # when a kill stalls DDS between the others (see docs/faults.md), the caller's report may be the
        # first and name another node: it counts, and `detected_by` says what was said.
        if victim == "controller" or (detection is None and not success):
            detection = (when - killed, message)
    # the simulated arm dies with its bridge; the fake arm outlives arm_bridge, and stops on its own
    arm_stopped = None if victim == "sim_bridge" else probe.still_after(killed, victim == "arm_bridge")
    graph.restart(victim)
    probe.discovered()
    started = time.monotonic()
    accepted_s = None
    try:
        result = probe.send_task(next_task, seed=0)
        accepted_s = time.monotonic() - started  # a first goal the restarted node dropped was resent by now
        outcome = wait_for(result, 180.0, "the next task").result
        success, message = bool(outcome.success), str(outcome.message)
    except PeerTimeoutError as err:  # a figure too: the restarted graph did not take the task
        success, message = False, str(err)
    return {
        "victim": victim,
        "detected_s": None if detection is None else detection[0],
        "detected_by": None if detection is None else detection[1],
        "arm_stopped_s": arm_stopped,
        "caller": caller,
        "next_task": {
            "task": next_task,
            "success": success,
            "message": message,
            "accepted_s": accepted_s,
            "wall_s": time.monotonic() - started,
        },
    }


def run(config: BenchFaultsConfig) -> list[dict]:
    import rclpy

    from ros_nodes.background_spin import BackgroundSpin

    env = local_graph_env(config.domain_id)
    log_dir = config.json.with_suffix(".logs")
    init_local_ros(config.domain_id)
    node = rclpy.create_node("hgpo_bench_faults")
    spin = BackgroundSpin(node)
    records = []
    try:
        for bridge in ("sim_bridge", "arm_bridge"):
            victims = [v for v in config.faults if (v == "arm_bridge") == (bridge == "arm_bridge")]
            if not victims:
                continue
            sim = bridge == "sim_bridge"
            task, next_task = (config.task, config.next_task) if sim else (ARM_TASK, ARM_TASK)
            namespace = "hgpo" if bridge == "sim_bridge" else "hgpo_arm"
            graph = Graph(namespace, env, log_dir / bridge, config.params, bridge)
            try:
                probe = Probe(node, namespace)
                for _ in range(config.trials):
                    for victim in victims:
                        records.append(inject(graph, probe, victim, task, next_task))
                        print(f"  {victim}: {summary(records[-1])}", flush=True)
            finally:
                graph.stop()
    finally:
        spin.close()
        node.destroy_node()
        rclpy.try_shutdown()
    return records


def summary(record: dict) -> str:
    def s(value: float | None) -> str:
        return "-" if value is None else f"{value:.2f} s"

    caller = record["caller"]
    heard = "nothing" if caller is None else f"{s(caller['after_s'])}: {caller['message']}"
    return (
        f"detected {s(record['detected_s'])}, arm still {s(record['arm_stopped_s'])}, caller heard {heard}; "
        f"next task {'ok' if record['next_task']['success'] else 'FAILED'}"
    )


def stats(records: list[dict], victim: str) -> dict[str, Any]:
    """Median and max of each time over the kills of one node; how many next tasks succeeded."""
    runs = [r for r in records if r["victim"] == victim]

    def spread(values: list[float | None]) -> dict[str, Any] | None:
        known = [v for v in values if v is not None]
        if len(known) < len(values) or not known:
            return None  # some kill was never followed by it
        return {"median": float(np.median(known)), "max": float(max(known))}

    return {
        "detected_s": spread([r["detected_s"] for r in runs]),
        "arm_stopped_s": None if victim == "sim_bridge" else spread([r["arm_stopped_s"] for r in runs]),
        "caller_s": spread([(r["caller"] or {}).get("after_s") for r in runs]),
        "next_task": f"{sum(r['next_task']['success'] for r in runs)}/{len(runs)}",
    }


def cell(value: dict[str, float] | None) -> str:
    return "-" if value is None else f"{value['median']:.2f} ({value['max']:.2f})"


def main(argv: list[str]) -> int:
    default = BenchFaultsConfig()
    parser = argparse.ArgumentParser(prog="hgpo bench faults", description=__doc__)
    parser.add_argument("--faults", nargs="+", choices=VICTIMS, default=list(default.faults), metavar="NODE")
    parser.add_argument("--trials", type=int, default=default.trials, help="kills per node (%(default)s)")
    add_graph_arguments(parser, default.json, default.domain_id)
    args = parser.parse_args(argv)
    if args.trials < 1:
        parser.error("--trials must be at least 1")
    config = BenchFaultsConfig(
        faults=tuple(args.faults), trials=args.trials, domain_id=args.domain_id, json=args.json
    )
    config.json.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"Starting the sim graph in ROS domain {config.domain_id}; killing {', '.join(config.faults)}",
        flush=True,
    )
    try:
        records = run(config)
    except (RuntimeError, TimeoutError) as err:  # PeerTimeoutError is a RuntimeError
        print(f"hgpo bench faults: error: {err}", file=sys.stderr)
        return 2

    by_node = {victim: stats(records, victim) for victim in config.faults}
    results = {"faults": records, "summary": by_node}
    print(
        f"\nSIGKILL mid-subgoal, then a restart of that node alone (s from the kill, median (max) of "
        f"{config.trials})"
    )
    print(
        table(
            ["killed", "detected", "arm still", "caller heard", "next task"],
            [
                [
                    victim,
                    *(cell(row[key]) for key in ("detected_s", "arm_stopped_s", "caller_s")),
                    row["next_task"],
                ]
                for victim, row in by_node.items()
            ],
        )
    )
    for r in records:
        print(f"{r['victim']}: {r['detected_by']}")
    write_json(config.json, "faults", config, results)
    print(f"\nwrote {config.json}")
    return 0 if all(r["next_task"]["success"] and r["detected_s"] is not None for r in records) else 1
