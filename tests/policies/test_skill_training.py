"""SAC + HER training on the MuJoCo tabletop: learning, run folders, resume and checkpoint errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest
import torch

from policies.skills.checkpoint import CheckpointError, load_actor
from policies.skills.config import CONFIG_DIR, config_from_dict, load_config, with_overrides
from policies.skills.environments import make_env
from policies.skills.evaluation import evaluate
from policies.skills.ppo_runner import PpoRunner
from policies.skills.runner import OffPolicyRunner
from policies.skills.training_checkpoint import load_training_checkpoint
from sim.skill_env import BACKENDS, RandomizationConfig

TINY = {
    "skill": "reach",
    "backend": "mujoco",
    "num_envs": 2,
    "env_steps": 400,
    "learning_starts": 100,
    "updates_per_step": 0.25,
    "eval_every": 200,
    "eval_episodes": 2,
    "checkpoint_every": 200,
    "env_options": {"max_episode_steps": 20},
    "sac": {"hidden": [16, 16], "batch_size": 32},
}


def test_reach_success_rises_from_the_untrained_baseline(tmp_path: Path) -> None:
    """CI-sized: reach on the gymnasium backend (FetchReach-v4: 5 cm radius, 5 cm moves) learns in ~2k steps.

    The tabletop's reach (2 cm radius, 1 cm moves) needs ~15k steps: its shipped policy's model card shows it.
    """
    config = config_from_dict(
        {
            "skill": "reach",
            "backend": "gymnasium",
            "seed": 0,
            "num_envs": 4,
            "env_steps": 4_000,
            "target_success": 0.9,
            "learning_starts": 500,
            "updates_per_step": 0.5,
            "eval_every": 500,
            "eval_episodes": 10,
            "checkpoint_every": 10**9,
            "sac": {"hidden": [64, 64], "batch_size": 256, "gamma": 0.95},
        }
    )
    runner = OffPolicyRunner(config, tmp_path / "run", progress=False)
    baseline = runner.evaluate_now()
    summary = runner.learn()
    curve = [(steps, result.success_rate) for steps, result in runner.evaluations]
    assert baseline.success_rate <= 0.3, baseline
    assert summary.final.success_rate >= 0.8, curve


def test_a_run_folder_has_config_metrics_plot_tensorboard_and_exportable_checkpoint(
    tmp_path: Path,
) -> None:
    run = tmp_path / "run"
    summary = OffPolicyRunner(config_from_dict(TINY), run, progress=False).learn()
    assert summary.env_steps == 400
    assert load_config(run / "config.yaml") == config_from_dict(TINY)
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["env_steps"] for row in rows] == [200, 400]
    assert all(0.0 <= row["eval/success_rate"] <= 1.0 for row in rows)
    assert (run / "metrics.csv").read_text().startswith("env_steps,")
    assert (run / "curves.png").stat().st_size > 1000
    assert any((run / "tensorboard").iterdir())
    actor, info = load_actor(run / "checkpoints" / "last.pt")
    assert info.skills == ("reach",) and info.run_id == "run"
    assert info.control_period_s == pytest.approx(0.04)
    assert [name for name, _ in info.obs_layout][:3] == ["ee_position.x", "ee_position.y", "ee_position.z"]
    action = actor(torch.zeros(1, actor.config.obs_dim), torch.zeros(1, actor.config.goal_dim))
    assert action.shape == (1, 4)


def test_resume_continues_from_the_last_checkpoint(tmp_path: Path) -> None:
    run = tmp_path / "run"
    OffPolicyRunner(config_from_dict(TINY), run, progress=False).learn()
    saved, replay, _ = load_training_checkpoint(run / "checkpoints" / "last.pt")
    assert replay is not None and replay["length"].sum() > 0

    longer = with_overrides(config_from_dict(TINY), {"env_steps": 600})
    resumed = OffPolicyRunner(longer, run, progress=False)
    resumed._resume(run / "checkpoints" / "last.pt")
    assert resumed.env_steps == 400 and resumed.updates == saved["updates"]
    assert resumed.buffer.size == int(replay["length"].sum())
    for name, value in saved["sac"]["actor"].items():
        torch.testing.assert_close(resumed.agent.actor.state_dict()[name], value)

    summary = OffPolicyRunner(longer, run, progress=False).learn()
    assert summary.env_steps == 600
    assert load_config(run / "config.yaml").env_steps == 600  # the raised budget is the run's config now
    state, _, _ = load_training_checkpoint(run / "checkpoints" / "last.pt")
    assert state["updates"] > saved["updates"]
    rows = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert [row["env_steps"] for row in rows] == [200, 400, 600]


def test_a_corrupt_or_foreign_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    run = tmp_path / "run"
    (run / "checkpoints").mkdir(parents=True)
    last = run / "checkpoints" / "last.pt"
    last.write_bytes(b"not a torch file")
    with pytest.raises(CheckpointError, match="not a readable torch file"):
        OffPolicyRunner(config_from_dict(TINY), run, progress=False).learn()
    torch.save({"format": "something else"}, last)
    with pytest.raises(CheckpointError, match="not a SAC training checkpoint"):
        load_training_checkpoint(last)
    with pytest.raises(CheckpointError, match="does not exist"):
        load_training_checkpoint(run / "missing.pt")


def test_pretraining_on_demonstrations_lifts_pick_and_place_before_any_rl_step(tmp_path: Path) -> None:
    """CI-sized: behaviour cloning of the scripted expert (noisy rollouts, its own actions as targets) takes
    the untrained actor's pick and place success from about nothing to most episodes, before RL begins."""
    config = config_from_dict(
        {
            "skill": "pick_and_place",
            "backend": "mujoco",
            "seed": 0,
            "num_envs": 4,
            "env_steps": 4,
            "learning_starts": 1000,
            "eval_episodes": 20,
            "env_options": {"max_episode_steps": 100},
            "demos": {"episodes": 100, "action_noise": 0.2, "pretrain_steps": 2000},
            "sac": {"hidden": [128, 128], "batch_size": 256},
        }
    )
    runner = OffPolicyRunner(config, tmp_path / "run", progress=False)
    baseline = runner.evaluate_now()
    runner.learn()
    steps, pretrained = runner.evaluations[0]
    assert steps == 0 and baseline.success_rate <= 0.1, baseline
    assert pretrained.success_rate >= 0.5, pretrained

    # Its sampled actions, which RL explores with, succeed too: pretraining fits the std to the cloning error
    # (left untrained, it stayed ~1 in pre-tanh units and sampled episodes were near-random).
    def sample(obs: np.ndarray, goal: np.ndarray) -> np.ndarray:
        return runner.agent.act(torch.from_numpy(obs), torch.from_numpy(goal)).numpy()

    sampled = evaluate(runner.eval_env, sample, 20)
    assert sampled.success_rate >= 0.6, sampled

    # RL from there keeps the input scales the actor was cloned with (moving them undid the cloning).
    cloned = runner.agent.actor.input_statistics()
    more = OffPolicyRunner(
        with_overrides(config, {"env_steps": 700, "learning_starts": 500}), tmp_path / "run", progress=False
    )
    more.learn()
    assert more.updates > 0
    for before, after in zip(cloned, more.agent.actor.input_statistics(), strict=True):
        torch.testing.assert_close(after, before)


def test_dagger_rounds_add_the_clones_own_episodes_to_the_demonstrations(tmp_path: Path) -> None:
    config = config_from_dict(
        {
            **TINY,
            "skill": "pick_and_place",
            "env_steps": 2,
            "demos": {
                "episodes": 4,
                "pretrain_steps": 5,
                "dagger_rounds": 2,
                "dagger_episodes": 2,
                "dagger_steps": 5,
            },
        }
    )
    runner = OffPolicyRunner(config, tmp_path / "run", progress=False)
    runner.learn()
    assert runner.demos is not None and runner.demos.episodes_stored == 4 + 2 * 2
    assert [steps for steps, _ in runner.evaluations] == [0, 2]
    rows = [json.loads(line) for line in (tmp_path / "run" / "metrics.jsonl").read_text().splitlines()]
    assert rows[0]["env_steps"] == 0 and rows[0]["loss/pretrain_bc_loss"] > 0


def test_configs_reject_unknown_keys_and_the_shipped_ones_load() -> None:
    with pytest.raises(ValueError, match="unknown key.*learning_rate.*known"):
        config_from_dict({**TINY, "learning_rate": 1.0})
    with pytest.raises(ValueError, match=r"config\.sac: unknown key"):
        config_from_dict({**TINY, "sac": {"lr": 1.0}})
    for name in ("reach", "pick_and_place"):
        assert load_config(name).skill == name
    assert load_config("pick_and_place").demos.pretrain_steps > 0


def test_training_randomization_knobs_reach_the_training_envs_only() -> None:
    """pick_and_place trains across sensor qualities; its evaluations keep the default randomization, where
    `hgpo eval-skills --randomize` measures it and every other policy."""
    config = load_config("pick_and_place")
    assert config.randomization == {"observation_noise_scale": [0.0, 1.0]}
    train, evaluation = make_env(config, 1, 0), make_env(config, 1, 0, evaluation=True)
    with train, evaluation:
        assert train.randomization == dataclasses.replace(
            RandomizationConfig.load(), observation_noise_scale=(0.0, 1.0)
        )
        assert evaluation.randomization == RandomizationConfig.load()
    with pytest.raises(ValueError, match=r"randomization: unknown key\(s\) observation_noise"):
        config_from_dict({**TINY, "randomize": True, "randomization": {"observation_noise": 0.0}})
    with pytest.raises(ValueError, match="randomize is false"):
        config_from_dict({**TINY, "randomization": {"observation_noise_scale": [0.0, 1.0]}})


def test_a_device_without_cuda_is_refused_before_the_run_folder_is_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(ValueError, match="device must be cpu or cuda"):
        config_from_dict({**TINY, "device": "tpu"})
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    for runner, algorithm in ((OffPolicyRunner, "sac"), (PpoRunner, "ppo")):
        config = config_from_dict({**TINY, "algorithm": algorithm, "device": "cuda"})
        with pytest.raises(ValueError, match="sees no CUDA GPU.*--device cpu"):
            runner(config, tmp_path / "run", progress=False)
        assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("path", sorted(CONFIG_DIR.glob("*.yaml")), ids=lambda path: path.stem)
def test_every_shipped_config_loads_and_names_a_registered_backend(path: Path) -> None:
    config = load_config(path.stem)
    assert config.skill in BACKENDS[config.backend].skills
