"""Demonstration buffers: the expert's episodes and DAgger's (the clone acts, the expert labels)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from policies.skills.config import DemoConfig
from policies.skills.demonstrations import collect_dagger_episodes, collect_demonstrations
from policies.skills.her_buffer import HerReplayBuffer
from policies.skills.networks import ActorConfig
from policies.skills.sac import SAC, SacConfig
from sim.skill_env import make_skill_env
from sim.skill_env.contract import GoalVecEnv

HORIZON = 10


def _env(seed: int = 3) -> GoalVecEnv:
    return make_skill_env("mujoco", "pick_and_place", num_envs=2, seed=seed, max_episode_steps=HORIZON)


def _setup(episodes: int) -> tuple[GoalVecEnv, HerReplayBuffer, SAC]:
    env = _env()
    buffer = HerReplayBuffer(
        num_envs=env.num_envs,
        obs_dim=env.obs_dim,
        goal_dim=env.goal_dim,
        action_dim=env.action_dim,
        horizon=HORIZON,
        capacity=(episodes + env.num_envs) * HORIZON,
        compute_reward=env.compute_reward,
        expert_actions=True,
    )
    actor = ActorConfig(obs_dim=env.obs_dim, goal_dim=env.goal_dim, action_dim=env.action_dim, hidden=(16,))
    return env, buffer, SAC(actor, SacConfig(hidden=(16,)))


def test_dagger_episodes_are_played_by_the_clone_and_labelled_by_the_expert() -> None:
    env, buffer, agent = _setup(episodes=4)
    agent.observe(torch.ones(4, env.obs_dim), torch.ones(4, env.goal_dim), torch.zeros(4, env.goal_dim))
    statistics = agent.actor.input_statistics()

    collect_dagger_episodes(env, buffer, 4, agent)

    assert buffer.episodes_stored == 4 and buffer.size == 4 * HORIZON
    stored = buffer.length > 0
    obs, goal = buffer.obs[stored].reshape(-1, env.obs_dim), buffer.goal[stored].reshape(-1, env.goal_dim)
    played = agent.act(torch.from_numpy(obs), torch.from_numpy(goal), deterministic=True).numpy()
    np.testing.assert_allclose(buffer.action[stored].reshape(-1, env.action_dim), played, atol=1e-6)

    # The labels are the expert's actions in the scenes the clone led to: the first step's are those of a
    # fresh env of the same seed, and later ones differ from what the untrained clone did.
    fresh = _env()
    fresh.reset()
    np.testing.assert_allclose(buffer.expert_action[stored][:2, 0], fresh.expert_actions(), atol=1e-6)
    labels = buffer.expert_action[stored]
    assert np.abs(labels - buffer.action[stored]).max() > 0.5
    # The actor keeps the input scales it was cloned with.
    for before, after in zip(statistics, agent.actor.input_statistics(), strict=True):
        torch.testing.assert_close(after, before)


def test_expert_demonstrations_keep_the_noiseless_action_as_the_label() -> None:
    env, buffer, agent = _setup(episodes=2)
    success = collect_demonstrations(env, buffer, DemoConfig(episodes=2, action_noise=0.3), agent)
    assert 0.0 <= success <= 1.0
    stored = buffer.length > 0
    executed, labels = buffer.action[stored], buffer.expert_action[stored]
    assert np.abs(executed - labels).max() > 0.1 and np.abs(executed).max() <= 1.0


def test_dagger_needs_pretraining_and_counts_its_episodes_in_the_buffer() -> None:
    with pytest.raises(ValueError, match="dagger_rounds needs pretrain_steps"):
        DemoConfig(episodes=8, dagger_rounds=2, dagger_episodes=8, dagger_steps=10)
    config = DemoConfig(episodes=8, pretrain_steps=10, dagger_rounds=2, dagger_episodes=4, dagger_steps=10)
    assert config.capacity_episodes == 16
