"""The planner training loop of one run and its folder:

    config.yaml            the PlannerTrainConfig, as trained
    metrics.jsonl / .csv   rows keyed by step (BC: optimizer steps; RL: iterations; DPO: rounds)
    curves.png, tensorboard/
    adapter/               the result: a peft LoRA folder for `--adapter` / `llm.adapter` (BC: best
                           validation loss; RL and DPO: the last iteration)
    checkpoints/last/      trainable weights, optimizer and counters; a run resumes from here
    summary.json           final figures (evaluation success per kind, throughput)

`train(config, run_dir)` runs BC, RL (grpo / gigpo / hgpo) or DPO; on a folder with a checkpoint it
resumes. `export_last(run_dir, out)` writes the checkpoint as an adapter folder: for BC the weights where
training ended, which are not adapter/ when a later step validated worse.
"""

from __future__ import annotations

import json
import random
import resource
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
import yaml  # type: ignore[import-untyped]
from tqdm import tqdm

from policies.planner_training import bc, dpo, rl
from policies.planner_training.config import PlannerTrainConfig, from_mapping, to_mapping
from policies.planner_training.data import Example, encode_demos, episodes_of, load_demos, repeated, split
from policies.planner_training.model import Policy, load_policy
from policies.planner_training.rollouts import Arena, Episode, make_arena, success_by_kind
from policies.planner_training.schedule import RolloutSchedule, Sampled, Weights
from policies.sharding import Workers, episode_runner
from policies.skills.run_log import RunLog
from policies.stop_request import never

PLOTS = {
    "bc": (
        ("train/loss", "training loss"),
        ("val/loss", "validation loss"),
        ("val/exact_match", "val exact match"),
    ),
    "rl": (
        ("rollout/success_rate", "rollout success"),
        ("eval/success_rate", "evaluation success (greedy)"),
        ("rollout/return", "return"),
        ("train/kl", "KL to reference"),
        ("train/entropy", "entropy"),
        ("rollout/invalid_subgoal_rate", "invalid-subgoal rate"),
    ),
}
PLOTS["dpo"] = (*PLOTS["rl"][:3], ("train/reward_accuracy", "DPO reward accuracy"))


@dataclass
class Outcome:
    run_dir: Path
    steps: int
    wall_s: float
    metrics: dict[str, float] = field(default_factory=dict)  # the last logged value of every metric
    stopped: bool = False  # ended early by `stop()` (Ctrl-C), saved to resume
    evaluation: dict[str, Any] = field(default_factory=dict)


def evaluate(policy: Policy, arena: Arena, config: PlannerTrainConfig) -> dict[str, Any]:
    """Greedy episodes from the held-out states: success overall and per kind."""
    episodes = rl.play(arena, policy, config, arena.eval_states(config.eval_episodes), 1, False, config.seed)
    success = float(np.mean([e.success for e in episodes])) if episodes else 0.0
    return {"success_rate": success, "episodes": len(episodes), "per_kind": success_by_kind(episodes)}


class Checkpoint:
    """Trainable weights, optimizer state and counters under checkpoints/last/."""

    def __init__(self, run_dir: Path) -> None:
        self.path = run_dir / "checkpoints" / "last" / "state.pt"

    def save(
        self,
        policy: Policy,
        optimizer: torch.optim.Optimizer,
        counters: dict[str, Any],
        behaviour: Weights | None = None,
    ) -> None:
        """`behaviour`: the adapter weights sampling the next iteration's rollouts (`rl.overlap`)."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        state = {
            "weights": policy.trainable_state(),
            "optimizer": optimizer.state_dict(),
            "counters": counters,
        }
        if behaviour is not None:
            state["behaviour"] = behaviour
        partial = self.path.with_suffix(".partial")
        torch.save(state, partial)
        partial.replace(self.path)

    def read(self) -> dict[str, Any] | None:
        """The saved weights, optimizer state and counters; None before the first save."""
        if not self.path.is_file():
            return None
        state: dict[str, Any] = torch.load(self.path, weights_only=True)
        return state

    def behaviour(self) -> Weights | None:
        """The weights that were sampling the next iteration's rollouts when the run was saved (`rl.overlap`),
        so that a resumed run samples it with them; None when none were in flight."""
        state = self.read()
        return state.get("behaviour") if state is not None else None

    def load(self, policy: Policy, optimizer: torch.optim.Optimizer) -> dict[str, Any] | None:
        state = self.read()
        if state is None:
            return None
        policy.load_trainable_state(state["weights"])
        optimizer.load_state_dict(state["optimizer"])
        counters: dict[str, Any] = state["counters"]
        return counters


def export_last(run_dir: Path, out: Path) -> dict[str, Any]:
    """Write the run's last checkpoint as a peft adapter folder; returns its counters (step or iteration).

    The run's config rebuilds the adapter's shape (its starting adapter, or a fresh LoRA of its settings)
    before the checkpoint's weights replace every trainable tensor."""
    checkpoint, saved = Checkpoint(run_dir), run_dir / "config.yaml"
    state = checkpoint.read()
    if state is None or not saved.is_file():
        raise FileNotFoundError(
            f"{run_dir} lacks config.yaml or checkpoints/last/state.pt: give a run folder of "
            "`hgpo train-planner`"
        )
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} exists and is not empty: give a new folder, nothing was written")
    config = from_mapping(yaml.safe_load(saved.read_text()), str(saved))
    policy = load_policy(config.model, config.adapter, config.lora, config.device, config.dtype)
    shapes = {name: tuple(value.shape) for name, value in policy.trainable_state().items()}
    held = {name: tuple(value.shape) for name, value in state["weights"].items()}
    if held != shapes:
        matching = sum(shapes.get(name) == shape for name, shape in held.items())
        raise ValueError(
            f"{checkpoint.path} holds {len(held)} adapter tensors, {matching} of them as the {len(shapes)} "
            f"that {saved}'s model and LoRA settings make: config and checkpoint are from different runs"
        )
    policy.load_trainable_state(state["weights"])
    policy.save(out)
    counters: dict[str, Any] = state["counters"]
    return counters


def _setup(
    config: PlannerTrainConfig, run_dir: Path
) -> tuple[Policy, torch.optim.Optimizer, RunLog, Checkpoint]:
    torch.manual_seed(config.seed)
    random.seed(config.seed)
    if config.threads:
        torch.set_num_threads(config.threads)
    policy = load_policy(config.model, config.adapter, config.lora, config.device, config.dtype)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=config.lr, weight_decay=0.0)
    run_dir.mkdir(parents=True, exist_ok=True)  # only now: a model or adapter that fails to load leaves none
    saved = run_dir / "config.yaml"
    if not saved.exists():
        saved.write_text(yaml.safe_dump(to_mapping(config), sort_keys=False))
    kind = "bc" if config.algo == "bc" else "dpo" if config.algo == "dpo" else "rl"
    return policy, optimizer, RunLog(run_dir, PLOTS[kind], step_key="step"), Checkpoint(run_dir)


def _last(log: RunLog) -> dict[str, float]:
    merged: dict[str, float] = {}
    for row in log.rows:
        merged.update(row)
    return merged


def train_bc(
    config: PlannerTrainConfig, run_dir: Path, progress: bool = True, stop: Callable[[], bool] = never
) -> Outcome:
    if not config.bc.demos:
        raise ValueError(
            "BC needs demonstrations: give --demos FILE.jsonl (`hgpo tabletop-demos`, "
            "`hgpo alfworld demos`) or bc.demos in the config"
        )
    started = time.perf_counter()
    demos = load_demos([Path(p) for p in config.bc.demos])
    episodes = episodes_of(demos) if config.bc.split == "episode" else None
    train_demos, val_demos = split(demos, config.bc.val_fraction, config.seed, episodes)
    arena = make_arena(config.domain, config.rollout) if config.eval_episodes else None
    policy, optimizer, log, checkpoint = _setup(config, run_dir)
    val = encode_demos(policy.tokenizer, val_demos)
    encoded = encode_demos(policy.tokenizer, train_demos)
    train = repeated(train_demos, encoded, config.bc.repeat)
    state = bc.BCState(**(checkpoint.load(policy, optimizer) or {}))
    log.truncate(state.step)
    batches_per_epoch = -(-len(train) // config.bc.batch_size)
    bar = tqdm(
        total=batches_per_epoch * config.bc.epochs,
        initial=state.step,
        unit="step",
        desc="bc",
        disable=not progress,
    )
    best: dict[str, torch.Tensor] = {}

    def keep_best() -> None:
        best.update(policy.trainable_state())
        policy.save(run_dir / "adapter")

    def save_checkpoint() -> None:
        checkpoint.save(policy, optimizer, vars(state))
        log.flush()

    bc.train_bc(
        policy,
        train,
        val,
        config.bc,
        optimizer,
        state,
        log=log.log,
        on_best=keep_best,
        on_checkpoint=save_checkpoint,
        seed=config.seed,
        time_budget_s=config.time_budget_s,
        pass_tokens=config.pass_tokens,
        progress=bar.update,
        stop=stop,
    )
    bar.close()
    if best:
        policy.load_trainable_state(best)  # the adapter that was saved: best validation loss
    else:
        policy.save(run_dir / "adapter")
    outcome = Outcome(run_dir, state.step, time.perf_counter() - started, stopped=stop())
    outcome.metrics = {"examples": float(len(demos)), "train": float(len(train)), "val": float(len(val))}
    if arena is not None:
        try:
            if not outcome.stopped:
                outcome.evaluation = evaluate(policy, arena, config)
        finally:
            arena.close()
    return _finish(config, run_dir, log, outcome)


Rollouts = Callable[[list[str], int, int], list[Episode]]
"""(initial states, group size, seed) -> each state's group of episodes sampled from the current policy."""


def play_iteration(
    rollouts: Rollouts, config: PlannerTrainConfig, states: list[str], iteration: int
) -> tuple[list[Episode], list[Episode]]:
    """An iteration's sampled episodes: all that were played, and those the update learns from (with
    `rl.dynamic_sampling`, only the groups whose returns differ, drawing more initial states until
    `states_per_iteration` such groups are kept or the extra draws run out)."""
    rl_settings = config.rl
    per_iteration = rl_settings.states_per_iteration if config.algo != "dpo" else config.dpo.states_per_round
    group = rl_settings.group_size if config.algo != "dpo" else config.dpo.group_size
    dynamic = rl_settings.dynamic_sampling if config.algo != "dpo" else 0
    played: list[Episode] = []
    kept: list[Episode] = []
    for draw in range(dynamic + 1):
        seed = config.seed * 100_003 + iteration + 7_919 * draw
        chosen = random.Random(seed).sample(states, min(per_iteration, len(states)))
        episodes = rollouts(chosen, group, seed)
        played += episodes
        kept += rl.varied_groups(episodes, config.reward) if dynamic else episodes
        if len(kept) >= per_iteration * group or not dynamic:
            break
    return played, kept[: per_iteration * group] if dynamic else kept


def train_on_policy(
    config: PlannerTrainConfig,
    run_dir: Path,
    progress: bool = True,
    stop: Callable[[], bool] = never,
    workers: Workers | None = None,
) -> Outcome:
    """Iterations of rollouts from the current policy, then an update: GRPO, GiGPO or HGPO advantages under
    the clipped objective (config.rl.iterations), or DPO on the pairs mined from them (config.dpo.rounds).
    With `workers`, Ray workers sample the rollouts (each iteration sends them the adapter weights) while
    this process evaluates and updates; with `rl.overlap` too, they sample the next iteration's during the
    update (schedule.py)."""
    started = time.perf_counter()
    overlap = config.rl.overlap
    if overlap and workers is None:
        raise ValueError(
            "rl.overlap needs rollout workers (--workers N or --ray-address ADDR): without them rollouts "
            "and updates share this process and its one model, so there is nothing to overlap"
        )
    arena = make_arena(config.domain, config.rollout)  # first: missing games or skills write no run folder
    expert = load_demos([Path(p) for p in config.bc.demos]) if config.rl.bc_coef else []
    policy, optimizer, log, checkpoint = _setup(config, run_dir)
    states = arena.train_states()
    demos = encode_demos(policy.tokenizer, expert)  # the BC term's (rl.bc_coef)
    sample: Callable[[Sequence[rl.RolloutGroup]], Iterator[list[Episode]]] | None = None

    def play(iteration: int, weights: Weights | None) -> tuple[list[Episode], list[Episode]]:
        def rollouts(chosen: list[str], group: int, seed: int) -> list[Episode]:
            if sample is None:  # weights is None here: only workers sample with other weights (overlap)
                return rl.play(arena, policy, config, chosen, group, True, seed)
            sent = weights if weights is not None else policy.trainable_state()
            return rl.play_on_workers(sample, sent, chosen, group, seed)

        return play_iteration(rollouts, config, states, iteration)

    stack = ExitStack()
    try:
        # entered before the workers, so left after them: they abandon its rollouts in flight first
        schedule = stack.enter_context(RolloutSchedule(play, overlap))
        if workers is not None:
            sample = stack.enter_context(episode_runner(rl.RolloutPlayers(config), workers))
    except BaseException:
        stack.close()
        arena.close()
        raise

    counters = checkpoint.load(policy, optimizer) or {"iteration": 0}
    log.truncate(counters["iteration"])
    behaviour = checkpoint.behaviour() if overlap else None  # what was sampling the next iteration
    settings = config.rl
    iterations = settings.iterations if config.algo != "dpo" else config.dpo.rounds
    bar = tqdm(
        total=iterations, initial=counters["iteration"], unit="it", desc=config.algo, disable=not progress
    )
    try:
        while counters["iteration"] < iterations:
            iteration = counters["iteration"] + 1
            tick = time.perf_counter()
            sampled = schedule.take(iteration, behaviour, stale=behaviour is not None)
            behaviour = None
            if overlap and iteration < iterations:
                schedule.start(iteration + 1, policy.trainable_state())  # the weights before this update
            metrics = rl.rollout_metrics(sampled.played, config.reward, policy.tokenizer, sampled.seconds)
            metrics["rollout/kept_episodes"] = float(len(sampled.kept))
            metrics.update(_update(policy, optimizer, config, sampled, iteration, demos))
            counters["iteration"] = iteration
            if config.eval_every and iteration % config.eval_every == 0 and config.eval_episodes:
                result = evaluate(policy, arena, config)
                metrics["eval/success_rate"] = result["success_rate"]
                metrics.update({f"eval/success/{k}": v for k, v in result["per_kind"].items()})
            metrics["perf/iteration_s"] = time.perf_counter() - tick
            metrics["perf/peak_rss_gb"] = peak_rss_gb()
            log.log(iteration, metrics)
            bar.update(1)
            bar.set_postfix(
                success=f"{metrics['rollout/success_rate']:.2f}", ret=f"{metrics['rollout/return']:.2f}"
            )
            out_of_time = bool(config.time_budget_s) and time.perf_counter() - started > config.time_budget_s
            ending = out_of_time or stop()
            if iteration % config.checkpoint_every == 0 or iteration == iterations or ending:
                checkpoint.save(policy, optimizer, counters, schedule.ahead)
                policy.save(run_dir / "adapter")
                log.flush()
            if ending:
                break
        bar.close()
        outcome = Outcome(run_dir, counters["iteration"], time.perf_counter() - started, stopped=stop())
        if config.eval_episodes and not outcome.stopped:
            outcome.evaluation = evaluate(policy, arena, config)
    finally:
        stack.close()
        arena.close()
    return _finish(config, run_dir, log, outcome)


def peak_rss_gb() -> float:
    """The process's peak resident memory so far (Linux reports KiB): what a machine must have for the run."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def _update(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    config: PlannerTrainConfig,
    sampled: Sampled,
    step: int,
    demos: Sequence[Example] = (),
) -> dict[str, float]:
    """One iteration's update (DPO on the pairs mined from it, or the clipped objective scored against the
    policy that sampled it, with the BC term on `demos` when `rl.bc_coef` asks for it) with its timings:
    the rollouts', the learner's wait for them and the update's."""
    started = time.perf_counter()
    metrics = {"train/staleness": float(sampled.staleness)}
    if config.algo == "dpo":
        pairs = dpo.mine_pairs(policy, sampled.kept, config.dpo.max_pairs_per_state, config.seed + step)
        if pairs:
            metrics.update(dpo.train_dpo(policy, optimizer, pairs, config.dpo, config.max_grad_norm, step))
        else:
            metrics["train/pairs"] = 0.0
    else:
        batch = rl.make_batch(policy, sampled.kept, config)
        if batch.examples:
            metrics.update(
                rl.update(
                    policy,
                    optimizer,
                    batch,
                    config.rl,
                    config.max_grad_norm,
                    step,
                    behaviour=sampled.behaviour,
                    pass_tokens=config.pass_tokens,
                    demos=demos,
                )
            )
    metrics["perf/rollout_s"] = sampled.seconds
    metrics["perf/rollout_wait_s"] = sampled.waited
    metrics["perf/update_s"] = time.perf_counter() - started
    return metrics


def _finish(config: PlannerTrainConfig, run_dir: Path, log: RunLog, outcome: Outcome) -> Outcome:
    log.close()
    outcome.metrics = {**_last(log), **outcome.metrics}
    summary = {
        "algo": config.algo,
        "domain": config.domain,
        "steps": outcome.steps,
        "wall_s": outcome.wall_s,
        "adapter": str(run_dir / "adapter"),
        "last_metrics": outcome.metrics,
        "evaluation": outcome.evaluation,
        "stopped": outcome.stopped,
    }
    (run_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return outcome


def _train_bc(
    config: PlannerTrainConfig,
    run_dir: Path,
    progress: bool,
    stop: Callable[[], bool],
    workers: Workers | None,
) -> Outcome:
    if workers is not None:
        raise ValueError("workers sample RL and DPO rollouts; bc plays none (drop --workers / --ray-address)")
    return train_bc(config, run_dir, progress, stop)


TRAINERS: dict[
    str, Callable[[PlannerTrainConfig, Path, bool, Callable[[], bool], Workers | None], Outcome]
] = {
    "bc": _train_bc,
    "grpo": train_on_policy,
    "gigpo": train_on_policy,
    "hgpo": train_on_policy,
    "dpo": train_on_policy,
}


def train(
    config: PlannerTrainConfig,
    run_dir: Path,
    progress: bool = True,
    stop: Callable[[], bool] = never,
    workers: Workers | None = None,
) -> Outcome:
    """`stop()` is polled after each step (BC) or iteration (RL, DPO): true ends the run there, saved.
    `workers`: RL and DPO rollouts on Ray workers (policies/sharding.py), None: in this process."""
    return TRAINERS[config.algo](config, run_dir, progress, stop, workers)
