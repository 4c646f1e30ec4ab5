"""The goal-conditioned actor and critic, and the actor checkpoint round trip."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch.distributions import Normal, TransformedDistribution
from torch.distributions.transforms import TanhTransform

from policies.skills.checkpoint import CheckpointError, PolicyInfo, load_actor, save_actor
from policies.skills.networks import ActorConfig, GoalConditionedActor, GoalConditionedCritic

CONFIG = ActorConfig(obs_dim=7, goal_dim=3, hidden=(32, 32))
INFO = PolicyInfo(
    skills=("reach",),
    obs_layout=(("ee_position", 3), ("gripper_width", 1), ("goal_delta", 3)),
    goal_layout=(("goal_position", 3),),
    action_scale=0.25,
    control_period_s=0.04,
    run_id="test",
)


def trained_statistics_actor() -> GoalConditionedActor:
    torch.manual_seed(0)
    actor = GoalConditionedActor(CONFIG)
    actor.update_normalizers(torch.randn(256, 7) * 2 + 1, torch.randn(256, 3))
    return actor


def test_normalizer_matches_batch_statistics_over_several_updates() -> None:
    actor = GoalConditionedActor(CONFIG)
    obs, goal = torch.randn(1000, 7) * 3 + 1, torch.randn(1000, 3) * 0.1
    for chunk in range(0, 1000, 300):
        actor.update_normalizers(obs[chunk : chunk + 300], goal[chunk : chunk + 300])
    torch.testing.assert_close(actor.obs_normalizer.mean, obs.mean(0), atol=1e-5, rtol=0)
    torch.testing.assert_close(actor.obs_normalizer.var, obs.var(0, unbiased=False), atol=1e-4, rtol=1e-4)
    assert float(actor.obs_normalizer.count) == 1000
    assert actor.obs_normalizer(torch.full((1, 7), 1e6)).max() == CONFIG.norm_clip


def test_deterministic_action_is_tanh_of_the_mean_and_bounded() -> None:
    actor = trained_statistics_actor()
    obs, goal = torch.randn(64, 7) * 100, torch.randn(64, 3) * 100
    action = actor(obs, goal)
    assert action.shape == (64, 4) and action.abs().max() <= 1
    torch.testing.assert_close(action, actor(obs, goal))  # no sampling in forward


def test_sample_log_prob_matches_torch_tanh_gaussian() -> None:
    actor = trained_statistics_actor()
    obs, goal = torch.randn(16, 7), torch.randn(16, 3)
    torch.manual_seed(1)
    action, log_prob = actor.sample(obs, goal)
    mean, log_std = actor.mean_log_std(obs, goal)
    dist = TransformedDistribution(Normal(mean, log_std.exp()), [TanhTransform(cache_size=1)])
    torch.manual_seed(1)
    reference = dist.rsample()
    torch.testing.assert_close(action, reference)
    torch.testing.assert_close(log_prob, dist.log_prob(reference).sum(-1), atol=1e-4, rtol=1e-5)
    assert action.requires_grad  # reparameterized: SAC's actor loss differentiates through it


def test_the_log_std_behaviour_cloning_fits_moves_only_the_output_layer() -> None:
    """Fitting the spread must not bend the features the cloned mean is read from."""
    actor = trained_statistics_actor()
    obs, goal = torch.randn(16, 7), torch.randn(16, 3)
    mean, log_std = actor.mean_and_detached_log_std(obs, goal)
    reference_mean, reference_log_std = actor.mean_log_std(obs, goal)
    torch.testing.assert_close(mean, reference_mean)
    torch.testing.assert_close(log_std, reference_log_std)
    log_std.sum().backward()
    *hidden, head = (layer for layer in actor.trunk if isinstance(layer, torch.nn.Linear))
    assert all(layer.weight.grad is None for layer in hidden)
    assert head.weight.grad is not None and head.weight.grad[4:].abs().sum() > 0
    assert head.weight.grad[:4].abs().sum() == 0


def test_critic_gives_one_value_per_head_and_sample() -> None:
    actor, critic = trained_statistics_actor(), GoalConditionedCritic(CONFIG, num_q=2)
    obs, goal = torch.randn(5, 7), torch.randn(5, 3)
    assert critic(actor.normalize(obs, goal), actor(obs, goal)).shape == (2, 5)


def test_checkpoint_round_trip_rebuilds_the_same_policy(tmp_path: Path) -> None:
    actor = trained_statistics_actor()
    save_actor(tmp_path / "actor.pt", actor, INFO)
    loaded, info = load_actor(tmp_path / "actor.pt")
    assert info == INFO and loaded.config == CONFIG and not loaded.training
    obs, goal = torch.randn(8, 7), torch.randn(8, 3)
    torch.testing.assert_close(loaded(obs, goal), actor.eval()(obs, goal))


def test_bad_checkpoints_are_clear_errors(tmp_path: Path) -> None:
    with pytest.raises(CheckpointError, match="does not exist"):
        load_actor(tmp_path / "missing.pt")
    (tmp_path / "garbage.pt").write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="not a readable torch file"):
        load_actor(tmp_path / "garbage.pt")
    torch.save({"model": {}}, tmp_path / "foreign.pt")
    with pytest.raises(CheckpointError, match="missing actor_config, actor_state, policy_info"):
        load_actor(tmp_path / "foreign.pt")
    with pytest.raises(ValueError, match="do not fit"):
        save_actor(tmp_path / "x.pt", GoalConditionedActor(ActorConfig(obs_dim=5, goal_dim=3)), INFO)
