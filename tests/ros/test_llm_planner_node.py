"""The planner node with the LLM planner (the launch file's default) over real DDS."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from action_msgs.msg import GoalStatus
from hgpo_msgs.action import RunTask
from transformers import AutoTokenizer

from tests.processes import Captured
from tests.ros.conftest import REPO
from tests.ros.helpers import DISCOVERY_S, ActionCall, wait_until
from tests.tiny_lm import build_tiny_gpt2

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


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"))


def test_an_idle_planner_prefills_the_scene_and_the_next_first_decision_reuses_it(
    start_node, test_node, tiny_model: Path, tmp_path: Path
) -> None:
    """The bridge's scene streams at 100 Hz, unchanged: the idle planner prefills it once; an instruction
    given then (no reset: the scene as set) is decided reusing all of the prompt before the instruction,
    which a fresh planner's first decision would have computed itself (its cache is empty)."""
    start_node("sim_bridge", "idle_prefill")
    start_node("controller", "idle_prefill")
    planner = start_node(
        "planner",
        "idle_prefill",
        "planner:=llm",
        f"llm.model:={tiny_model}",
        "max_subgoals:=1",
        "subgoal_timeout_s:=5.0",
        "idle_prefill_after_s:=0.2",
        f"decisions_dir:={tmp_path}",
    )
    prefilling = "idle: prefilling the next task's prompt"
    wait_until(lambda: prefilling in planner.output, 2 * DISCOVERY_S, "the idle prefill")
    call = ActionCall(test_node, RunTask, "/idle_prefill/run_task")
    assert planner.output.count(prefilling) == 1, planner.output  # once for the unchanged scene
    instruction = "stack the red block on the blue block"
    call.send(RunTask.Goal(instruction=instruction, reset=False))
    status, result = call.result(TASK_TIMEOUT_S)
    assert status in (GoalStatus.STATUS_SUCCEEDED, GoalStatus.STATUS_ABORTED), result.message
    first = json.loads((tmp_path / "decisions.jsonl").read_text().splitlines()[0])
    attempt = first["trace"]["attempts"][0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    before = len(tokenizer.encode(attempt["prompt_text"].partition(instruction)[0], add_special_tokens=False))
    assert first["step"] == 0 and before - 1 <= attempt["reused_tokens"] <= before, planner.output
