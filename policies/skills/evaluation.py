"""Deterministic evaluation of a goal-conditioned policy on a batched env: success rate and return.

Shared by the trainer's periodic evaluations, `hgpo eval-skills` and `hgpo bench skills`, so every
success figure in the project is counted the same way: an episode succeeds when the env reports success
at its last step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np

from sim.skill_env.contract import GoalVecEnv

Policy = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(obs (N, obs_dim), desired_goal (N, goal_dim)) -> actions (N, action_dim) in [-1, 1]."""


@dataclass(frozen=True)
class EvalResult:
    episodes: int
    success_rate: float
    mean_return: float
    mean_length: float

    def as_dict(self) -> dict[str, float | int]:
        return asdict(self)


def evaluate(env: GoalVecEnv, policy: Policy, episodes: int, seed: int | None = None) -> EvalResult:
    """Run `episodes` episodes from a fresh reset (reseeded when `seed` is given), each env in turn.

    Each env runs ceil(episodes / num_envs) episodes at most; the first `episodes` that end are counted,
    taking whole rounds of envs first so that fast (early-ending) episodes do not crowd out slow ones.
    """
    if episodes < 1:
        raise ValueError(f"episodes must be >= 1, got {episodes}")
    n = env.num_envs
    quota = np.full(n, episodes // n) + (np.arange(n) < episodes % n)
    done_count = np.zeros(n, np.int64)
    returns = np.zeros(n)
    lengths = np.zeros(n, np.int64)
    successes: list[float] = []
    episode_returns: list[float] = []
    episode_lengths: list[int] = []
    observation = env.reset(seed=seed)
    while len(successes) < episodes:
        action = policy(observation["observation"], observation["desired_goal"])
        step = env.step(action)
        returns += step.reward
        lengths += 1
        for i in np.flatnonzero(step.terminated | step.truncated):
            if done_count[i] < quota[i]:
                successes.append(float(step.info["success"][i]))
                episode_returns.append(float(returns[i]))
                episode_lengths.append(int(lengths[i]))
                done_count[i] += 1
            returns[i], lengths[i] = 0.0, 0
        observation = step.observation
    return EvalResult(
        episodes=episodes,
        success_rate=float(np.mean(successes)),
        mean_return=float(np.mean(episode_returns)),
        mean_length=float(np.mean(episode_lengths)),
    )
