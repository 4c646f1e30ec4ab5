"""The controller node with `policy:=onnx` over DDS: a policy file executes a subgoal; a bad one stops it."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path

import pytest
from action_msgs.msg import GoalStatus
from hgpo_msgs.action import ExecuteSubgoal
from hgpo_msgs.msg import Subgoal

from tests.processes import Captured
from tests.ros.helpers import DISCOVERY_S, ActionCall, wait_until
from tests.ros.test_graph import reset
from tests.skill_policy_files import write_policy_folder

SUBGOAL_TIMEOUT_S = 120.0


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_policy_folder(tmp_path_factory.mktemp("policies"))


@pytest.fixture
def node(start_node: Callable[..., Captured]) -> Callable[..., Captured]:
    """Nodes started from their installed executables in a namespace of this module's own."""

    def start(executable: str, *params: str) -> Captured:
        return start_node(executable, "onnx", *params)

    return start


def test_onnx_controller_executes_a_subgoal_over_dds(node, test_node, policy_dir: Path) -> None:
    node("sim_bridge")
    controller = node(
        "controller",
        "policy:=onnx",
        f"model_dir:={policy_dir}",
        "fallback_policy:=none",
        "feedback_rate_hz:=5.0",
    )
    response = reset(test_node, seed=2, task="stack", service="/onnx/reset_scene")
    assert response.success, response.message
    block = next(o.name for o in response.scene.objects if o.category == "block")
    wait_until(
        lambda: test_node.count_subscribers("/onnx/scene_state") >= 1,
        DISCOVERY_S,
        "the controller's subscription",
    )
    goal = ExecuteSubgoal.Goal(
        subgoal=Subgoal(text=f"reach({block})", skill="reach", args=[block], timeout_s=60.0)
    )
    call = ActionCall(test_node, ExecuteSubgoal, "/onnx/execute_subgoal", goal)
    status, result = call.result(SUBGOAL_TIMEOUT_S)
    assert status == GoalStatus.STATUS_SUCCEEDED and result.success, (result.message, controller.output)
    assert len(call.feedback) >= 2 and call.feedback[-1].distance < call.feedback[0].distance
    # Feedback at 5 Hz from a 25 Hz loop: not one message per tick.
    steps = [f.steps for f in call.feedback]
    assert all(later - earlier >= 2 for earlier, later in itertools.pairwise(steps)), steps
    assert f"reach: {policy_dir / 'reach' / 'policy.onnx'} (run proportional-reach-test)" in controller.output
    # pick has no policy file and no fallback here: that subgoal fails, the controller runs on.
    goal.subgoal.skill, goal.subgoal.text = "pick", f"pick({block})"
    status, result = ActionCall(test_node, ExecuteSubgoal, "/onnx/execute_subgoal", goal).result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_ABORTED and "no pick_and_place policy" in result.message
    assert controller.proc.poll() is None


def test_onnx_controller_refuses_a_corrupt_policy_file_at_start_up(node, tmp_path: Path) -> None:
    (tmp_path / "reach").mkdir()
    (tmp_path / "reach" / "policy.onnx").write_bytes(b"\x08\x07garbage")
    controller = node("controller", "policy:=onnx", f"model_dir:={tmp_path}")
    assert controller.wait(timeout=60) == 2
    assert "is not a readable ONNX model" in controller.output, controller.output
