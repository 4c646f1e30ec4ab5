"""The `onnx` skill policy backend: a policy file drives a tabletop subgoal; bad files fail at load."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import numpy as np
import onnx
import pytest

from policies.control import SkillPolicyConfig, execute_subgoal, make_skill_policy
from policies.control.onnx_skill_policy import (
    LEARNED_RELEASE,
    SHIPPED_MODEL_DIR,
    NoLearnedPolicyError,
    OnnxSkillPolicy,
    waypoint,
)
from policies.control.skill_policy import GOAL_HORIZON_M
from policies.skills.onnx_contract import PolicyFileError
from sim.skill_env import policy_inputs, skill_action
from sim.skill_env.tabletop_skills import grip_in_start_range
from sim.tabletop import (
    Subgoal,
    TabletopWorld,
    WorldConfig,
    action_to_command,
    expert_action,
    make_task,
    releasing,
    travel_waypoint,
)
from tests.skill_policy_files import policy_with_inputs, write_policy_folder


@pytest.fixture(scope="module")
def policy_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_policy_folder(tmp_path_factory.mktemp("policies"))


def copy_with_metadata(policy_dir: Path, tmp_path: Path, **changes: str) -> Path:
    """A copy of the policy folder whose reach file has some metadata entries replaced."""
    model = onnx.load(str(policy_dir / "reach" / "policy.onnx"))
    metadata = {p.key: p.value for p in model.metadata_props} | changes
    onnx.helper.set_model_props(model, metadata)
    (tmp_path / "reach").mkdir()
    onnx.save(model, str(tmp_path / "reach" / "policy.onnx"))
    return tmp_path


@pytest.mark.parametrize("seed", [0, 3])
def test_policy_file_drives_reach_to_success(policy_dir: Path, seed: int) -> None:
    policy = make_skill_policy("onnx", SkillPolicyConfig(policy_dir, fallback="none"))
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    state = world.reset(make_task("stack", seed))
    subgoal = Subgoal("reach", (state.names("block")[seed % 4],))
    result = execute_subgoal(world, subgoal, policy, timeout_s=10.0, action_hold=4)
    assert result.success, result.message


def test_skill_without_a_file_uses_the_fallback_or_fails_clearly(policy_dir: Path) -> None:
    state = TabletopWorld(WorldConfig()).reset(make_task("pick_place", 0))
    pick = Subgoal("pick", (state.names("block")[0],))
    with_expert = make_skill_policy("onnx", SkillPolicyConfig(policy_dir))
    assert isinstance(with_expert, OnnxSkillPolicy)
    assert with_expert.source("pick") == "expert (fallback: no policy file)"
    assert "proportional-reach-test" in with_expert.source("reach")
    assert with_expert.act(pick, state).shape == (4,)
    assert with_expert.deployment_differences(0.25, 0.04) == []
    assert [n.split(": ")[1] for n in with_expert.deployment_differences(0.5, 0.005)] == [
        "trained at 0.25 m/s per full action, run at 0.5",
        "trained at a 0.04 s control period, run at 0.005 s",
    ]
    strict = make_skill_policy("onnx", SkillPolicyConfig(policy_dir, fallback="none"))
    with pytest.raises(NoLearnedPolicyError, match="no pick_and_place policy in .* no fallback"):
        strict.act(pick, state)


def test_pick_far_from_its_block_approaches_with_the_learned_reach_first(tmp_path: Path) -> None:
    """pick_and_place episodes start with the grip point within 10 cm of the block; from farther away (the arm
    at home, or over the plate of the last place) the learned reach hovers above the block first."""
    folder = write_policy_folder(write_policy_folder(tmp_path, skill="pick_and_place"), gain=5.0)
    policy = make_skill_policy("onnx", SkillPolicyConfig(folder, fallback="none"))
    assert isinstance(policy, OnnxSkillPolicy)
    world = TabletopWorld(WorldConfig())
    state = world.reset(make_task("stack", 0))
    ee = state.ee_position[:2]
    far = max(state.names("block"), key=lambda b: float(np.linalg.norm(state.object(b).position[:2] - ee)))
    pick, reach = Subgoal("pick", (far,)), Subgoal("reach", (far,))
    assert not grip_in_start_range(state, far)
    np.testing.assert_allclose(policy.act(pick, state), policy.act(reach, state))
    assert execute_subgoal(world, reach, make_skill_policy("expert"), timeout_s=10.0).success
    state = world.state()
    assert grip_in_start_range(state, far)
    learned, obs, goal = policy_inputs(pick, state)
    carry = skill_action(learned, policy.policies[learned].act(obs, waypoint(obs[4:7], goal, GOAL_HORIZON_M)))
    np.testing.assert_allclose(policy.act(pick, state), carry)
    assert not np.allclose(carry, policy.act(reach, state))


def test_pick_low_beside_its_block_lifts_off_before_the_approach(tmp_path: Path) -> None:
    """Regression: a place on a plate ends with the grip point 3 cm up, and the next block may lie within the
    10 cm of the pick's start range; the learned pick never started that low and knocked the block askew
    (sort seed 1000). Below the start heights the range shrinks to the block's own width, and the approach
    lifts off straight up first, as the expert does (the learned reach never started that low either)."""
    folder = write_policy_folder(write_policy_folder(tmp_path, skill="pick_and_place"), gain=5.0)
    policy = make_skill_policy("onnx", SkillPolicyConfig(folder, fallback="none"))
    state = TabletopWorld(WorldConfig()).reset(make_task("stack", 0))
    block = state.names("block")[0]
    centre = state.object(block).position
    beside = dataclasses.replace(state, ee_position=centre + np.array([0.06, 0.0, 0.01]))
    assert not grip_in_start_range(beside, block)
    action = policy.act(Subgoal("pick", (block,)), beside)
    np.testing.assert_allclose(action, expert_action(Subgoal("reach", (block,)), beside))
    assert action[2] == 1.0 and np.all(action[:2] == 0.0)
    over = dataclasses.replace(state, ee_position=centre + np.array([0.01, -0.01, 0.01]))
    assert grip_in_start_range(over, block)  # the learned pick's own way down


def test_reach_from_a_placed_block_rises_before_it_moves_across() -> None:
    """Regression: a place leaves the open fingers around the block, 2 cm above its centre, and the shipped
    reach went straight for the next block from there, dragging the placed one off its plate (sort seed
    1001). It now travels as the expert does: up to the cruise height, across, down."""
    policy = make_skill_policy("onnx", SkillPolicyConfig(fallback="none"))
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    task = make_task("sort", 1001)
    world.reset(task)
    expert = make_skill_policy("expert")
    placed, plate = task.goal[0].args
    for subgoal in (Subgoal("pick", (placed,)), Subgoal("place", (placed, plate))):
        assert execute_subgoal(world, subgoal, expert, timeout_s=10.0, action_hold=4).success
    assert world.state().ee_position[2] < 0.05
    reach = Subgoal("reach", (task.goal[1].args[0],))
    assert execute_subgoal(world, reach, policy, timeout_s=10.0, action_hold=4).success
    assert task.goal[0].holds(world.state()), f"{placed} was moved off {plate}"


def test_place_lets_go_as_the_expert_does_once_the_carried_block_is_where_it_rests(tmp_path: Path) -> None:
    """Regression: the learned pick_and_place carries a block to a point and never opens its fingers, so every
    place it served timed out a few millimetres from its goal. Carrying stays the policy file's; the release
    phase is the expert's, from 2 cm: a learned grasp low on the block can stop the block 8 mm above where it
    rests, the fingers on the table (sort seed 1008), where the expert's own 8 mm never comes. And the carry
    is fed the expert's path (regression: carried straight at a stack's base, the block stopped against its
    side, 4 cm from its goal, in 3 of 20 stack seeds)."""
    policy = make_skill_policy(
        "onnx", SkillPolicyConfig(write_policy_folder(tmp_path, skill="pick_and_place"))
    )
    assert isinstance(policy, OnnxSkillPolicy)
    world = TabletopWorld(WorldConfig())
    state = world.reset(make_task("pick_place", 0))
    block, plate = state.names("block")[0], state.names("plate")[0]
    expert = make_skill_policy("expert")
    assert execute_subgoal(world, Subgoal("pick", (block,)), expert, timeout_s=10.0).success
    place = Subgoal("place", (block, plate))
    state = world.state()
    onnx_policy = policy.policies["pick_and_place"]
    learned, obs, goal = policy_inputs(place, state)
    # the carry travels the expert's path: up to the cruise height first
    rise = travel_waypoint(obs[4:7], goal)
    np.testing.assert_allclose(rise[:2], obs[4:6])
    assert rise[2] > obs[6] + 0.05
    np.testing.assert_allclose(
        policy.act(place, state),
        skill_action(learned, onnx_policy.act(obs, waypoint(obs[4:7], rise, GOAL_HORIZON_M))),
    )
    while not releasing(place, state, LEARNED_RELEASE):  # the expert carries the block towards where it rests
        assert world.state().time < 20.0, "the expert never reached the release phase"
        state = world.step(*action_to_command(expert_action(place, state), world.config))
    assert not releasing(place, state)  # 2 cm away: short of the expert's own 8 mm, and yet
    np.testing.assert_allclose(policy.act(place, state), expert_action(place, state, LEARNED_RELEASE))
    assert policy.act(place, state)[3] == -1.0  # the fingers open


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"hgpo_contract_version": "99"}, "contract version 99, this code reads version 1"),
        ({"hgpo_contract": "something-else"}, "is not an HGPO skill policy"),
        ({"obs_layout": json.dumps([[f"x{i}", 1] for i in range(14)])}, "trained on the observation layout"),
        ({"goal_layout": json.dumps([["goal.x", 1], ["goal.y", 1], ["goal.w", 1]])}, "goal layout"),
        ({"obs_layout": json.dumps([["ee_position.x", 1]])}, "input 'obs' has width 14"),
        ({"observation_version": "0"}, "observation version 0"),
        ({"skills": '["juggle"]'}, "skills \\['juggle'\\] that no planner skill uses"),
    ],
)
def test_mismatched_metadata_is_refused_at_load(
    policy_dir: Path, tmp_path: Path, changes: dict[str, str], message: str
) -> None:
    folder = copy_with_metadata(policy_dir, tmp_path, **changes)
    with pytest.raises(PolicyFileError, match=message):
        make_skill_policy("onnx", SkillPolicyConfig(folder))


def test_missing_empty_corrupt_or_duplicate_files_are_clear_errors(policy_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match="does not exist"):
        make_skill_policy("onnx", SkillPolicyConfig(tmp_path / "nowhere"))
    with pytest.raises(PolicyFileError, match="no policy files"):
        make_skill_policy("onnx", SkillPolicyConfig(tmp_path))
    (tmp_path / "reach").mkdir()
    data = (policy_dir / "reach" / "policy.onnx").read_bytes()
    (tmp_path / "reach" / "policy.onnx").write_bytes(data[: len(data) // 2])
    with pytest.raises(PolicyFileError, match="not a readable ONNX model"):
        make_skill_policy("onnx", SkillPolicyConfig(tmp_path))
    shutil.copy(policy_dir / "reach" / "policy.onnx", tmp_path / "reach" / "policy.onnx")
    shutil.copytree(tmp_path / "reach", tmp_path / "reach_copy")
    with pytest.raises(PolicyFileError, match="two policy files for 'reach'"):
        make_skill_policy("onnx", SkillPolicyConfig(tmp_path))


@pytest.mark.parametrize(
    ("elem_type", "obs_shape"),
    [(onnx.TensorProto.DOUBLE, ["batch", 14]), (onnx.TensorProto.FLOAT, ["batch", 1, 14])],
    ids=["float64", "rank-3"],
)
def test_files_that_cannot_run_the_contracts_inputs_fail_at_load(
    policy_dir: Path, tmp_path: Path, elem_type: int, obs_shape: list
) -> None:
    """Regression: such files loaded, then every subgoal aborted with an empty message."""
    folder = policy_with_inputs(policy_dir, tmp_path, elem_type, obs_shape)
    with pytest.raises(PolicyFileError, match="fails a test inference on the contract's inputs"):
        make_skill_policy("onnx", SkillPolicyConfig(folder))


def test_unknown_backends_are_listed() -> None:
    with pytest.raises(ValueError, match="known: expert, onnx"):
        make_skill_policy("learned")
    assert SHIPPED_MODEL_DIR.parts[-3:] == ("policies", "pretrained", "skills")


@pytest.mark.skipif(
    not (SHIPPED_MODEL_DIR / "reach" / "policy.onnx").is_file(),
    reason="no shipped reach policy in this checkout",
)
def test_shipped_policies_pass_the_checks_and_drive_reach() -> None:
    """From the arm's home pose to each block in turn: goals up to ~0.6 m away, beyond the 15 cm the policy
    was trained on, which the waypoints bridge (without them the shipped reach reaches 2 of these 4)."""
    policy = make_skill_policy("onnx", SkillPolicyConfig(fallback="none"))
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    state = world.reset(make_task("reach", 0))
    for block in state.names("block"):
        result = execute_subgoal(world, Subgoal("reach", (block,)), policy, timeout_s=15.0, action_hold=4)
        assert result.success, f"reach({block}): {result.message}"


def test_shipped_pick_and_place_stacks_a_block_from_the_arms_home() -> None:
    """The shipped pick_and_place file, with the shipped reach for its approach: from home, a pick and a place
    onto another block (the stack the sim launch's default skills build)."""
    policy = make_skill_policy("onnx", SkillPolicyConfig(fallback="none"))
    assert isinstance(policy, OnnxSkillPolicy) and set(policy.policies) == {"reach", "pick_and_place"}
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    task = make_task("stack", 1)
    world.reset(task)
    top, base = task.goal[0].args
    for subgoal in (Subgoal("pick", (top,)), Subgoal("place", (top, base))):
        result = execute_subgoal(world, subgoal, policy, timeout_s=12.0, action_hold=4)
        assert result.success, f"{subgoal}: {result.message}"
    assert task.goal[0].holds(world.state())


def test_far_goals_become_waypoints_at_the_horizon() -> None:
    achieved = np.array([0.5, 0.0, 0.2], np.float32)
    far = np.array([0.5, 0.6, 0.2], np.float32)
    np.testing.assert_allclose(waypoint(achieved, far, 0.12), [0.5, 0.12, 0.2], atol=1e-6)
    near = np.array([0.5, 0.1, 0.2], np.float32)
    assert waypoint(achieved, near, 0.12) is near
    assert waypoint(achieved, far, 0.0) is far
    with pytest.raises(ValueError, match="goal_horizon_m must be >= 0"):
        make_skill_policy("onnx", SkillPolicyConfig(goal_horizon_m=-0.1))
