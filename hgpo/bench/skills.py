"""`hgpo bench skills`: our SAC+HER against stable-baselines3's SAC + HerReplayBuffer on Fetch tasks.

Both learners train on gymnasium-robotics' FetchReach-v4 / FetchPush-v4 (environments nobody here wrote) on
this machine, one after the other, each with one torch thread (`--side-by-side`: at the same time, one core
each). Every `eval_every` env steps each is evaluated with the same protocol (deterministic actions,
`eval_episodes` fresh episodes, success at the last step); the clock is paused while evaluating. A run stops
at the first evaluation reaching the target success rate, or when its time budget runs out, which the table
reports as "not reached". The peer (`sb3`) uses the tuned hyperparameters of rl-baselines3-zoo (the
reference people start from), with its observation normalization; `sb3-defaults` is the same peer with
stable-baselines3's own SAC defaults, a lighter network and batch that suit a CPU better than the zoo's Push
settings, which were tuned on a GPU.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import os
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hgpo.bench.report import table, write_json


@dataclass(frozen=True)
class Task:
    env_id: str
    target: float
    config: str
    """Our training config (policies/skills/config/NAME.yaml)."""
    eval_every: int
    """Default env steps between evaluations: Push learns over 10^5 steps, and evaluating it every 500 takes
    as long as training."""
    peer: dict[str, Any]
    """stable-baselines3 SAC keyword arguments (rl-baselines3-zoo's tuned values)."""


TASKS = {
    "FetchReach": Task(
        "FetchReach-v4",
        0.95,
        "fetch_reach",
        500,
        # rl-baselines3-zoo hyperparams/her.yml, FetchReach
        dict(
            batch_size=256,
            gamma=0.95,
            learning_rate=1e-3,
            learning_starts=1000,
            buffer_size=1_000_000,
            policy_kwargs=dict(net_arch=[64, 64], n_critics=1),
        ),
    ),
    "FetchPush": Task(
        "FetchPush-v4",
        0.90,
        "fetch_push",
        5_000,
        # rl-baselines3-zoo hyperparams/her.yml, FetchPush (listed for TQC; the same values for SAC)
        dict(
            batch_size=2048,
            gamma=0.95,
            learning_rate=1e-3,
            tau=0.05,
            learning_starts=1000,
            buffer_size=1_000_000,
            policy_kwargs=dict(net_arch=[512, 512, 512], n_critics=2),
        ),
    ),
}


SB3_DEFAULTS: dict[str, Any] = dict(learning_starts=1000, buffer_size=1_000_000)
"""`sb3-defaults`: stable-baselines3's SAC defaults (batch 256, two 256-unit layers, lr 3e-4, gamma 0.99,
tau 0.005, a gradient step per env step), with the warm-up and replay size of ours and the zoo's."""
PEERS = {"sb3": "stable-baselines3", "sb3-defaults": "stable-baselines3 (defaults)"}
"""The table's name of each peer learner."""


@dataclass
class Outcome:
    learner: str
    task: str
    reached: bool
    env_steps: int
    """Env steps at the first evaluation reaching the target, else when the budget ran out."""
    train_time_s: float
    """Wall-clock seconds of training (evaluations excluded) up to that point."""
    final_success: float
    curve: list[tuple[int, float]]
    started_at: float = 0.0
    """Wall-clock time (epoch seconds) the run started and ended: whether learners overlapped."""
    ended_at: float = 0.0


OURS_MISSED = -1.0
OURS_FAILED = 0.0
"""What a race's shared record of ours holds, besides NaN while ours trains and its time to the
target once reached: ours ran out of budget, or ours raised (the race is void and the peers stop)."""


@dataclass(frozen=True)
class Budget:
    """Training seconds a run may use. With a factor, a peer's budget follows ours: open until ours ends
    (side by side, ours is still training), then `factor` times ours' time to the target, or `fixed_s` where
    ours missed it. Read at every env step, so a peer stops within a step of it."""

    fixed_s: float
    factor: float | None = None
    ours_s: Any = None
    """The race's shared record of ours (a multiprocessing.Value holding a double), if racing."""

    def seconds(self) -> float:
        ours = math.nan if self.ours_s is None else float(self.ours_s.value)
        if ours == OURS_FAILED:
            return 0.0
        if self.factor is None or ours == OURS_MISSED:
            return self.fixed_s
        return math.inf if math.isnan(ours) else self.factor * ours


def _evaluate_sb3(model: Any, normalizer: Any, env_id: str, episodes: int, seed: int) -> float:
    import gymnasium as gym

    env = gym.make(env_id)
    successes = []
    for episode in range(episodes):
        obs, _ = env.reset(seed=seed + episode)
        done, info = False, dict[str, Any]()
        while not done:
            action, _ = model.predict(normalizer.normalize_obs(obs), deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        successes.append(float(info["is_success"]))
    env.close()
    return float(np.mean(successes))


def run_peer(
    task: Task, learner: str, budget: Budget, eval_every: int, eval_episodes: int, seed: int
) -> Outcome:
    """stable-baselines3 SAC + HerReplayBuffer with the settings `learner` names (sb3: the zoo's,
    sb3-defaults: its own), evaluated every eval_every steps until target or budget.

    As ours, the budget is checked every step and the run is evaluated once more when it runs out."""
    import gymnasium as gym
    import gymnasium_robotics
    from stable_baselines3 import SAC, HerReplayBuffer
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize

    gym.register_envs(gymnasium_robotics)
    env = VecNormalize(DummyVecEnv([lambda: gym.make(task.env_id)]), norm_reward=False)
    model = SAC(
        "MultiInputPolicy",
        env,
        replay_buffer_class=HerReplayBuffer,
        replay_buffer_kwargs=dict(n_sampled_goal=4, goal_selection_strategy="future"),
        seed=seed,
        device="cpu",
        verbose=0,
        **(task.peer if learner == "sb3" else SB3_DEFAULTS),
    )
    curve: list[tuple[int, float]] = []
    started_at = time.time()
    clock = {"train": 0.0, "since": time.perf_counter()}

    class Evaluate(BaseCallback):
        def _on_step(self) -> bool:
            trained_s = clock["train"] + time.perf_counter() - clock["since"]
            if self.num_timesteps % eval_every and trained_s < budget.seconds():
                return True
            clock["train"] = trained_s
            success = _evaluate_sb3(self.model, env, task.env_id, eval_episodes, seed + 10_000)
            curve.append((self.num_timesteps, success))
            print(
                f"  sb3 {task.env_id}: {self.num_timesteps} steps, "
                f"{clock['train']:.0f} s, success {success:.2f}"
            )
            clock["since"] = time.perf_counter()
            return success < task.target and clock["train"] < budget.seconds()

    model.learn(total_timesteps=10**8, callback=Evaluate())
    reached = bool(curve) and curve[-1][1] >= task.target
    return Outcome(
        PEERS[learner],
        task.env_id,
        reached,
        curve[-1][0],
        clock["train"],
        curve[-1][1],
        curve,
        started_at,
        time.time(),
    )


def run_ours(task: Task, budget_s: float, eval_every: int, eval_episodes: int, seed: int) -> Outcome:
    from policies.skills.config import load_config, with_overrides
    from policies.skills.runner import OffPolicyRunner

    config = with_overrides(
        load_config(task.config),
        dict(
            seed=seed,
            time_budget_s=budget_s,
            target_success=task.target,
            eval_every=eval_every,
            eval_episodes=eval_episodes,
            checkpoint_every=10**9,
        ),
    )
    started_at = time.time()
    with tempfile.TemporaryDirectory(prefix="hgpo-bench-skills-") as tmp:
        runner = OffPolicyRunner(config, Path(tmp) / task.config, progress=False)
        summary = runner.learn()
        curve = [(steps, result.success_rate) for steps, result in runner.evaluations]
    reached = summary.reached_target_at is not None
    steps = summary.reached_target_at if summary.reached_target_at is not None else summary.env_steps
    return Outcome(
        "hgpo",
        task.env_id,
        reached,
        steps,
        summary.train_time_s,
        summary.final.success_rate,
        curve,
        started_at,
        time.time(),
    )


def run_learner(
    learner: str,
    task: Task,
    budget: Budget,
    eval_every: int,
    eval_episodes: int,
    seed: int,
) -> Outcome:
    """One learner of a race: a peer trains within `budget`; ours within its fixed seconds, then records its
    result in `budget.ours_s`, which the peers' budgets read (in turn, or side by side as it ends)."""
    if learner != "hgpo":
        return run_peer(task, learner, budget, eval_every, eval_episodes, seed)
    try:
        outcome = run_ours(task, budget.fixed_s, eval_every, eval_episodes, seed)
    except BaseException:
        budget.ours_s.value = OURS_FAILED
        raise
    budget.ours_s.value = outcome.train_time_s if outcome.reached else OURS_MISSED
    return outcome


_OURS_S: Any = None
"""In a side-by-side worker: the race's shared record of ours (`Budget.ours_s`), inherited at spawn."""


def _join_race(ours_s: Any) -> None:
    global _OURS_S
    _OURS_S = ours_s


def _run_on_core(
    core: int,
    learner: str,
    task: Task,
    budget_s: float,
    factor: float | None,
    eval_every: int,
    eval_episodes: int,
    seed: int,
) -> Outcome:
    """One learner of a side-by-side race, alone on `core`."""
    import torch

    os.sched_setaffinity(0, {core})
    torch.set_num_threads(1)
    return run_learner(learner, task, Budget(budget_s, factor, _OURS_S), eval_every, eval_episodes, seed)


def race_side_by_side(
    task: Task,
    learners: Sequence[str],
    budget_s: float,
    factor: float | None,
    eval_every: int,
    eval_episodes: int,
    seed: int,
) -> list[Outcome]:
    """All learners at once, each in its own process pinned to its own core, so none shares a core and a
    peer given F times our time ends F times our time after the start instead of after ours."""
    context = multiprocessing.get_context("spawn")
    ours_s = context.Value("d", math.nan)
    cores = sorted(os.sched_getaffinity(0))
    with ProcessPoolExecutor(
        len(learners), mp_context=context, initializer=_join_race, initargs=(ours_s,)
    ) as pool:
        futures = [
            pool.submit(
                _run_on_core,
                core,
                learner,
                task,
                budget_s,
                factor,
                eval_every,
                eval_episodes,
                seed,
            )
            for core, learner in zip(cores, learners, strict=False)
        ]
        return [future.result() for future in futures]


def _speedups(outcomes: list[Outcome], env_id: str) -> dict[str, dict[str, Any]]:
    """Each peer's training time over ours to the target, printed; a peer that never reached it gives a lower
    bound (its whole budget), so a target missed by the peer still says how much slower it is at least."""
    ours = next((o for o in outcomes if o.task == env_id and o.learner == "hgpo"), None)
    if ours is None or not ours.reached:
        return {}
    speedups = {}
    for peer in (o for o in outcomes if o.task == env_id and o.learner != "hgpo"):
        ratio = peer.train_time_s / ours.train_time_s
        speedups[peer.learner] = {"ratio": round(ratio, 2), "lower_bound": not peer.reached}
        at_least = "" if peer.reached else "at least "
        print(f"{env_id}: ours reached the target {at_least}{ratio:.1f}x faster than {peer.learner}")
    return speedups


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo bench skills",
        description="Wall-clock time and env steps to a target evaluation success: ours vs stable-baselines3 "
        "SAC + HerReplayBuffer on gymnasium-robotics Fetch tasks.",
    )
    parser.add_argument("--tasks", nargs="+", default=list(TASKS), choices=list(TASKS))
    parser.add_argument(
        "--learners",
        nargs="+",
        default=["hgpo", "sb3"],
        choices=["hgpo", *PEERS],
        help="hgpo: ours; sb3: stable-baselines3 with rl-baselines3-zoo's tuned settings; sb3-defaults: with "
        "stable-baselines3's own SAC defaults (default: hgpo sb3)",
    )
    parser.add_argument(
        "--budget-s",
        type=float,
        nargs="+",
        default=[300.0, 900.0],
        help="training-time budget per run, one per task (default: 300 for Reach, 900 for Push)",
    )
    parser.add_argument(
        "--peer-budget-factor",
        type=float,
        help="give each peer F times our training time to the target instead of --budget-s (where ours "
        "reached it), so one run decides 'ours at least F x faster' at the least cost",
    )
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="train a task's learners at the same time, each on its own core (no more learners than cores), "
        "so with --peer-budget-factor F the race ends F times our time after it starts instead of 1 + F "
        "times it per peer",
    )
    parser.add_argument(
        "--eval-every",
        type=int,
        help="env steps between evaluations (default: 500 for Reach, 5000 for Push)",
    )
    parser.add_argument("--eval-episodes", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, default=Path("runs/bench/skills.json"))
    args = parser.parse_args(argv)
    if args.peer_budget_factor is not None and args.peer_budget_factor <= 0:
        parser.error(f"--peer-budget-factor must be > 0, got {args.peer_budget_factor}")
    cores = len(os.sched_getaffinity(0))
    if args.side_by_side and len(args.learners) > cores:
        parser.error(
            f"--side-by-side trains each learner on its own core: {len(args.learners)} learners, but only "
            f"{cores} core(s) here; name fewer --learners"
        )
    budgets = dict(zip(args.tasks, args.budget_s + args.budget_s[-1:] * len(args.tasks), strict=False))
    eval_every = {name: args.eval_every or TASKS[name].eval_every for name in args.tasks}
    os.environ.setdefault("MUJOCO_GL", "egl")
    import torch

    torch.set_num_threads(1)
    outcomes: list[Outcome] = []
    learners = sorted(args.learners, key=lambda learner: learner != "hgpo")  # ours first: its time sets F x
    factor = args.peer_budget_factor if "hgpo" in learners else None  # without ours, no time to multiply
    for name in args.tasks:
        task = TASKS[name]
        budget, every = budgets[name], eval_every[name]
        if args.side_by_side:
            print(f"{' and '.join(learners)} side by side on {task.env_id} (target {task.target:.0%}) ...")
            outcomes += race_side_by_side(
                task, learners, budget, factor, every, args.eval_episodes, args.seed
            )
            continue
        race_budget = Budget(budget, factor, multiprocessing.Value("d", math.nan))
        for learner in learners:
            seconds = budget if learner == "hgpo" else race_budget.seconds()
            print(f"{learner} on {task.env_id} (target {task.target:.0%}, budget {seconds:.0f} s) ...")
            outcomes.append(run_learner(learner, task, race_budget, every, args.eval_episodes, args.seed))

    rows = []
    for o in outcomes:
        reached = f"{o.env_steps} steps, {o.train_time_s:.0f} s" if o.reached else "not reached within budget"
        rows.append([o.task, o.learner, reached, o.env_steps, round(o.train_time_s, 1), o.final_success])
    print()
    print(table(["task", "learner", "to target", "env steps", "train s", "last success"], rows))
    speedups = {name: _speedups(outcomes, TASKS[name].env_id) for name in args.tasks}
    write_json(
        args.json,
        "skills",
        {
            **vars(args),
            "json": str(args.json),
            "eval_every": eval_every,
            "targets": {k: t.target for k, t in TASKS.items()},
        },
        {"runs": [asdict(o) for o in outcomes], "speedup": speedups},
    )
    print(f"wrote {args.json}")
    return 0
