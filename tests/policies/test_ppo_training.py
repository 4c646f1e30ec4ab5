"""rsl-rl-lib PPO on our env contract: the VecEnv adapter on hand-checked steps, and a short learning run."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

from policies.skills.config import TrainConfig, config_from_dict, load_config, with_overrides
from policies.skills.environments import policy_info
from policies.skills.export import PARITY_TOLERANCE, export_checkpoint
from policies.skills.loaded_policy import load_policy
from policies.skills.onnx_policy import OnnxPolicy
from policies.skills.ppo_runner import PpoRunner
from policies.skills.rsl_rl_env import RslRlGoalEnv
from sim.skill_env import make_skill_env


def test_the_adapter_gives_rsl_rl_groups_dense_rewards_and_time_outs() -> None:
    env = RslRlGoalEnv(make_skill_env("mujoco", "reach", 2, seed=0, max_episode_steps=3), "dense", seed=0)
    assert (env.num_envs, env.num_actions, env.max_episode_length) == (2, 4, 3)
    assert not env.on_device  # numpy steps, read in place and moved to the learner's device
    obs = env.get_observations()
    assert obs.batch_size == torch.Size([2])
    assert {key: tuple(obs[key].shape) for key in obs.keys()} == {  # noqa: SIM118 (iterating a TensorDict walks its batch)
        "observation": (2, 14),
        "achieved_goal": (2, 3),
        "desired_goal": (2, 3),
    }
    first_goal = obs["desired_goal"].clone()
    actions = torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, -3.0, 0.0, 0.0]])  # the -3 is clipped, not refused
    for step in range(1, 4):
        obs, rewards, dones, extras = env.step(actions)
        assert rewards.shape == (2,) and rewards.dtype == torch.float32
        if step < 3:
            # Mid-episode the returned observation is the one the action led to: reward = -distance.
            distance = torch.linalg.norm(obs["achieved_goal"] - obs["desired_goal"], dim=-1)
            torch.testing.assert_close(rewards, -distance)
            assert not dones.any() and not extras["time_outs"].any()
            assert env.episode_length_buf.tolist() == [step, step]
            assert env.pop_episodes().returns == []
    # Step 3 hit the time limit in both envs: done, flagged as a time out (PPO bootstraps), counters reset,
    # and the returned observation starts the next episode (a new goal).
    assert dones.tolist() == [1, 1] and extras["time_outs"].tolist() == [True, True]
    assert env.episode_length_buf.tolist() == [0, 0]
    assert not torch.equal(obs["desired_goal"], first_goal)
    episodes = env.pop_episodes()
    assert len(episodes.returns) == 2 and all(r < 0 for r in episodes.returns)
    assert np.allclose(episodes.final_distances, -rewards.numpy(), atol=1e-6)
    assert set(extras["log"]) == {"/episode/success", "/episode/final_distance"}
    with pytest.raises(ValueError, match="unknown reward 'shaped'; known: dense, sparse"):
        RslRlGoalEnv(env.env, "shaped")


def _reach_ppo(**fields: Any) -> TrainConfig:
    """A short PPO run on reach with reach_ppo.yaml's PPO settings, 4 evaluation episodes."""
    shipped = load_config("reach_ppo")
    ppo = {**shipped.ppo.__dict__, "hidden": list(shipped.ppo.hidden)}
    return config_from_dict(
        {"skill": "reach", "algorithm": "ppo", "seed": 0, "eval_episodes": 4, "ppo": ppo, **fields}
    )


def test_ppo_on_reach_brings_the_grip_closer_than_its_measured_start_and_resumes(tmp_path: Path) -> None:
    """~30 s: 16 tabletop reach envs, 11.5k env steps of rsl-rl PPO on the dense reward (reach_ppo.yaml's
    settings). The first rows measure the near-random initial policy's episodes; the end must be closer.
    Then the same folder with a larger budget continues from its checkpoint."""
    config = _reach_ppo(
        backend="mujoco",
        num_envs=16,
        env_options={"max_episode_steps": 50},
        env_steps=11_520,
        eval_every=1_920,
    )
    run_dir = tmp_path / "run"
    summary = PpoRunner(config, run_dir, progress=False).learn()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    distances = [row["train/final_distance"] for row in rows if "train/final_distance" in row]
    assert summary.env_steps == 11_520 and len(distances) == 6
    assert distances[-1] < distances[0] - 0.02, distances
    for name in ("config.yaml", "metrics.csv", "curves.png", "checkpoints/last.pt", "rsl_rl/console.log"):
        assert (run_dir / name).is_file(), name
    assert list((run_dir / "tensorboard").glob("events.*")) and list((run_dir / "rsl_rl").glob("events.*"))
    runner = PpoRunner(with_overrides(config, {"env_steps": 13_440}), run_dir, progress=False)
    resumed = runner.learn()
    steps = [json.loads(line)["env_steps"] for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert resumed.env_steps == 13_440 and steps[-2:] == [11_520, 13_440]
    assert load_config(run_dir / "config.yaml").env_steps == 13_440
    _exports_and_evaluates_like_the_runner(run_dir, runner)


def _exports_and_evaluates_like_the_runner(run_dir: Path, runner: PpoRunner) -> None:
    """The PPO checkpoint becomes an ONNX policy file (parity-checked by export) that acts as the runner's
    deterministic policy does, and eval-skills' loader takes the checkpoint itself too."""
    report = export_checkpoint(run_dir / "checkpoints" / "last.pt", run_dir / "policy.onnx")
    assert report.max_abs_error <= PARITY_TOLERANCE and report.info.skills == ("reach",)
    assert report.info.obs_layout == policy_info(runner.eval_env, "").obs_layout
    observation = runner.eval_env.reset(seed=3)
    obs, goal = observation["observation"], observation["desired_goal"]
    expected = runner.policy(obs, goal)
    assert np.abs(expected).max() > 0.05  # a trained policy, not zeros that any graph would match
    onnx = OnnxPolicy(run_dir / "policy.onnx")
    np.testing.assert_allclose(onnx.act_batch(obs, goal), expected, atol=1e-4)
    loaded, info = load_policy(run_dir / "checkpoints" / "last.pt")
    np.testing.assert_allclose(loaded(obs, goal), expected, atol=1e-5)
    assert info == report.info


@pytest.mark.timeout(900)  # the first test of a run to compile the MJX step: 40 s to 4 min, by the CPU
def test_ppo_trains_on_the_mjx_backend_and_exports(tmp_path: Path) -> None:
    """The smoke test the CPU path owes the GPU one: rsl-rl PPO for 288 env steps on 4 MJX envs (JAX on the
    CPU), the run folder, the checkpoint, and an ONNX file whose inputs are the mujoco backend's. The envs
    match tests/sim/test_skill_env_mjx.py's (4 envs, a bank of 16), so the compiled step is shared."""
    pytest.importorskip("mujoco.mjx")
    config = _reach_ppo(
        backend="mjx", num_envs=4, env_options={"episode_bank": 16}, env_steps=288, eval_every=96
    )
    run_dir = tmp_path / "run"
    runner = PpoRunner(config, run_dir, progress=False)
    assert runner.env.on_device  # JAX and torch both on the CPU: the steps hand over by DLPack
    summary = runner.learn()
    rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
    assert summary.env_steps == 288 and summary.backend == "mjx"
    assert [row["env_steps"] for row in rows if "eval/success_rate" in row][-1] == 288
    assert any("train/final_distance" in row for row in rows)  # reach's 50-step episodes ended
    _exports_and_evaluates_like_the_runner(run_dir, runner)
    mujoco_env = make_skill_env("mujoco", "reach", 1, seed=0)
    assert policy_info(mujoco_env, "").obs_layout == policy_info(runner.eval_env, "").obs_layout


def test_ppo_starts_from_a_trained_policy_distilled_into_its_actor(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`ppo.init_policy`: the shipped reach ONNX policy (an actor of another shape) taught to PPO's actor by
    DAgger before any PPO step. From scratch, the first evaluation of the same run wins none of 16 reach
    episodes; started from the teacher, it wins most, and the distillation's rounds are in the metrics. A
    critic warm-up leaves the started actor and its input normalization as they were."""
    teacher = Path(__file__).resolve().parents[2] / "policies/pretrained/skills/reach/policy.onnx"
    fields: dict[str, Any] = {
        "backend": "mujoco",
        "num_envs": 32,
        "eval_episodes": 16,
        "env_options": {"max_episode_steps": 50},
        "env_steps": 768,
        "eval_every": 768,
    }
    started: list[dict[str, torch.Tensor]] = []  # the actor as distillation left it
    keep_input_scales = PpoRunner._keep_input_scales

    def keep_and_record(runner: PpoRunner) -> None:
        keep_input_scales(runner)
        started.append(copy.deepcopy(runner.runner.alg.actor.state_dict()))

    monkeypatch.setattr(PpoRunner, "_keep_input_scales", keep_and_record)
    first_success = {}
    for start in ("", str(teacher)):
        ppo = {
            "init_policy": start,
            "distill_rounds": 4,
            "init_std": 0.2,
            "critic_warmup_iterations": int(bool(start)),
        }
        config = with_overrides(_reach_ppo(**fields), {"ppo": ppo})
        run_dir = tmp_path / ("distilled" if start else "scratch")
        runner = PpoRunner(config, run_dir, progress=False)
        runner.learn()
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        first_success[start] = next(row["eval/success_rate"] for row in rows if "eval/success_rate" in row)
        distilled = [row for row in rows if "distill/round" in row]
        assert [row["distill/round"] for row in distilled] == ([0, 1, 2, 3] if start else [])
    assert first_success[""] == 0.0
    assert first_success[str(teacher)] >= 0.75, first_success
    # The run's one PPO iteration was the critic's warm-up: actor and input normalization as started.
    trained = runner.runner.alg.actor.state_dict()
    assert len(started) == 1 and started[0].keys() == trained.keys()
    assert all(torch.equal(started[0][key], trained[key]) for key in trained)
    missing = with_overrides(_reach_ppo(**fields), {"ppo": {"init_policy": str(tmp_path / "nope.onnx")}})
    with pytest.raises(FileNotFoundError, match=r"ppo.init_policy .*nope.onnx does not exist"):
        PpoRunner(missing, tmp_path / "refused", progress=False)
    assert not (tmp_path / "refused").exists()  # refused before the run folder is made


def test_kickstarting_holds_a_started_actor_to_its_teacher(tmp_path: Path) -> None:
    """`ppo.kickstart_lr`: PPO at a step size that drags a started actor away from what it was taught, with
    and without the teacher term after each update. The same run with the term ends with its actor's
    actions nearer the teacher's, on states neither run trained on; the term's iterations are counted."""
    teacher_file = Path(__file__).resolve().parents[2] / "policies/pretrained/skills/reach/policy.onnx"
    teacher, _ = load_policy(teacher_file)
    ppo = {
        "init_policy": str(teacher_file),
        "distill_rounds": 1,
        "init_std": 0.2,
        "learning_rate": 0.01,
        "schedule": "fixed",
    }
    fields: dict[str, Any] = {"backend": "mujoco", "num_envs": 16, "eval_episodes": 1, "env_steps": 1536}
    observation = make_skill_env("mujoco", "reach", 64, seed=7).reset(seed=7)
    obs, goal = observation["observation"], observation["desired_goal"]
    gap = {}
    for kickstart_lr in (0.0, 1e-3):
        config = with_overrides(_reach_ppo(**fields), {"ppo": {**ppo, "kickstart_lr": kickstart_lr}})
        runner = PpoRunner(config, tmp_path / f"kickstart-{kickstart_lr}", progress=False)
        runner.learn()
        gap[kickstart_lr] = float(np.mean((runner.policy(obs, goal) - teacher(obs, goal)) ** 2))
        kickstart = getattr(runner.runner.alg, "kickstart", None)
        assert (kickstart.iteration if kickstart else 0) == (4 if kickstart_lr else 0)
    assert gap[1e-3] < 0.5 * gap[0.0], gap
    with pytest.raises(ValueError, match="kickstart_lr needs ppo.init_policy"):
        with_overrides(_reach_ppo(), {"ppo": {"kickstart_lr": 1e-3}})
