"""`hgpo bench graph`: the ROS graph as `make sim` runs it, measured from outside like `ros2 topic hz`.

Launches `sim.launch.xml` (without run_task) in a DDS domain of its own, sends tasks through `RunTask`,
and reads the header stamps of what arrives: the bridge's `scene_state` rate (its achieved tick rate and
hence the real-time factor, each tick being 1/rate_hz simulated seconds), the controller's tick rate and
jitter from its `cmd_twist` stamps while subgoals run, each task's wall time, each node's CPU use,
idle (the graph up, no task) and while the tasks run, and the planner's decision latencies from the
decisions.jsonl it writes under the launch's ROS log folder (a task's first decision apart: nothing was
executing before it, so `anticipate` cannot have prefilled it).

Each task is one RunTask goal that resets the scene itself. By default it is sent as soon as the last task
ended, so its first decision follows the reset at once. `--pause-s S` is closer to a robot's use, where a
person looks at the scene set up and then gives the instruction: the bench first resets the scene to the
task's seeded layout through the bridge, waits S seconds (the idle planner prefills the prompt of that
scene up to the instruction meanwhile), then sends the goal, whose own reset sets up the same layout again
(the same seed: the same scene text); the planner knows the task's goal as in the default mode.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from hgpo.bench.arguments import add_graph_arguments
from hgpo.bench.report import table, write_json
from ros_nodes.local_graph import init_local_ros, local_graph_env
from sim.tabletop import TASKS

if TYPE_CHECKING:  # rclpy is imported only when the benchmark runs
    from rclpy.client import Client
    from rclpy.node import Node

BRIDGE_RATE_HZ = 100.0  # launch/config/sim_bridge.yaml
CONTROL_RATE_HZ = 25.0  # launch/config/controller.yaml
IDLE_WINDOW_S = 10.0  # the graph up and no task: what each node costs while waiting


@dataclass(frozen=True)
class BenchGraphConfig:
    tasks: tuple[str, ...] = ("stack", "sort")
    seeds: int = 3  # seeds 0..seeds-1 per task
    domain_id: int = 1 + os.getpid() % 100
    json: Path = Path("runs/bench/graph.json")
    control_rate_hz: float = CONTROL_RATE_HZ  # the controller's rate (controller.yaml's, unless changed)
    launch_args: tuple[str, ...] = ()  # extra `name:=value` arguments of sim.launch.xml, e.g. policy:=onnx
    pause_s: float = 0.0  # > 0: reset through the bridge and wait this long before each task (see above)


def config_dir_with_control_rate(rate_hz: float, folder: Path) -> Path:
    """A copy of launch/config whose controller runs at `rate_hz`: the launch file's `config_dir`."""
    import yaml

    source = Path(__file__).resolve().parents[2] / "launch" / "config"
    folder.mkdir(parents=True, exist_ok=True)
    for path in source.glob("*.yaml"):
        data = yaml.safe_load(path.read_text())
        if path.name == "controller.yaml":
            data["/**/controller"]["ros__parameters"]["control_rate_hz"] = float(rate_hz)
        (folder / path.name).write_text(yaml.safe_dump(data))
    return folder


def interval_stats(intervals: np.ndarray, nominal_hz: float) -> dict[str, float]:
    """Rate and jitter (|interval - period|) of a stream of message intervals."""
    if len(intervals) < 2:
        nan = float("nan")
        return {
            "rate_hz": nan,
            "jitter_p50_ms": nan,
            "jitter_p99_ms": nan,
            "interval_p1_ms": nan,
            "interval_p99_ms": nan,
            "n": 0,
        }
    jitter = np.abs(intervals - 1.0 / nominal_hz) * 1e3
    return {
        "rate_hz": float(1.0 / intervals.mean()),
        "jitter_p50_ms": float(np.percentile(jitter, 50)),
        "jitter_p99_ms": float(np.percentile(jitter, 99)),
        "interval_p1_ms": float(np.percentile(intervals, 1) * 1e3),
        "interval_p99_ms": float(np.percentile(intervals, 99) * 1e3),
        "n": len(intervals),
    }


def control_intervals(events: list[tuple[str, float]]) -> np.ndarray:
    """Intervals between the controller's ticks, from the stamps of its twists while a subgoal runs.

    `events` is what arrived, in order: ("twist", header stamp) and ("active" | "done", 0). The twist just
    before "done" is the stop command sent when the subgoal ended, not a tick, so it is left out.
    """
    intervals: list[float] = []
    window: list[float] | None = None
    for kind, stamp in events:
        if kind == "active":
            window = []
        elif kind == "twist" and window is not None:
            window.append(stamp)
        elif kind == "done" and window is not None:
            intervals.extend(np.diff(window[:-1]))
            window = None
    return np.asarray(intervals)


def decision_latencies(folder: Path) -> dict[str, dict[str, float]]:
    """p50 / p95 (ms) and count of the planner's decisions in every decisions.jsonl under `folder`: all of
    them, each task's first (step 0) and the later ones; with a model's prefix cache, also the mean prompt
    tokens a decision's first call reused; empty when the planner logged none."""
    steps, latencies, reused = [], [], []
    for path in sorted(folder.rglob("decisions.jsonl")):
        for line in path.read_text().splitlines():
            if line.strip():
                record = json.loads(line)
                steps.append(int(record["step"]))
                latencies.append(float(record["latency_ms"]))
                attempts = (record.get("trace") or {}).get("attempts") or [{}]
                reused.append(float(attempts[0].get("reused_tokens", "nan")))
    step, ms, tokens = np.asarray(steps), np.asarray(latencies), np.asarray(reused)
    groups = {"all": step >= 0, "first": step == 0, "later": step > 0}
    return {
        name: {
            "n": int(chosen.sum()),
            "p50_ms": float(np.percentile(ms[chosen], 50)),
            "p95_ms": float(np.percentile(ms[chosen], 95)),
            **(
                {"reused_tokens_mean": float(tokens[chosen].mean())}
                if not np.isnan(tokens[chosen]).any()
                else {}
            ),
        }
        for name, chosen in groups.items()
        if chosen.any()
    }


def _wait_for_publishers(node: Node, topics: tuple[str, ...], timeout_s: float) -> None:
    """Discovery before measuring: messages sent before a subscription is matched are not received."""
    deadline = time.monotonic() + timeout_s
    missing = list(topics)
    while missing:
        missing = [t for t in missing if node.count_publishers(node.resolve_topic_name(t)) == 0]
        if missing and time.monotonic() > deadline:
            raise RuntimeError(f"no publisher of {', '.join(missing)} after {timeout_s} s")
        threading.Event().wait(0.05)


class NodeCpu:
    """CPU time of each launched node (user + system, all threads), as a % of one core over a window."""

    def __init__(self, launch_pid: int) -> None:
        import psutil

        # A node's process is named after its executable (`.venv/lib/hgpo/controller`, run by its shebang).
        self._nodes = {p.name(): p for p in psutil.Process(launch_pid).children()}
        self._start: tuple[float, dict[str, float]] = self._read()

    def _read(self) -> tuple[float, dict[str, float]]:
        return time.monotonic(), {name: sum(process.cpu_times()[:2]) for name, process in self._nodes.items()}

    def percent(self) -> dict[str, float]:
        """% of one core each node used since the last call (or since construction), and restart."""
        (t0, before), (t1, after) = self._start, self._read()
        self._start = (t1, after)
        return {name: 100.0 * (after[name] - before[name]) / (t1 - t0) for name in sorted(after)}


def _stop(launch: subprocess.Popen) -> None:
    """Ctrl-C to the launched graph, then SIGKILL to its process group if it does not end in time."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(launch.pid, signal.SIGINT)
        try:
            launch.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(launch.pid, signal.SIGKILL)
            launch.wait()


def run(config: BenchGraphConfig) -> dict:
    import rclpy
    from geometry_msgs.msg import TwistStamped
    from hgpo_msgs.action import RunTask
    from hgpo_msgs.msg import SceneState, SubgoalStatus
    from hgpo_msgs.srv import ResetScene
    from rclpy.action import ActionClient

    from ros_nodes.background_spin import BackgroundSpin
    from ros_nodes.waiting import call_service, send_goal, wait_for

    env = local_graph_env(config.domain_id)
    ros_log = Path(config.json).with_suffix(".ros_log")  # the nodes' logs and the planner's decisions.jsonl
    shutil.rmtree(ros_log, ignore_errors=True)
    env["ROS_LOG_DIR"] = str(ros_log.resolve())
    log = open(Path(config.json).with_suffix(".launch.log"), "w")  # noqa: SIM115 (closed below)
    args = ["run_task:=false", "planner:=expert", *config.launch_args]
    if config.control_rate_hz != CONTROL_RATE_HZ:
        folder = config_dir_with_control_rate(
            config.control_rate_hz, Path(config.json).with_suffix(".config")
        )
        args.append(f"config_dir:={folder}")
    launch = subprocess.Popen(
        [sys.executable, "-m", "hgpo.cli", "launch", "sim", *args],
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    init_local_ros(config.domain_id)
    node = rclpy.create_node("hgpo_bench_graph", namespace="hgpo")
    scene_stamps: list[float] = []
    events: list[tuple[str, float]] = []

    def stamp(msg: SceneState | TwistStamped) -> float:
        return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9

    def on_status(msg: SubgoalStatus) -> None:
        events.append(("active" if msg.state == SubgoalStatus.ACTIVE else "done", 0.0))

    node.create_subscription(SceneState, "scene_state", lambda m: scene_stamps.append(stamp(m)), 100)
    node.create_subscription(TwistStamped, "cmd_twist", lambda m: events.append(("twist", stamp(m))), 100)
    node.create_subscription(SubgoalStatus, "subgoal_status", on_status, 100)
    spin = BackgroundSpin(node)
    client: ActionClient[RunTask.Goal, RunTask.Result, RunTask.Feedback] = ActionClient(
        node, RunTask, "run_task"
    )
    reset_client: Client[ResetScene.Request, ResetScene.Response] = node.create_client(
        ResetScene, "reset_scene"
    )

    def set_up_and_pause(name: str, seed: int) -> None:
        response = call_service(reset_client, ResetScene.Request(task=name, seed=seed), 10.0, "reset_scene")
        if not response.success:
            raise RuntimeError(f"reset to {name} seed {seed} refused: {response.message}")
        threading.Event().wait(config.pause_s)  # the benchmark's pause: a person giving the instruction

    episodes = []
    try:
        if not client.wait_for_server(timeout_sec=60.0):
            raise RuntimeError(f"the graph did not come up; see {log.name}")
        _wait_for_publishers(node, ("scene_state", "cmd_twist", "subgoal_status"), timeout_s=30.0)
        cpu = NodeCpu(launch.pid)
        threading.Event().wait(IDLE_WINDOW_S)
        cpu_idle = cpu.percent()
        for name in config.tasks:
            for seed in range(config.seeds):
                if config.pause_s:
                    set_up_and_pause(name, seed)
                start = time.monotonic()
                handle = send_goal(client, RunTask.Goal(task=name, seed=seed, reset=True), 10.0, "planner")
                result = wait_for(handle.get_result_async(), 300.0, "planner").result
                episodes.append(
                    {
                        "task": name,
                        "seed": seed,
                        "success": bool(result.success),
                        "subgoals": int(result.subgoals_executed),
                        "wall_s": time.monotonic() - start,
                    }
                )
                print(
                    f"  {name:<10} seed {seed}: {'ok' if result.success else 'FAILED'} "
                    f"({episodes[-1]['wall_s']:.1f} s)",
                    flush=True,
                )
        cpu_tasks = cpu.percent()
    finally:
        spin.close()
        node.destroy_node()
        rclpy.try_shutdown()
        _stop(launch)
        log.close()
    # Scenes stop between tasks only for a reset; longer gaps are the bench's own pauses.
    scene_intervals = np.diff(np.asarray(scene_stamps))
    bridge = interval_stats(scene_intervals[scene_intervals < 3.0 / BRIDGE_RATE_HZ], BRIDGE_RATE_HZ)
    return {
        "episodes": episodes,
        "bridge_scene_state": {**bridge, "real_time_factor": bridge["rate_hz"] / BRIDGE_RATE_HZ},
        "controller_cmd_twist": interval_stats(control_intervals(events), config.control_rate_hz),
        "cpu_percent": {name: {"idle": cpu_idle[name], "tasks": cpu_tasks[name]} for name in cpu_idle},
        "planner_decisions": decision_latencies(ros_log),
    }


def main(argv: list[str]) -> int:
    default = BenchGraphConfig()
    parser = argparse.ArgumentParser(prog="hgpo bench graph", description=__doc__)
    parser.add_argument(
        "--tasks", nargs="+", choices=sorted(TASKS), default=list(default.tasks), metavar="TASK"
    )
    parser.add_argument(
        "--seeds", type=int, default=default.seeds, help="seeds per task (default: %(default)s)"
    )
    add_graph_arguments(parser, default.json, default.domain_id)
    parser.add_argument(
        "--launch-args",
        nargs="+",
        default=list(default.launch_args),
        metavar="NAME:=VALUE",
        help="extra arguments of sim.launch.xml, e.g. record:=true to measure the recorder's cost",
    )
    parser.add_argument(
        "--pause-s",
        type=float,
        default=default.pause_s,
        metavar="S",
        help="before each task, set its scene up through the bridge and wait S seconds, as a person looks "
        "before giving the instruction (the idle planner prefills the scene's prompt meanwhile); default 0: "
        "each task's goal sent as soon as the last task ended",
    )
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if args.pause_s < 0:
        parser.error("--pause-s must be >= 0")
    config = BenchGraphConfig(
        tasks=tuple(args.tasks),
        seeds=args.seeds,
        domain_id=args.domain_id,
        json=args.json,
        launch_args=tuple(args.launch_args),
        pause_s=args.pause_s,
    )
    config.json.parent.mkdir(parents=True, exist_ok=True)
    print(
        f"Launching the sim graph in ROS domain {config.domain_id}; tasks {', '.join(config.tasks)}",
        flush=True,
    )
    try:
        results = run(config)
    except (RuntimeError, TimeoutError) as err:  # PeerTimeoutError is a RuntimeError
        print(f"hgpo bench graph: error: {err}", file=sys.stderr)
        return 2
    episodes = results["episodes"]
    print("\nTasks over DDS (bridge 100 Hz, controller 25 Hz)")
    print(
        table(
            ["task", "solved", "mean wall s"],
            [
                [
                    name,
                    f"{sum(e['success'] for e in eps)}/{len(eps)}",
                    float(np.mean([e["wall_s"] for e in eps])),
                ]
                for name in config.tasks
                for eps in [[e for e in episodes if e["task"] == name]]
            ],
        )
    )
    print("\nRates on the wire")
    rows = [
        [
            topic,
            *(
                r[key]
                for key in ("rate_hz", "jitter_p50_ms", "jitter_p99_ms", "interval_p1_ms", "interval_p99_ms")
            ),
            r["n"],
        ]
        for topic, r in (
            ("scene_state (bridge)", results["bridge_scene_state"]),
            ("cmd_twist (controller)", results["controller_cmd_twist"]),
        )
    ]
    print(
        table(
            [
                "topic",
                "rate Hz",
                "jitter p50 ms",
                "jitter p99 ms",
                "interval p1 ms",
                "interval p99 ms",
                "intervals",
            ],
            rows,
        )
    )
    print(f"bridge real-time factor: {results['bridge_scene_state']['real_time_factor']:.3f}")
    print(f"\nCPU per node, % of one core (idle: {IDLE_WINDOW_S:.0f} s with no task)")
    print(
        table(
            ["node", "idle", "tasks running"],
            [[name, use["idle"], use["tasks"]] for name, use in results["cpu_percent"].items()],
        )
    )
    if results["planner_decisions"]:
        print("\nPlanner decisions (its decisions.jsonl; first: each task's first decision)")
        print(
            table(
                ["decisions", "n", "p50 ms", "p95 ms", "reused prompt tokens (mean)"],
                [
                    [name, s["n"], s["p50_ms"], s["p95_ms"], s.get("reused_tokens_mean", "-")]
                    for name, s in results["planner_decisions"].items()
                ],
            )
        )
    write_json(config.json, "graph", config, results)
    print(f"\nwrote {config.json}")
    return 0 if all(e["success"] for e in episodes) else 1
