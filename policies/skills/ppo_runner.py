"""The on-policy training loop: rsl-rl-lib's OnPolicyRunner and PPO on our env contract, for `algorithm: ppo`.

rsl-rl does the rollouts, advantage estimation and PPO updates; this module runs it in chunks of
iterations with our deterministic evaluation in between, in the run folder layout of `runner.py`:

    config.yaml            the TrainConfig, as trained
    metrics.jsonl / .csv   evaluation rows plus training episodes (train/return under the PPO reward,
                           train/final_distance, train/success_rate), keyed by env steps; curves.png
    tensorboard/           the same scalars; rsl_rl/ holds rsl-rl's own TensorBoard log, its
                           console log (console.log) and its model_N.pt files
    checkpoints/last.pt    rsl-rl's checkpoint (actor, critic, optimizer, normalizers) plus our counters:
                           a run folder holding one is resumed
"""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict
from pathlib import Path

import numpy as np
import torch
from rsl_rl.modules import EmpiricalNormalization
from rsl_rl.runners import OnPolicyRunner
from tensordict import TensorDict
from tqdm import tqdm

from policies.skills.config import TrainConfig, config_to_dict, save_config
from policies.skills.environments import make_env, policy_info
from policies.skills.evaluation import EvalResult, Policy, evaluate
from policies.skills.kickstart import Kickstart
from policies.skills.ppo_distill import distill, load_teacher
from policies.skills.rsl_rl_env import RslRlGoalEnv
from policies.skills.run_log import RunLog
from policies.skills.runner import RunSummary, require_device
from policies.stop_request import never


class PpoRunner:
    """Owns the envs and rsl-rl's OnPolicyRunner of one PPO run."""

    def __init__(self, config: TrainConfig, run_dir: Path, progress: bool = True) -> None:
        self.config = config
        self.run_dir = Path(run_dir)
        self.progress = progress
        require_device(config.device)
        torch.set_num_threads(config.torch_threads)
        torch.manual_seed(config.seed)
        self.env = RslRlGoalEnv(
            make_env(config, config.num_envs, config.seed), config.ppo.reward, config.seed, config.device
        )
        self.eval_env = make_env(
            config, min(config.num_envs, config.eval_episodes), config.seed + 1_000_003, evaluation=True
        )
        self.teacher = (
            load_teacher(Path(config.ppo.init_policy), self.env) if config.ppo.init_policy else None
        )
        self.rsl_dir = self.run_dir / "rsl_rl"
        self.rsl_dir.mkdir(parents=True, exist_ok=True)
        with self._console():
            self.runner = OnPolicyRunner(
                self.env, config.ppo.rsl_rl_train_cfg(), str(self.rsl_dir), config.device
            )
        if self.teacher is not None and config.ppo.kickstart_lr:
            ppo = config.ppo
            self.runner.alg.kickstart = Kickstart(  # type: ignore[attr-defined]
                self.teacher, ppo.kickstart_lr, ppo.kickstart_decay, ppo.kickstart_updates
            )
        self.steps_per_iteration = config.num_envs * config.ppo.num_steps_per_env
        self.iterations = 0
        self.train_time_s = 0.0
        self.reached_target_at: int | None = None
        self.evaluations: list[tuple[int, EvalResult]] = []

    @property
    def env_steps(self) -> int:
        return self.iterations * self.steps_per_iteration

    def policy(self, obs: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """The deterministic actor (the Gaussian's mean, clipped to the action range) on numpy batches."""
        actor = self.runner.get_inference_policy()
        batch = TensorDict(
            {"observation": torch.from_numpy(obs), "desired_goal": torch.from_numpy(goal)},
            batch_size=[obs.shape[0]],
            device=self.config.device,
        )
        with torch.inference_mode():
            return actor(batch).clamp(-1.0, 1.0).cpu().numpy()

    def evaluate_now(self) -> EvalResult:
        return evaluate(self.eval_env, self.policy, self.config.eval_episodes)

    def learn(self, stop: Callable[[], bool] = never) -> RunSummary:
        """Train in chunks of iterations between evaluations; `stop()` is polled after each chunk."""
        config = self.config
        checkpoint = self.run_dir / "checkpoints" / "last.pt"
        log = RunLog(self.run_dir)
        resumed = checkpoint.exists()
        if resumed:
            self._resume(checkpoint)
            log.truncate(self.env_steps)
            if self.teacher is not None:
                self._keep_input_scales()
        save_config(config, self.run_dir)
        if not resumed:
            if self.teacher is not None:
                self._distill(log, self.teacher)
                self._keep_input_scales()
            self._evaluate(log)
        total = math.ceil(config.env_steps / self.steps_per_iteration)
        chunk = max(1, config.eval_every // self.steps_per_iteration)
        start_wall = time.perf_counter()
        bar = tqdm(
            total=total * self.steps_per_iteration,
            initial=self.env_steps,
            unit="step",
            desc=f"{config.skill} ({config.backend}, ppo)",
            disable=not self.progress,
            dynamic_ncols=True,
        )
        warmup = config.ppo.critic_warmup_iterations
        while self.iterations < total:
            iterations = min(chunk, total - self.iterations)
            frozen = self.iterations < warmup
            if frozen:
                iterations = min(iterations, warmup - self.iterations)
            tick = time.perf_counter()
            self.runner.current_learning_iteration = self.iterations
            with self._console(), self._actor_frozen(frozen):
                self.runner.learn(iterations)
            self.train_time_s += time.perf_counter() - tick
            self.iterations += iterations
            bar.update(iterations * self.steps_per_iteration)
            row = self._evaluate(log)
            bar.set_postfix(success=f"{row['eval/success_rate']:.2f}", ret=f"{row['eval/return']:.1f}")
            self._save(checkpoint, log)
            if config.target_success and row["eval/success_rate"] >= config.target_success:
                self.reached_target_at = self.reached_target_at or self.env_steps
                break
            if (config.time_budget_s and self.train_time_s >= config.time_budget_s) or stop():
                break
        bar.close()
        self._save(checkpoint, log)
        log.close()
        return RunSummary.of(self, start_wall, stop())

    def _distill(self, log: RunLog, teacher: Policy) -> None:
        """The actor learns to act as `ppo.init_policy` first, on the training budget's clock; each round's
        figures go in the metrics."""
        ppo = self.config.ppo
        tick = time.perf_counter()
        rounds = distill(
            self.env,
            self.runner.alg.actor,
            teacher,
            ppo.distill_rounds,
            ppo.distill_steps,
            ppo.distill_updates,
            progress=self.progress,
        )
        for index, round_ in enumerate(rounds):
            log.log(
                0,
                {
                    "distill/round": index,
                    "distill/success_rate": round_.success_rate,
                    "distill/loss": round_.loss,
                    "distill/labels": round_.labels,
                },
            )
        self.train_time_s += time.perf_counter() - tick

    def _keep_input_scales(self) -> None:
        """A started actor keeps the input normalization it learned with: PPO's rollouts would go on moving
        it under the actor's weights, which undoes what it learned (measured: 0.94 -> 0.84 success in 20
        iterations of a frozen actor)."""
        normalizer = self.runner.alg.actor.obs_normalizer
        if isinstance(normalizer, EmpiricalNormalization):  # not the identity of ppo.obs_normalization: false
            normalizer.until = int(normalizer.count)

    def _evaluate(self, log: RunLog) -> dict[str, float]:
        result = self.evaluate_now()
        self.evaluations.append((self.env_steps, result))
        row = {
            "eval/success_rate": result.success_rate,
            "eval/return": result.mean_return,
            "time/train_s": self.train_time_s,
        }
        episodes = self.env.pop_episodes()
        if episodes.returns:
            row["train/return"] = float(np.mean(episodes.returns))
            row["train/success_rate"] = float(np.mean(episodes.successes))
            row["train/final_distance"] = float(np.mean(episodes.final_distances))
        log.log(self.env_steps, row)
        return row

    def _save(self, path: Path, log: RunLog) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.tmp")
        self.runner.save(
            str(tmp),
            {
                "skill": self.config.skill,
                "iterations": self.iterations,
                "train_time_s": self.train_time_s,
                "reached_target_at": self.reached_target_at,
                "evaluations": [(step, result.as_dict()) for step, result in self.evaluations],
                # What trained_actor needs to rebuild the policy for export and evaluation, run folder or not.
                "train_config": config_to_dict(self.config),
                "policy_info": asdict(policy_info(self.eval_env, self.run_dir.name)),
            },
        )
        tmp.replace(path)
        log.flush()

    def _resume(self, path: Path) -> None:
        infos = self.runner.load(str(path))
        if not isinstance(infos, dict) or infos.get("skill") != self.config.skill:
            raise ValueError(f"{path} is not a PPO checkpoint of skill {self.config.skill!r}")
        self.iterations = int(infos["iterations"])
        kickstart = getattr(self.runner.alg, "kickstart", None)
        if kickstart is not None:
            kickstart.iteration = self.iterations
        self.train_time_s = float(infos["train_time_s"])
        self.reached_target_at = infos["reached_target_at"]
        self.evaluations = [(step, EvalResult(**result)) for step, result in infos["evaluations"]]

    @contextlib.contextmanager
    def _actor_frozen(self, frozen: bool) -> Iterator[None]:
        """The critic's warm-up: the actor takes no gradient, and the learning rate that the adaptive
        schedule raised meanwhile (a frozen actor's KL is 0) starts again from the config's."""
        if not frozen:
            yield
            return
        actor = self.runner.alg.actor
        actor.requires_grad_(False)
        try:
            yield
        finally:
            actor.requires_grad_(True)
            self.runner.alg.learning_rate = self.config.ppo.learning_rate
            for group in self.runner.alg.optimizer.param_groups:
                group["lr"] = self.config.ppo.learning_rate

    @contextlib.contextmanager
    def _console(self) -> Iterator[None]:
        """rsl-rl prints a screenful per iteration: into rsl_rl/console.log, beside our progress bar."""
        with (self.rsl_dir / "console.log").open("a") as out, contextlib.redirect_stdout(out):
            yield
