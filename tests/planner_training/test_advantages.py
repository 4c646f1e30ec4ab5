"""Advantage estimators on a hand-computed batch: one initial state, three episodes of three steps.

    episode  observations   subgoals   rewards   return
    e1       s0 s1 s2       a  b  x    0 0 1     1
    e2       s0 s1 s2       a  b  y    0 0 0     0
    e3       s0 s3 s2       c  d  x    0 0 0     0

e3 reaches s2 through another history than e1 and e2: GiGPO pools all three s2 steps, HGPO also compares
e1 and e2 alone at depths 1 and 2, where they share the context.
"""

from __future__ import annotations

import numpy as np
import pytest

from policies.planner_training.advantages import Steps, advantages, gigpo, grpo, hgpo, returns_to_go


@pytest.fixture
def steps() -> Steps:
    return Steps(
        group=["g"] * 9,
        episode=["e1"] * 3 + ["e2"] * 3 + ["e3"] * 3,
        reward=np.array([0, 0, 1, 0, 0, 0, 0, 0, 0], dtype=float),
        observation=["s0", "s1", "s2", "s0", "s1", "s2", "s0", "s3", "s2"],
        action=["a", "b", "x", "a", "b", "y", "c", "d", "x"],
    )


def test_returns_to_go_are_discounted_within_each_episode(steps: Steps) -> None:
    np.testing.assert_allclose(returns_to_go(steps, 0.5)[:3], [0.25, 0.5, 1.0])
    np.testing.assert_allclose(returns_to_go(steps, 0.5)[3:], 0.0)


def test_grpo_normalizes_episode_returns_within_the_group(steps: Steps) -> None:
    # returns 1, 0, 0: mean 1/3, population std sqrt(2)/3
    np.testing.assert_allclose(grpo(steps, std=False), [2 / 3] * 3 + [-1 / 3] * 6)
    np.testing.assert_allclose(grpo(steps), [np.sqrt(2)] * 3 + [-np.sqrt(0.5)] * 6, rtol=1e-5)


def test_grpo_keeps_groups_apart_and_a_lone_episode_gets_zero() -> None:
    batch = Steps(
        group=["g1", "g1", "g2"],
        episode=["e1", "e2", "e3"],
        reward=np.array([1.0, 3.0, 5.0]),
        observation=["s", "s", "s"],
        action=["a", "b", "c"],
    )
    np.testing.assert_allclose(grpo(batch, std=False), [-1.0, 1.0, 0.0])


def test_gigpo_adds_anchor_state_groups(steps: Steps) -> None:
    # step groups by observation: s0 {1,0,0}, s1 {1,0}, s3 alone, s2 {1,0,0} (returns-to-go, gamma 1)
    step = np.array([2 / 3, 1 / 2, 2 / 3, -1 / 3, -1 / 2, -1 / 3, -1 / 3, 0.0, -1 / 3])
    expected = grpo(steps, std=False) + 0.5 * step
    np.testing.assert_allclose(gigpo(steps, gamma=1.0, step_weight=0.5, std=False), expected)


def test_hgpo_weights_deeper_context_groups_by_length(steps: Steps) -> None:
    # e1/e2 at t=2 sit in groups at depth 0 (s2: {1,0,0}), 1 and 2 ({1,0}): weights 1, 2, 3
    e1_last = (2 / 3 * 1 + 1 / 2 * 2 + 1 / 2 * 3) / 6
    e2_last = (-1 / 3 * 1 - 1 / 2 * 2 - 1 / 2 * 3) / 6
    step = np.array([2 / 3, 1 / 2, e1_last, -1 / 3, -1 / 2, e2_last, -1 / 3, 0.0, -1 / 3])
    got = hgpo(steps, gamma=1.0, step_weight=1.0, std=False, max_depth=2, alpha=1.0)
    np.testing.assert_allclose(got, grpo(steps, std=False) + step)
    assert e1_last == pytest.approx(19 / 36) and e2_last == pytest.approx(-17 / 36)


def test_hgpo_at_depth_zero_is_gigpo(steps: Steps) -> None:
    np.testing.assert_allclose(
        hgpo(steps, gamma=0.9, max_depth=0), gigpo(steps, gamma=0.9), rtol=1e-12, atol=1e-12
    )


def test_alpha_zero_weights_every_depth_alike(steps: Steps) -> None:
    got = hgpo(steps, gamma=1.0, step_weight=1.0, std=False, max_depth=2, alpha=0.0)
    assert got[2] - grpo(steps, std=False)[2] == pytest.approx((2 / 3 + 1 / 2 + 1 / 2) / 3)


def test_unknown_estimator_lists_the_known_ones(steps: Steps) -> None:
    with pytest.raises(ValueError, match="known: grpo, gigpo, hgpo"):
        advantages("ppo", steps)


def test_mismatched_arrays_are_refused() -> None:
    with pytest.raises(ValueError, match="differ in length"):
        Steps(group=["g"], episode=["e", "f"], reward=np.zeros(1), observation=["s"], action=["a"])
