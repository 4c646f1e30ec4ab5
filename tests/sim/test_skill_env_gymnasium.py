"""The gymnasium backend: Fetch environments under the same batched contract."""

from __future__ import annotations

import numpy as np
import pytest

from sim.skill_env import RandomizationConfig, make_skill_env


@pytest.mark.parametrize(("skill", "obs_dim"), [("reach", 10), ("push", 25)])
def test_fetch_under_the_contract(skill: str, obs_dim: int) -> None:
    rng = np.random.default_rng(0)
    with make_skill_env("gymnasium", skill, num_envs=2, seed=3) as env:
        assert (env.obs_dim, env.goal_dim, env.action_dim) == (obs_dim, 3, 4)
        assert env.max_episode_steps == 50 and env.distance_threshold == 0.05
        start = env.reset()
        assert start["observation"].shape == (2, obs_dim) and start["observation"].dtype == np.float32
        for step in range(1, 51):
            obs, reward, terminated, truncated, info = env.step(rng.uniform(-1, 1, (2, 4)))
            final = info["final_observation"]
            np.testing.assert_array_equal(
                reward, env.compute_reward(final["achieved_goal"], final["desired_goal"])
            )
            assert truncated.all() == (step == 50) and not terminated.any()
        assert info["time_outs"].all() and (info["episode_length"] == 50).all()
        np.testing.assert_array_equal(final["desired_goal"], start["desired_goal"])
        assert not np.allclose(obs["desired_goal"], start["desired_goal"])
        np.testing.assert_array_equal(env.reset(seed=3)["desired_goal"], start["desired_goal"])


def test_fetch_refuses_randomization_and_unknown_skills() -> None:
    with pytest.raises(ValueError, match="does not randomize"):
        make_skill_env("gymnasium", "reach", 1, randomization=RandomizationConfig())
    with pytest.raises(ValueError, match="known: reach, push, pick_and_place"):
        make_skill_env("gymnasium", "slide", 1)
