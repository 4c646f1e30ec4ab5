"""The planner node with the LLM planner (the launch file's default) over real DDS."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.processes import Captured
from tests.ros.conftest import REPO

TASK_TIMEOUT_S = 600.0  # model load and a few CPU decisions on a busy 2-core machine
PLANNER_EXE = Path(sys.prefix) / "lib" / "hgpo" / "planner"


def test_make_sim_runs_the_default_task_with_the_llm_planner(launch, ros_env: dict[str, str]) -> None:
    launched = launch("sim")
    assert launched.wait(timeout=TASK_TIMEOUT_S) == 0, launched.output
    assert "planner 'llm' ready" in launched.output and "SUCCESS" in launched.output
    logs = sorted(Path(ros_env["ROS_LOG_DIR"]).glob("hgpo_planner_*/decisions.jsonl"))
    records = [json.loads(line) for line in logs[-1].read_text().splitlines()]
    assert records and all(r["planner"] == "llm" and r["trace"]["constrained"] for r in records)
    last = records[-1]
    assert records[0]["result"]["success"] and last["subgoal"] in last["trace"]["valid_subgoals"]


def test_missing_model_is_a_clear_start_up_error(ros_env: dict[str, str], tmp_path: Path) -> None:
    args = ["--ros-args", "-p", "planner:=llm", "-p", f"llm.model:={tmp_path}/no_model"]
    node = Captured([str(PLANNER_EXE), *args], cwd=REPO, env=ros_env)
    assert node.wait(timeout=120) == 2, node.output
    assert f"planner 'llm' cannot start: model folder {tmp_path}/no_model has no config.json" in node.output
