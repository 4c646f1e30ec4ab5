"""Planner-RL rollouts on Ray workers (`hgpo train-planner --workers`): the adapter weights reach the
workers every iteration, a worker killed mid-iteration loses no group, and a run trains as in one process.
With `rl.overlap`, the workers sample each next iteration during the update with the weights from before
it, the update scores those rollouts against them, and a run stopped with rollouts in flight drops them and
resumes as if never stopped."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch

from policies.planner_training import rl, runner
from policies.planner_training.config import PlannerTrainConfig, from_mapping
from policies.planner_training.model import load_policy
from policies.planner_training.rollouts import make_arena
from policies.planner_training.runner import train
from policies.sharding import Workers, episode_runner
from tests.ray_workers import Dies, second_group, second_group_of

STATES = ["reach:0:", "reach:1:"]


def _config(tiny_planner_dir: Path, **rl_settings: Any) -> PlannerTrainConfig:
    return from_mapping(
        {
            "algo": "grpo",
            "model": str(tiny_planner_dir),
            "eval_every": 0,
            "eval_episodes": 0,
            "rollout": {"tasks": ["reach"], "train_seeds": 2, "max_subgoals": 2, "subgoal_timeout_s": 4.0},
            "rl": {
                "group_size": 2,
                "states_per_iteration": 2,
                "iterations": 2,
                "minibatch": 4,
                **rl_settings,
            },
        }
    )


def _rows(run_dir: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]


def _same(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


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
        there = rl.play_on_workers(sample, policy.trainable_state(), STATES, 2, 5)
        assert marker.exists(), "a worker died mid-iteration"
        unperturbed = rl.play_on_workers(sample, fresh, STATES, 2, 5)
    assert _said(there) == _said(here) and len(there) == 4
    assert _said(unperturbed) != _said(here), "the perturbation changes what is sampled"


def test_grpo_with_two_rollout_workers_trains_and_logs_every_episode(
    ray_session: None, tiny_planner_dir: Path, tmp_path: Path
) -> None:
    outcome = train(_config(tiny_planner_dir), tmp_path / "run", progress=False, workers=Workers(count=2))
    rows = _rows(tmp_path / "run")
    assert outcome.steps == 2 and [row["rollout/kept_episodes"] for row in rows] == [4.0, 4.0]
    assert [row["train/staleness"] for row in rows] == [0.0, 0.0]
    for row in rows:  # taking turns: the iteration is its rollouts (all waited for) and its update
        assert row["perf/rollout_wait_s"] == row["perf/rollout_s"]
        assert row["perf/iteration_s"] >= row["perf/rollout_s"] + row["perf/update_s"]
        assert row["perf/peak_rss_gb"] > 0.1  # the learner's peak memory: at least the model it loaded
    assert (tmp_path / "run" / "adapter" / "adapter_config.json").is_file()


def test_bc_refuses_workers(tiny_planner_dir: Path, tmp_path: Path) -> None:
    config = from_mapping({"algo": "bc", "model": str(tiny_planner_dir)})
    with pytest.raises(ValueError, match="bc plays none"):
        train(config, tmp_path / "bc", progress=False, workers=Workers(count=2))


def test_overlapped_rollouts_sample_one_update_behind_and_lose_no_group_when_a_worker_dies(
    ray_session: None, tiny_planner_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """rl.overlap: iteration t+1's groups are sent with the weights from before update t (never older),
    update t+1 takes those as its behaviour policy, and a worker killed while it samples during an update
    is replaced and its group played again: every iteration has each state's group once."""
    sent: dict[int, tuple[dict[str, torch.Tensor], list[str]]] = {}  # iteration -> weights, states
    updates: list[tuple[dict[str, torch.Tensor], dict[str, torch.Tensor] | None]] = []  # before, behaviour
    play_on_workers, update = rl.play_on_workers, rl.update

    def sending(workers: Any, weights: dict[str, torch.Tensor], states: Any, repeats: int, seed: int) -> Any:
        episodes = play_on_workers(workers, weights, states, repeats, seed)
        sent[seed] = (weights, [e.state for e in episodes])  # seed: the iteration, in a run with seed 0
        return episodes

    def updating(policy: Any, *args: Any, behaviour: Any = None, **kwargs: Any) -> dict[str, float]:
        updates.append((policy.trainable_state(), behaviour))
        return update(policy, *args, behaviour=behaviour, **kwargs)

    marker = tmp_path / "died"

    def dying(players: Any, workers: Workers | None) -> Any:
        return episode_runner(Dies(players, partial(second_group_of, 2), marker), workers)

    monkeypatch.setattr(rl, "play_on_workers", sending)
    monkeypatch.setattr(rl, "update", updating)
    monkeypatch.setattr(runner, "episode_runner", dying)
    config = _config(tiny_planner_dir, iterations=3, overlap=True)
    outcome = train(config, tmp_path / "run", progress=False, workers=Workers(count=2))

    assert marker.exists(), "a worker died sampling iteration 2, during update 1"
    rows = _rows(tmp_path / "run")
    assert outcome.steps == 3 and [row["train/staleness"] for row in rows] == [0.0, 1.0, 1.0]
    assert [row["rollout/kept_episodes"] for row in rows] == [4.0, 4.0, 4.0]
    assert all(Counter(states) == Counter(STATES * 2) for _, states in sent.values()) and len(sent) == 3
    start = updates[0][0]
    after_first = updates[1][0]  # the learner's weights once update 1 was made
    assert not _same(after_first, start) and not _same(updates[2][0], after_first), "each update moved it"
    assert _same(sent[1][0], start) and _same(sent[2][0], start) and _same(sent[3][0], after_first)
    assert updates[0][1] is None  # iteration 1: on-policy
    assert _same(updates[1][1], start) and _same(updates[2][1], after_first)  # type: ignore[arg-type]
    assert all(row["perf/rollout_wait_s"] <= row["perf/rollout_s"] for row in rows)


def test_an_overlapped_run_stopped_mid_rollouts_resumes_as_if_never_stopped(
    ray_session: None, tiny_planner_dir: Path, tmp_path: Path
) -> None:
    """Stopped (Ctrl-C, time budget) after iteration 1, with iteration 2's rollouts in flight: those are
    dropped, the checkpoint keeps the weights that were sampling them, and the resumed run samples and
    scores iteration 2 with them: its metrics are the uninterrupted run's, clock figures aside."""
    config = _config(tiny_planner_dir, iterations=2, overlap=True)
    workers = Workers(count=2)
    train(config, tmp_path / "whole", progress=False, workers=workers)
    stop: Callable[[], bool] = lambda: True  # noqa: E731
    stopped = train(config, tmp_path / "parts", progress=False, stop=stop, workers=workers)
    assert stopped.stopped and stopped.steps == 1 and len(_rows(tmp_path / "parts")) == 1
    resumed = train(config, tmp_path / "parts", progress=False, workers=workers)
    assert resumed.steps == 2 and not resumed.stopped

    def clockless(run: str) -> list[dict[str, Any]]:
        return [{k: v for k, v in row.items() if not k.startswith("perf/")} for row in _rows(tmp_path / run)]

    assert clockless("parts") == clockless("whole")
    assert [row["train/staleness"] for row in clockless("parts")] == [0.0, 1.0]


def test_overlap_needs_workers_and_a_clipped_ratio(tiny_planner_dir: Path, tmp_path: Path) -> None:
    config = _config(tiny_planner_dir, overlap=True)
    with pytest.raises(ValueError, match="rl.overlap needs rollout workers"):
        train(config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    with pytest.raises(ValueError, match="dpo takes turns"):
        from_mapping({"algo": "dpo", "rl": {"overlap": True}})
