"""Hindsight relabelling on small episodes whose every possible sample can be listed by hand."""

from __future__ import annotations

import numpy as np
import pytest

from policies.skills.her_buffer import HerReplayBuffer


def sparse_reward(achieved: np.ndarray, desired: np.ndarray) -> np.ndarray:
    """0 when within 0.5 of the goal, else -1 (the Fetch convention)."""
    return -(np.linalg.norm(achieved - desired, axis=-1) > 0.5).astype(np.float32)


def make_buffer(
    num_envs: int = 1, her_k: int = 4, horizon: int = 3, expert_actions: bool = False
) -> HerReplayBuffer:
    return HerReplayBuffer(
        num_envs=num_envs,
        obs_dim=1,
        goal_dim=1,
        action_dim=1,
        horizon=horizon,
        capacity=100,
        compute_reward=sparse_reward,
        her_k=her_k,
        seed=0,
        expert_actions=expert_actions,
    )


def add_episode(buffer: HerReplayBuffer, achieved: list[float], goal: float) -> None:
    """One env's episode: obs t, action t (the expert meant -t), reaching achieved[t] after step t."""
    for t, reached in enumerate(achieved):
        one = np.array([[float(t)]], np.float32)
        buffer.add(
            obs=one,
            goal=np.array([[goal]]),
            action=one,
            next_obs=one + 1,
            next_achieved=np.array([[reached]]),
            terminated=np.array([False]),
            done=np.array([t == len(achieved) - 1]),
            expert_action=-one if buffer.expert_action.size else None,
        )


def test_future_relabelling_matches_the_hand_computed_samples() -> None:
    buffer = make_buffer(her_k=4)
    add_episode(buffer, achieved=[1.0, 2.0, 3.0], goal=10.0)
    batch = buffer.sample(30_000)
    t = batch.obs[:, 0].astype(int)
    goal = batch.goal[:, 0]
    # Step t reached achieved[t] = t + 1. Its goal is the episode's (10) or one reached at a step >= t.
    allowed = {0: {1.0, 2.0, 3.0, 10.0}, 1: {2.0, 3.0, 10.0}, 2: {3.0, 10.0}}
    for step, goals in allowed.items():
        assert set(np.unique(goal[t == step])) == goals
    # Reward 0 exactly when the goal is what that step reached, recomputed for relabelled goals.
    np.testing.assert_array_equal(batch.reward, np.where(goal == t + 1, 0.0, -1.0))
    # k = 4: 4 of 5 goals relabelled; steps sampled uniformly; future steps uniform in [t, end).
    assert np.mean(goal != 10.0) == pytest.approx(0.8, abs=0.01)
    assert np.bincount(t) / len(t) == pytest.approx([1 / 3] * 3, abs=0.015)
    first = goal[(t == 0) & (goal != 10.0)]
    assert [np.mean(first == g) for g in (1.0, 2.0, 3.0)] == pytest.approx([1 / 3] * 3, abs=0.02)
    np.testing.assert_array_equal(batch.action, batch.obs)
    np.testing.assert_array_equal(batch.next_obs, batch.obs + 1)


def test_without_relabelling_goals_and_rewards_are_the_episodes_own() -> None:
    buffer = make_buffer(her_k=0)
    add_episode(buffer, achieved=[1.0, 2.0, 10.2], goal=10.0)
    batch = buffer.sample(1_000)
    assert np.all(batch.goal == 10.0)
    np.testing.assert_array_equal(batch.reward, np.where(batch.obs[:, 0] == 2, 0.0, -1.0))


def test_demonstrations_keep_the_expert_action_and_can_be_drawn_with_their_own_goals() -> None:
    """A demonstration buffer pairs each executed action with the one the expert meant (behaviour cloning's
    target) through sampling and a save and load; `relabel=False` draws the goals the expert pursued."""
    buffer = make_buffer(her_k=4, expert_actions=True)
    add_episode(buffer, achieved=[1.0, 2.0, 3.0], goal=10.0)
    batch = buffer.sample(1_000)
    assert batch.expert_action is not None
    np.testing.assert_array_equal(batch.expert_action, -batch.action)
    assert np.mean(batch.goal != 10.0) > 0.7
    assert np.all(buffer.sample(1_000, relabel=False).goal == 10.0)
    restored = make_buffer(her_k=4, expert_actions=True)
    restored.load_state_dict(buffer.state_dict())
    again = restored.sample(100)
    assert again.expert_action is not None
    np.testing.assert_array_equal(again.expert_action, -again.action)
    plain = make_buffer()
    add_episode(plain, achieved=[1.0], goal=10.0)
    assert plain.sample(10).expert_action is None
    from_before = make_buffer(expert_actions=True)  # a demonstration file saved without expert actions
    from_before.load_state_dict({k: v for k, v in plain.state_dict().items() if k != "expert_action"})
    old = from_before.sample(10)
    assert old.expert_action is not None
    np.testing.assert_array_equal(old.expert_action, old.action)
    with pytest.raises(ValueError, match="expert_action"):
        make_buffer(expert_actions=True).add(*(np.zeros((1, 1)),) * 5, np.array([False]), np.array([True]))


def test_only_complete_episodes_are_sampled_and_envs_keep_their_own_episodes() -> None:
    buffer = make_buffer(num_envs=2, her_k=4, horizon=4)
    with pytest.raises(RuntimeError, match="no complete episode"):
        buffer.sample(1)
    # env 0 ends after 2 steps, env 1 is still running after 3.
    for t in range(3):
        buffer.add(
            obs=np.array([[t], [100 + t]], np.float32),
            goal=np.array([[0.0], [0.0]]),
            action=np.zeros((2, 1)),
            next_obs=np.zeros((2, 1)),
            next_achieved=np.array([[t], [100 + t]], np.float32),
            terminated=np.array([False, False]),
            done=np.array([t == 1, False]),
        )
    assert buffer.size == 2 and buffer.episodes_stored == 1
    batch = buffer.sample(500)
    assert set(np.unique(batch.obs)) == {0.0, 1.0}
    assert set(np.unique(batch.goal)) <= {0.0, 1.0}
    # env 0's next episode went to a new slot: its third step did not land in the finished episode.
    assert buffer.length[buffer._slot[0]] == 0


def test_an_episode_filling_the_horizon_is_closed_without_done() -> None:
    buffer = make_buffer(horizon=2)
    zero = np.zeros((1, 1))
    for _ in range(2):
        buffer.add(zero, zero, zero, zero, zero, terminated=np.array([False]), done=np.array([False]))
    assert buffer.episodes_stored == 1 and buffer.size == 2
