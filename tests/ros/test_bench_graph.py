"""`hgpo bench graph`: it launches a whole graph, so it lives with the other DDS tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.ros.conftest import REPO


def test_bench_graph_measures_the_launched_graph(tmp_path: Path, ros_env: dict[str, str]) -> None:
    out = tmp_path / "graph.json"
    domain = str(int(ros_env["ROS_DOMAIN_ID"]) + 50)  # apart from the session's graph, as `launch` does
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hgpo.cli",
            "bench",
            "graph",
            "--tasks",
            "reach",
            "--seeds",
            "1",
            "--domain-id",
            domain,
            "--json",
            str(out),
        ],
        cwd=REPO,
        env=ros_env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    record = json.loads(out.read_text())["results"]
    assert record["episodes"][0]["success"]
    assert 50 < record["bridge_scene_state"]["rate_hz"] < 150  # configured: 100 Hz
    assert 10 < record["controller_cmd_twist"]["rate_hz"] < 40  # configured: 25 Hz
    assert (tmp_path / "graph.launch.log").read_text().count("[controller]") > 0
