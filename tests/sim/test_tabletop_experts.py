"""Scripted skill experts and the expert planner (whole episodes: tests/policies/test_episodes.py)."""

from __future__ import annotations

import numpy as np
import pytest

from sim.tabletop import (
    Atom,
    ExpertPlanner,
    Subgoal,
    Task,
    UnknownSkillError,
    WorldConfig,
    action_to_command,
    expert_action,
    make_task,
    subgoal_succeeded,
)
from sim.tabletop.model import BLOCK_SIZE, MAX_GRIPPER_WIDTH, TABLE_TOP_Z
from sim.tabletop.predicates import held

Z = TABLE_TOP_Z + BLOCK_SIZE / 2


def _task(name: str, goal: tuple[Atom, ...], skills: tuple[str, ...]) -> Task:
    return Task(name, "", 0, make_task("reach", 0).layout, goal, skills)


def test_action_to_command() -> None:
    config = WorldConfig(max_speed=0.2)
    velocity, width = action_to_command(np.array([0.8, -0.5, 0.0, -1.0]), config)
    np.testing.assert_allclose(velocity, (0.16, -0.1, 0.0))
    assert width == MAX_GRIPPER_WIDTH
    velocity, width = action_to_command(np.array([3.0, 0.0, 0.0, 1.0]), config)  # clipped to [-1, 1]
    assert velocity[0] == pytest.approx(0.2) and width == 0.0
    velocity, _ = action_to_command(np.array([1.0, 1.0, -1.0, 0.0]), config)  # a diagonal: speed capped
    assert np.linalg.norm(velocity) == pytest.approx(0.2)
    np.testing.assert_allclose(velocity / np.linalg.norm(velocity), np.array([1.0, 1.0, -1.0]) / np.sqrt(3))


def test_expert_action_is_normalized(scene) -> None:
    state = scene(ee=(0.3, 0.2, 0.3))
    for subgoal in (
        Subgoal("reach", ("red_block",)),
        Subgoal("pick", ("red_block",)),
        Subgoal("place", ("red_block", "left_plate")),
        Subgoal("push", ("red_block", "left_plate")),
    ):
        action = expert_action(subgoal, state)
        assert action.shape == (4,) and np.all(np.abs(action) <= 1.0)
    with pytest.raises(UnknownSkillError):
        expert_action(Subgoal("wave", ()), state)


def test_pick_expert_phases(scene) -> None:
    pick = Subgoal("pick", ("red_block",))
    far = expert_action(pick, scene(ee=(0.3, 0.2, 0.05)))
    assert far[2] > 0 and far[3] == -1.0  # rise before crossing, fingers open
    above = expert_action(pick, scene(ee=(0.5, 0.0, 0.14)))
    assert above[2] < 0 and above[3] == -1.0  # descend around the block
    at_block = expert_action(pick, scene(ee=(0.5, 0.0, Z)))
    assert np.all(at_block[:3] == 0) and at_block[3] == 1.0  # close
    holding = expert_action(pick, scene(ee=(0.5, 0.0, Z), width=BLOCK_SIZE))
    assert holding[2] > 0 and holding[3] == 1.0  # lift


def test_planner_decomposes_goals(scene) -> None:
    planner = ExpertPlanner()
    stack = _task("stack", (Atom("on", ("red_block", "blue_block")),), ("pick", "place"))
    assert planner.next_subgoal(stack, scene()) == Subgoal("pick", ("red_block",))
    holding = scene(ee=(0.5, 0.0, Z), width=BLOCK_SIZE)
    assert planner.next_subgoal(stack, holding) == Subgoal("place", ("red_block", "blue_block"))
    stacked = scene(blocks={"red_block": (0.4, 0.1, Z + BLOCK_SIZE), "blue_block": (0.4, 0.1, Z)})
    assert planner.next_subgoal(stack, stacked) is None
    push = _task("push", (Atom("on", ("red_block", "left_plate")),), ("push",))
    assert planner.next_subgoal(push, holding) == Subgoal("push", ("red_block", "left_plate"))
    reach = _task("reach", (Atom("above", ("blue_block",)),), ("reach",))
    assert planner.next_subgoal(reach, scene()) == Subgoal("reach", ("blue_block",))


def test_grasp_survives_fast_moves(world) -> None:
    task = make_task("pick_place", 3)
    obj = task.goal[0].args[0]
    state = world.reset(task)
    pick = Subgoal("pick", (obj,))
    while not subgoal_succeeded(pick, state) and state.time < 10:
        state = world.step(*action_to_command(expert_action(pick, state), world.config))
    rng = np.random.default_rng(0)
    for _ in range(50):  # 2 s of full-speed jerks along the diagonals, fingers commanded shut
        state = world.step(rng.choice([-1.0, 1.0], 3) * world.config.max_speed, 0.0)
        assert held(state, obj)


def test_recovers_from_a_dropped_block(world) -> None:
    task = make_task("pick_place", 2)
    obj = task.goal[0].args[0]
    state = world.reset(task)
    pick = Subgoal("pick", (obj,))
    for _ in range(200):
        if subgoal_succeeded(pick, state):
            break
        state = world.step(*action_to_command(expert_action(pick, state), world.config))
    assert subgoal_succeeded(pick, state)
    for _ in range(15):  # the fingers open: the block falls back to the table
        state = world.step(np.zeros(3), MAX_GRIPPER_WIDTH)
    planner = ExpertPlanner()
    assert planner.next_subgoal(task, state) == pick
    for _ in range(600):
        subgoal = planner.next_subgoal(task, state)
        if subgoal is None:
            break
        state = world.step(*action_to_command(expert_action(subgoal, state), world.config))
    assert task.success(state)
