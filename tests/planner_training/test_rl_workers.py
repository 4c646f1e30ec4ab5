"""Planner-RL rollouts on Ray workers (`hgpo train-planner --workers`): the adapter weights reach the
workers every iteration, a worker killed mid-iteration loses no group, and a run trains as in one process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from policies.planner_training import rl
from policies.planner_training.config import PlannerTrainConfig, from_mapping
from policies.planner_training.model import load_policy
from policies.planner_training.rollouts import make_arena
from policies.planner_training.runner import train
from policies.sharding import Workers, episode_runner
from tests.ray_workers import Dies, second_group

STATES = ["reach:0:", "reach:1:"]


def _config(tiny_planner_dir: Path) -> PlannerTrainConfig:
    return from_mapping(
        {
            "algo": "grpo",
            "model": str(tiny_planner_dir),
            "eval_every": 0,
            "eval_episodes": 0,
            "rollout": {"tasks": ["reach"], "train_seeds": 2, "max_subgoals": 2, "subgoal_timeout_s": 4.0},
            "rl": {"group_size": 2, "states_per_iteration": 2, "iterations": 2, "minibatch": 4},
        }
    )


def _said(episodes: list) -> list[tuple]:
    return [(e.state, e.success, tuple(d.subgoal for d in e.decisions)) for e in episodes]


def test_workers_sample_with_the_weights_sent_and_lose_no_group_when_one_dies(
    ray_session: None, tiny_planner_dir: Path, tmp_path: Path
) -> None:
    """The learner's adapter, perturbed so that it samples differently from a fresh one, reaches the
    workers: they play each group as this process plays it under that group's seed; a worker that dies
    mid-iteration is replaced and its group played again."""
    config = _config(tiny_planner_dir)
    policy = load_policy(config.model, "", config.lora)
    fresh = policy.trainable_state()
    generator = torch.Generator().manual_seed(0)
    policy.load_trainable_state(
        {name: value + torch.randn(value.shape, generator=generator) for name, value in fresh.items()}
    )
    arena = make_arena("tabletop", config.rollout)
    try:
        here = [
            episode
            for n, state in enumerate(STATES)
            for episode in rl.play(arena, policy, config, [state], 2, True, 5 * 1_000_003 + n)
        ]
    finally:
        arena.close()
    marker = tmp_path / "died"
    players = Dies(rl.RolloutPlayers(config), second_group, marker)
    with episode_runner(players, Workers(count=2)) as sample:
        there = rl.play_on_workers(sample, policy, STATES, 2, 5)
        assert marker.exists(), "a worker died mid-iteration"
        policy.load_trainable_state(fresh)
        unperturbed = rl.play_on_workers(sample, policy, STATES, 2, 5)
    assert _said(there) == _said(here) and len(there) == 4
    assert _said(unperturbed) != _said(here), "the perturbation changes what is sampled"


def test_grpo_with_two_rollout_workers_trains_and_logs_every_episode(
    ray_session: None, tiny_planner_dir: Path, tmp_path: Path
) -> None:
    outcome = train(_config(tiny_planner_dir), tmp_path / "run", progress=False, workers=Workers(count=2))
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert outcome.steps == 2 and [row["rollout/kept_episodes"] for row in rows] == [4.0, 4.0]
    assert (tmp_path / "run" / "adapter" / "adapter_config.json").is_file()


def test_bc_refuses_workers(tiny_planner_dir: Path, tmp_path: Path) -> None:
    config = from_mapping({"algo": "bc", "model": str(tiny_planner_dir)})
    with pytest.raises(ValueError, match="bc plays none"):
        train(config, tmp_path / "bc", progress=False, workers=Workers(count=2))
