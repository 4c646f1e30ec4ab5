"""The off-policy training loop: batched envs -> HER replay -> SAC updates, with evaluation and checkpoints.

A run folder holds everything about one run:

    config.yaml            the TrainConfig, as trained
    metrics.jsonl / .csv   rows of training and evaluation metrics keyed by env steps
    curves.png             evaluation success rate and return against env steps
    tensorboard/           the same scalars for TensorBoard
    checkpoints/last.pt    the latest checkpoint (exportable by `hgpo export-onnx`), replay.npz beside it

`OffPolicyRunner(config, run_dir).learn()` trains; on a run folder that holds a checkpoint it resumes from it.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import torch
from tqdm import tqdm

from policies.skills.checkpoint import PolicyInfo, actor_checkpoint_entries
from policies.skills.config import TrainConfig, config_to_dict, save_config
from policies.skills.demonstrations import collect_dagger_episodes, collect_demonstrations
from policies.skills.environments import make_env, policy_info
from policies.skills.evaluation import EvalResult, evaluate
from policies.skills.her_buffer import HerReplayBuffer
from policies.skills.networks import ActorConfig
from policies.skills.run_log import RunLog
from policies.skills.sac import SAC
from policies.skills.training_checkpoint import (
    CHECKPOINT_FORMAT,
    load_training_checkpoint,
    save_training_checkpoint,
)
from policies.stop_request import never
from sim.skill_env.contract import GoalVecEnv


@dataclass(frozen=True)
class RunSummary:
    """What a finished run reports in the end-of-training table."""

    skill: str
    backend: str
    run_dir: Path
    env_steps: int
    train_time_s: float
    """Wall-clock seconds spent training, evaluations excluded."""
    wall_time_s: float
    """Wall-clock seconds of this invocation (a resumed run counts from its restart)."""
    final: EvalResult
    reached_target_at: int | None
    """Env steps at the first evaluation reaching target_success, if any."""
    stopped: bool
    """Ended early by its stop request (Ctrl-C), saved to resume."""

    @classmethod
    def of(cls, run: TrainingRun, start_wall: float, stopped: bool) -> RunSummary:
        """The summary of a run just finished; `start_wall`: perf_counter when this invocation began."""
        return cls(
            skill=run.config.skill,
            backend=run.config.backend,
            run_dir=run.run_dir,
            env_steps=run.env_steps,
            train_time_s=run.train_time_s,
            wall_time_s=time.perf_counter() - start_wall,
            final=run.evaluations[-1][1],
            reached_target_at=run.reached_target_at,
            stopped=stopped,
        )


class TrainingRun(Protocol):
    """What both trainers (SAC here, PPO in ppo_runner) keep about their run."""

    config: TrainConfig
    run_dir: Path
    train_time_s: float
    evaluations: list[tuple[int, EvalResult]]
    reached_target_at: int | None

    @property
    def env_steps(self) -> int: ...


def make_replay(
    env: GoalVecEnv, config: TrainConfig, capacity: int, seed: int, expert_actions: bool = False
) -> HerReplayBuffer:
    return HerReplayBuffer(
        num_envs=env.num_envs,
        obs_dim=env.obs_dim,
        goal_dim=env.goal_dim,
        action_dim=env.action_dim,
        horizon=env.max_episode_steps,
        capacity=capacity,
        compute_reward=env.compute_reward,
        her_k=config.her_k,
        seed=seed,
        expert_actions=expert_actions,
    )


def require_device(device: str) -> None:
    """Stop before anything is written when the run asks for a GPU this torch cannot see."""
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise ValueError(
            f"device {device!r}, but this torch {torch.__version__} sees no CUDA GPU "
            "(the pinned wheel is the CPU build); train with --device cpu or on a GPU box"
        )


class OffPolicyRunner:
    """Owns the envs, the agent and the replay buffers of one SAC+HER run."""

    def __init__(self, config: TrainConfig, run_dir: Path, progress: bool = True) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.progress = progress
        require_device(config.device)
        torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed)
        self.env = make_env(config, config.num_envs, config.seed)
        self.eval_env = make_env(
            config, min(config.num_envs, config.eval_episodes), config.seed + 1_000_003, evaluation=True
        )
        env = self.env
        actor_config = ActorConfig(
            obs_dim=env.obs_dim, goal_dim=env.goal_dim, action_dim=env.action_dim, hidden=config.sac.hidden
        )
        self.agent = SAC(actor_config, config.sac, config.device)
        self.buffer = make_replay(env, config, config.buffer_size, config.seed)
        self.demos: HerReplayBuffer | None = None
        if config.sac.demo_batch_size or config.demos.pretrain_steps:
            # one open episode per env beyond the stored ones, so that the last ones overwrite none
            capacity = (config.demos.capacity_episodes + env.num_envs) * env.max_episode_steps
            self.demos = make_replay(env, config, capacity, config.seed + 1, expert_actions=True)
        self.rng = np.random.default_rng(config.seed)
        self.env_steps = 0
        self.updates = 0
        self.train_time_s = 0.0
        self.reached_target_at: int | None = None
        self.evaluations: list[tuple[int, EvalResult]] = []

    @property
    def info(self) -> PolicyInfo:
        return policy_info(self.env, self.run_dir.name)

    def policy(self, obs: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """The deterministic actor on numpy batches (what evaluation and deployment run)."""
        return self.agent.act(torch.from_numpy(obs), torch.from_numpy(goal), deterministic=True).numpy()

    def learn(self, stop: Callable[[], bool] = never) -> RunSummary:
        """Train to config.env_steps, the target success or the time budget, or until `stop()` is true
        (polled every env step)."""
        config, env, agent = self.config, self.env, self.agent
        self.run_dir.mkdir(parents=True, exist_ok=True)
        checkpoint = self.run_dir / "checkpoints" / "last.pt"
        log = RunLog(self.run_dir)
        resumed = checkpoint.exists()
        if resumed:
            self._resume(checkpoint)
            log.truncate(self.env_steps)
        save_config(config, self.run_dir)
        if not resumed and self.demos is not None:
            expert = collect_demonstrations(env, self.demos, config.demos, agent, self.progress)
            episodes = config.demos.episodes
            tqdm.write(f"{config.skill}: {episodes} expert demonstrations, success {expert:.2f}")
            self._pretrain(log)

        # A pretrained actor explores from the first step (random actions would only show the critics what
        # the expert never does) and keeps the input scales it was cloned with: moving them under its
        # weights undid the cloning (pick and place: success 0.85 -> 0.25 within 4k steps at an actor learning
        # rate of 1e-5, which leaves the weights all but unchanged).
        pretrained = config.demos.pretrain_steps > 0
        start_wall = time.perf_counter()
        bar = tqdm(
            total=config.env_steps,
            initial=self.env_steps,
            unit="step",
            desc=f"{config.skill} ({config.backend})",
            disable=not self.progress,
            dynamic_ncols=True,
        )
        observation = env.reset(seed=config.seed + self.env_steps)
        finished_returns: list[float] = []
        finished_success: list[float] = []
        owed_updates = 0.0
        real_batch = config.sac.batch_size - config.sac.demo_batch_size
        next_eval = (self.env_steps // config.eval_every + 1) * config.eval_every
        next_checkpoint = (self.env_steps // config.checkpoint_every + 1) * config.checkpoint_every
        tick = time.perf_counter()
        finished = False
        while self.env_steps < config.env_steps and not finished:
            obs, goal = observation["observation"], observation["desired_goal"]
            if self.env_steps < config.learning_starts and not pretrained:
                action = self.rng.uniform(-1.0, 1.0, (env.num_envs, env.action_dim)).astype(np.float32)
            else:
                action = agent.act(torch.from_numpy(obs), torch.from_numpy(goal)).numpy()
            observation, _, terminated, truncated, info = env.step(action)
            final = info["final_observation"]
            done = terminated | truncated
            self.buffer.add(obs, goal, action, final["observation"], final["achieved_goal"], terminated, done)
            if not pretrained:
                agent.observe(
                    torch.from_numpy(obs), torch.from_numpy(goal), torch.from_numpy(final["achieved_goal"])
                )
            if done.any():
                finished_returns += info["episode_return"][done].tolist()
                finished_success += info["success"][done].astype(float).tolist()
            self.env_steps += env.num_envs
            bar.update(env.num_envs)

            if self.env_steps >= config.learning_starts:
                owed_updates += env.num_envs * config.updates_per_step
                while owed_updates >= 1.0:
                    demo = None
                    if self.demos is not None and config.sac.demo_batch_size:
                        demo = self.demos.sample(config.sac.demo_batch_size)
                    agent.update(self.buffer.sample(real_batch), demo)
                    self.updates += 1
                    owed_updates -= 1.0

            if self.env_steps >= next_eval:
                next_eval += config.eval_every
                self.train_time_s += time.perf_counter() - tick
                row = self._evaluate(log, finished_returns, finished_success)
                finished_returns, finished_success = [], []
                bar.set_postfix(success=f"{row['eval/success_rate']:.2f}", ret=f"{row['eval/return']:.1f}")
                tqdm.write(
                    f"{config.skill}: {self.env_steps} steps, {self.train_time_s:.0f} s training: "
                    f"eval success {row['eval/success_rate']:.2f}, return {row['eval/return']:.1f}"
                )
                if config.target_success and row["eval/success_rate"] >= config.target_success:
                    self.reached_target_at = self.reached_target_at or self.env_steps
                    finished = True
                tick = time.perf_counter()
            trained_s = self.train_time_s + time.perf_counter() - tick
            if (config.time_budget_s and trained_s >= config.time_budget_s) or stop():
                finished = True
            if self.env_steps >= next_checkpoint:
                next_checkpoint += config.checkpoint_every
                self._save(checkpoint, log)
        self.train_time_s += time.perf_counter() - tick
        bar.close()
        if not self.evaluations or self.evaluations[-1][0] != self.env_steps:
            self._evaluate(log, finished_returns, finished_success)
        self._save(checkpoint, log)
        log.close()
        return RunSummary.of(self, start_wall, stop())

    def _pretrain(self, log: RunLog) -> None:
        """config.demos.pretrain_steps steps on the demonstrations alone, then each DAgger round's episodes
        and steps, then an evaluation at env step 0."""
        demos, config = self.demos, self.config.demos
        if not config.pretrain_steps or demos is None:
            return
        tick = time.perf_counter()
        self._pretrain_steps(demos, config.pretrain_steps, "pretraining on demonstrations")
        for round_ in range(1, config.dagger_rounds + 1):
            episodes = config.dagger_episodes
            success = collect_dagger_episodes(self.env, demos, episodes, self.agent, self.progress)
            tqdm.write(f"DAgger round {round_}: {episodes} episodes of the clone, success {success:.2f}")
            self._pretrain_steps(demos, config.dagger_steps, f"DAgger round {round_}")
        self.train_time_s += time.perf_counter() - tick
        row = self._evaluate(log, [], [])
        success = row["eval/success_rate"]
        tqdm.write(f"{self.config.skill}: after pretraining: eval success {success:.2f}")

    def _pretrain_steps(self, demos: HerReplayBuffer, steps: int, desc: str) -> None:
        for _ in tqdm(range(steps), desc=desc, disable=not self.progress):
            # the goals the expert pursued: a relabelled goal would pair it with actions meant for another
            self.agent.pretrain(demos.sample(self.config.sac.batch_size, relabel=False))

    def evaluate_now(self) -> EvalResult:
        """The current deterministic policy over `eval_episodes` episodes of the evaluation envs."""
        return evaluate(self.eval_env, self.policy, self.config.eval_episodes)

    def _evaluate(self, log: RunLog, returns: list[float], successes: list[float]) -> dict[str, float]:
        result = self.evaluate_now()
        self.evaluations.append((self.env_steps, result))
        row = {
            "eval/success_rate": result.success_rate,
            "eval/return": result.mean_return,
            "time/train_s": self.train_time_s,
            "time/updates": float(self.updates),
            **{f"loss/{name}": value for name, value in self.agent.stats.pop().items()},
        }
        if returns:
            row["train/return"] = float(np.mean(returns))
            row["train/success_rate"] = float(np.mean(successes))
        log.log(self.env_steps, row)
        return row

    def _save(self, path: Path, log: RunLog) -> None:
        state: dict[str, Any] = {
            **actor_checkpoint_entries(self.agent.actor, self.info),
            "format": CHECKPOINT_FORMAT,
            "skill": self.config.skill,
            "config": config_to_dict(self.config),
            "sac": self.agent.state_dict(),
            "env_steps": self.env_steps,
            "updates": self.updates,
            "train_time_s": self.train_time_s,
            "reached_target_at": self.reached_target_at,
            "torch_rng": torch.get_rng_state(),
            "rng": self.rng.bit_generator.state,
        }
        save_training_checkpoint(path, state, self.buffer, self.demos)
        log.flush()

    def _resume(self, path: Path) -> None:
        state, buffer_state, demo_state = load_training_checkpoint(path)
        if state["skill"] != self.config.skill:
            raise ValueError(f"{path} trained skill {state['skill']!r}, not {self.config.skill!r}")
        self.agent.load_state_dict(state["sac"])
        self.env_steps = int(state["env_steps"])
        self.updates = int(state["updates"])
        self.train_time_s = float(state["train_time_s"])
        self.reached_target_at = state["reached_target_at"]
        torch.set_rng_state(state["torch_rng"])
        self.rng.bit_generator.state = state["rng"]
        if buffer_state is not None:
            self.buffer.load_state_dict(buffer_state)
        if demo_state is not None and self.demos is not None:
            self.demos.load_state_dict(demo_state)
