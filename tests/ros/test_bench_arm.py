"""`hgpo bench arm`: it launches the real-arm graph with fake hardware, so it lives with the DDS tests."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.ros.conftest import REPO


def test_bench_arm_measures_latency_tracking_and_estop(tmp_path: Path, ros_env: dict[str, str]) -> None:
    out = tmp_path / "arm.json"
    domain = str(int(ros_env["ROS_DOMAIN_ID"]) + 50)  # apart from the session's nodes, as `launch` does
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "hgpo.cli",
            "bench",
            "arm",
            "--rates",
            "50",
            "--trials",
            "2",
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
    assert "latency p50 ms" in result.stdout
    (rate,) = json.loads(out.read_text())["results"]["rates"]
    assert 25 < rate["joint_states"]["rate_hz"] < 75  # configured: 50 Hz
    assert 0 < rate["latency_ms"]["p50"] < 1000 and rate["latency_ms"]["n"] == 2
    assert rate["tracking"]["velocity_error_mm_s"] < 50  # of 100 mm/s commanded: the arm follows the twist
    assert 0 < rate["estop_to_zero_ms"]["max"] < 1000 and rate["estop_to_zero_ms"]["n"] == 2
