"""`hgpo bench soak --tasks N`: N tasks back to back through the sim graph: success, memory, lost results.

The graph is `hgpo bench faults`' (bridge, controller and planner as separate processes with the launch file's
YAML, expert planner and skills) in a DDS domain of its own. Tasks cycle through the tabletop tasks with seed
i. Each node's resident memory is read after the first task (imports and caches warm) and after the last; a
result that does not come within the task timeout is lost; a task the planner started more often than it was
sent (its log's "task:" lines) is duplicated.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from hgpo.bench.arguments import add_graph_arguments
from hgpo.bench.faults import SIM_VICTIMS as NODES
from hgpo.bench.faults import Graph, Probe
from hgpo.bench.report import table, write_json
from ros_nodes.local_graph import init_local_ros, local_graph_env

TASK_TIMEOUT_S = 180.0


@dataclass(frozen=True)
class BenchSoakConfig:
    tasks: int = 1000
    cycle: tuple[str, ...] = ("reach", "pick_place", "push", "stack")
    domain_id: int = 1 + os.getpid() % 100
    json: Path = Path("runs/bench/soak.json")


def rss_mb(graph: Graph) -> dict[str, float]:
    import psutil

    return {
        name: psutil.Process(node.proc.pid).memory_info().rss / 2**20
        for name, node in graph.nodes.items()
        if node.proc is not None
    }


def run(config: BenchSoakConfig) -> dict:
    import rclpy

    from ros_nodes.background_spin import BackgroundSpin
    from ros_nodes.waiting import PeerTimeoutError, wait_for

    env = local_graph_env(config.domain_id)
    init_local_ros(config.domain_id)
    node = rclpy.create_node("hgpo_bench_soak")
    spin = BackgroundSpin(node)
    graph = None
    episodes: list[dict] = []
    try:
        graph = Graph("hgpo", env, config.json.with_suffix(".logs"), {})
        probe = Probe(node, "hgpo")
        probe.discovered()
        rss_first: dict[str, float] = {}
        started = time.monotonic()
        for i in range(config.tasks):
            task = config.cycle[i % len(config.cycle)]
            t0 = time.monotonic()
            try:
                result = wait_for(probe.send_task(task, seed=i), TASK_TIMEOUT_S, f"task {i}").result
                episode = {"task": task, "seed": i, "success": bool(result.success), "lost": False}
            except PeerTimeoutError as err:
                episode = {"task": task, "seed": i, "success": False, "lost": True, "error": str(err)}
            except RuntimeError as err:  # refused: a failed task, not a lost result; the soak goes on
                episode = {"task": task, "seed": i, "success": False, "lost": False, "error": str(err)}
            episodes.append({**episode, "wall_s": time.monotonic() - t0})
            if i == 0:
                rss_first = rss_mb(graph)
            if (i + 1) % max(1, config.tasks // 20) == 0 or i + 1 == config.tasks:
                done = sum(e["success"] for e in episodes)
                print(f"  {i + 1}/{config.tasks} tasks, {done} succeeded", flush=True)
        wall_s = time.monotonic() - started
        rss_last = rss_mb(graph)
        planner_log = graph.nodes["planner"].output()
    finally:
        spin.close()
        node.destroy_node()
        rclpy.try_shutdown()
        if graph is not None:
            graph.stop()
    started_tasks = planner_log.count("]: task: ")
    return {
        "episodes": episodes,
        "wall_s": wall_s,
        "success_rate": sum(e["success"] for e in episodes) / len(episodes),
        "lost": sum(e["lost"] for e in episodes),
        "duplicated": max(0, started_tasks - len(episodes)),
        "rss_mb": {
            name: {
                "after_first": rss_first[name],
                "after_last": rss_last[name],
                "growth_percent": 100.0 * (rss_last[name] / rss_first[name] - 1.0),
                "growth_kb_per_task": 1024.0 * (rss_last[name] - rss_first[name]) / max(1, len(episodes) - 1),
            }
            for name in NODES
        },
    }


def main(argv: list[str]) -> int:
    default = BenchSoakConfig()
    parser = argparse.ArgumentParser(prog="hgpo bench soak", description=__doc__)
    parser.add_argument("--tasks", type=int, default=default.tasks, help="tasks to run (%(default)s)")
    add_graph_arguments(parser, default.json, default.domain_id)
    args = parser.parse_args(argv)
    if args.tasks < 2:
        parser.error("--tasks must be at least 2")
    config = BenchSoakConfig(tasks=args.tasks, domain_id=args.domain_id, json=args.json)
    config.json.parent.mkdir(parents=True, exist_ok=True)
    print(f"Starting the sim graph in ROS domain {config.domain_id}; {config.tasks} tasks", flush=True)
    try:
        results = run(config)
    except (RuntimeError, TimeoutError) as err:
        print(f"hgpo bench soak: error: {err}", file=sys.stderr)
        return 2
    print(
        f"\n{len(results['episodes'])} tasks in {results['wall_s']:.0f} s: "
        f"{100 * results['success_rate']:.1f}% succeeded, {results['lost']} results lost, "
        f"{results['duplicated']} tasks duplicated"
    )
    print(
        table(
            ["node", "RSS after 1st MB", "after last MB", "growth %", "KB per task"],
            [
                [name, r["after_first"], r["after_last"], r["growth_percent"], r["growth_kb_per_task"]]
                for name, r in results["rss_mb"].items()
            ],
        )
    )
    write_json(config.json, "soak", config, results)
    print(f"\nwrote {config.json}")
    return 0 if results["lost"] == 0 and results["duplicated"] == 0 else 1
