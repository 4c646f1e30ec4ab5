"""The robosuite backend runs under the contract with the tabletop's layouts (tiny: robosuite is slow)."""

from __future__ import annotations

import numpy as np
import pytest

from sim.skill_env import OBSERVATION_LAYOUT, RandomizationConfig, make_skill_env
from sim.skill_env.robosuite_backend import RobosuiteSkillEnv
from sim.skill_env.tabletop_skills import REACH_GOAL_OFFSET, TABLETOP_SKILLS
from sim.tabletop.experts import EXPERTS, ExpertConfig
from sim.tabletop.layout import LayoutRanges


@pytest.mark.parametrize("skill", ["pick_and_place", "stack", "bin_pick_place"])
def test_robosuite_tasks_run_with_the_tabletop_layout(skill: str) -> None:
    randomization = RandomizationConfig.load() if skill == "pick_and_place" else None
    with make_skill_env(
        "robosuite", skill, 1, seed=0, randomization=randomization, max_episode_steps=3
    ) as env:
        assert env.observation_layout == OBSERVATION_LAYOUT and env.action_dim == 4
        start = env.reset()
        assert start["observation"].shape == (1, 14) and start["observation"].dtype == np.float32
        # In the tabletop's frame the object rests near the surface, below and in front of the grip point.
        obj = start["achieved_goal"][0]
        assert -0.02 < obj[2] < 0.12 and 0.2 < obj[0] < 0.9
        assert start["observation"][0, 2] > obj[2]
        for _ in range(3):
            obs, reward, _, truncated, info = env.step(np.array([[0.0, 0.0, -0.5, -1.0]]))
            final = info["final_observation"]
            np.testing.assert_array_equal(
                reward, env.compute_reward(final["achieved_goal"], final["desired_goal"])
            )
        assert truncated.all() and info["episode_length"][0] == 3
        again = env.reset(seed=0)  # reseeds goals, randomization, noise and robosuite's placement
        for key in start:
            np.testing.assert_allclose(again[key], start[key], atol=1e-6)


def test_the_tabletop_expert_moves_robosuites_cube_the_same_way() -> None:
    """Same frame, same action scale: the scripted tabletop expert drives robosuite's Panda to the cube."""
    with make_skill_env("robosuite", "pick_and_place", 1, seed=0, max_episode_steps=200) as env:
        assert isinstance(env, RobosuiteSkillEnv)
        goal = env.reset()["desired_goal"][0]
        for _ in range(25):
            state = env.states()[0]
            env.step(np.clip(EXPERTS["pick"](state, goal, ExpertConfig(), "object"), -1, 1)[None])
        state = env.states()[0]
        offset = state.object("object").position - state.ee_position
        assert np.hypot(*offset[:2]) < 0.03, offset


def test_robosuite_reach_is_the_tabletops_reach_on_the_panda() -> None:
    """The transfer target of a tabletop reach policy: the grip point is the achieved goal, the goal is
    drawn near the start as on the tabletop, success is the tabletop's 2 cm, and the expert gets there."""
    with make_skill_env("robosuite", "reach", 1, seed=3, max_episode_steps=100) as env:
        assert env.distance_threshold == TABLETOP_SKILLS["reach"].distance_threshold
        start = env.reset()
        grip = start["achieved_goal"][0]
        np.testing.assert_allclose(grip, env.states()[0].ee_position, atol=1e-6)
        assert np.abs(start["desired_goal"][0] - grip).max() <= REACH_GOAL_OFFSET + 1e-6
        goal = start["desired_goal"][0]
        for _ in range(100):
            step = env.step(
                np.clip(EXPERTS["reach"](env.states()[0], goal, ExpertConfig(), "object"), -1, 1)[None]
            )
            if step.info["success"][0]:
                break
        assert step.info["success"][0], np.linalg.norm(
            step.info["final_observation"]["achieved_goal"][0] - goal
        )


@pytest.mark.parametrize("skill", ["reach", "stack"])
def test_robosuites_cubes_start_yawed_as_the_tabletops_blocks(skill: str) -> None:
    """robosuite draws a cube's yaw anywhere on the circle; the tabletop's blocks stay within block_yaw, and
    a quaternion outside that range made the tabletop-trained reach fail 85% of robosuite episodes."""
    limit = LayoutRanges().block_yaw
    w, z = (OBSERVATION_LAYOUT.index(f"object_quaternion.{part}") for part in "wz")
    with make_skill_env("robosuite", skill, 1, seed=0, max_episode_steps=2) as env:
        yaws = []
        for seed in range(8):
            observation = env.reset(seed=seed)["observation"][0]
            yaws.append(2 * np.arctan2(observation[z], observation[w]))
    assert np.all(np.abs(yaws) <= limit + 1e-3), yaws
    assert np.ptp(yaws) > 0.1, yaws  # still drawn, not fixed
