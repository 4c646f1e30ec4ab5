"""`hgpo bench graph`, `arm` and `soak`: each starts a whole graph, so they live with the DDS tests."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.processes import Captured
from tests.ros.conftest import HGPO, REPO

BENCH_TIMEOUT_S = 300.0


def run_bench(name: str, args: list[str], ros_env: dict[str, str], out: Path) -> tuple[str, dict[str, Any]]:
    """Run `hgpo bench NAME` in a DDS domain apart from the session's nodes (as `launch` does); its output
    and the `results` of its JSON. On a timeout it gets Ctrl-C, so that it stops the graph it launched."""
    domain = str(int(ros_env["ROS_DOMAIN_ID"]) + 50)
    bench = Captured([*HGPO, "bench", name, *args, "--domain-id", domain, "--json", str(out)], REPO, ros_env)
    try:
        code = bench.wait(timeout=BENCH_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        bench.stop(timeout=30)
        raise AssertionError(f"hgpo bench {name} ran over {BENCH_TIMEOUT_S} s:\n{bench.output}") from None
    assert code == 0, bench.output
    return bench.output, json.loads(out.read_text())["results"]


def test_bench_graph_measures_the_launched_graph(tmp_path: Path, ros_env: dict[str, str]) -> None:
    """With a pause before the task (its scene set up through the bridge first), as a person gives one."""
    args = ["--tasks", "reach", "--seeds", "1", "--pause-s", "0.5"]
    _, record = run_bench("graph", args, ros_env, tmp_path / "graph.json")
    assert record["episodes"][0]["success"]
    assert 50 < record["bridge_scene_state"]["rate_hz"] < 150  # configured: 100 Hz
    assert 10 < record["controller_cmd_twist"]["rate_hz"] < 40  # configured: 25 Hz
    assert (tmp_path / "graph.launch.log").read_text().count("[controller]") > 0
    cpu = record["cpu_percent"]
    assert set(cpu) == {"controller", "planner", "sim_bridge"}
    assert all(use[window] > 0 for use in cpu.values() for window in ("idle", "tasks"))
    decisions = record[
        "planner_decisions"
    ]  # the planner node's own decisions.jsonl, under the bench's log folder
    assert decisions["first"]["n"] == 1 and decisions["all"]["n"] >= 1


def test_bench_arm_measures_latency_tracking_and_estop(tmp_path: Path, ros_env: dict[str, str]) -> None:
    output, record = run_bench("arm", ["--rates", "50", "--trials", "2"], ros_env, tmp_path / "arm.json")
    assert "latency p50 ms" in output
    (rate,) = record["rates"]
    assert 25 < rate["joint_states"]["rate_hz"] < 75  # configured: 50 Hz
    assert 0 < rate["latency_ms"]["p50"] < 1000 and rate["latency_ms"]["n"] == 2
    assert rate["tracking"]["velocity_error_mm_s"] < 50  # of 100 mm/s commanded: the arm follows the twist
    assert 0 < rate["estop_to_zero_ms"]["max"] < 1000 and rate["estop_to_zero_ms"]["n"] == 2


def test_bench_soak_counts_successes_memory_and_lost_results(tmp_path: Path, ros_env: dict[str, str]) -> None:
    _, record = run_bench("soak", ["--tasks", "2"], ros_env, tmp_path / "soak.json")
    assert [e["task"] for e in record["episodes"]] == ["reach", "pick_place"]
    assert record["lost"] == 0 and record["duplicated"] == 0 and record["success_rate"] == 1.0
    assert set(record["rss_mb"]) == {"planner", "controller", "sim_bridge"}
    assert all(r["after_last"] > 10 for r in record["rss_mb"].values())  # MB: real processes were measured
