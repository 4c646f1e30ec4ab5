"""Advantage estimators for multi-turn planner RL, as pure numpy functions of flat per-decision arrays.

A batch is a list of planner decisions ("steps") from G episodes per initial state. Each step carries
`group` (the initial state it started from: GRPO's group), `episode` (a unique id per episode), its
`reward`, and, for the step-level estimators, the text of the observation it saw and the subgoal it chose.
Steps of one episode appear in the batch in the order they were taken.

- GRPO: an episode's return, normalized among the G episodes of its group, is every step's advantage.
- GiGPO (Feng et al. 2025): GRPO plus a step-level advantage: steps of a group that saw the same anchor
  observation form a step group, and their discounted returns-to-go are normalized within it.
- HGPO (He et al. 2026, arXiv 2602.22817): the step groups are formed by how much history context the
  steps share: at depth k, steps whose current observation and previous k (observation, subgoal) pairs are
  identical. A step belongs to one group per depth 0..min(K, t); each group of two or more steps gives a
  relative advantage, and these are averaged with length weights (k + 1)^alpha, so groups of more
  consistent context (lower bias) weigh more than the large, shallow ones (lower variance).

`ESTIMATORS` maps each name to its function; all return one advantage per step.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

EPS = 1e-6


@dataclass(frozen=True)
class Steps:
    """Per-step arrays of one batch (see the module docstring)."""

    group: Sequence[Hashable]
    episode: Sequence[Hashable]
    reward: np.ndarray
    observation: Sequence[str]
    action: Sequence[str]

    def __post_init__(self) -> None:
        sizes = {
            len(self.group),
            len(self.episode),
            len(self.reward),
            len(self.observation),
            len(self.action),
        }
        if len(sizes) != 1:
            raise ValueError(f"step arrays differ in length: {sorted(sizes)}")


def relative(values: np.ndarray, keys: Sequence[Hashable], std: bool) -> np.ndarray:
    """Each value minus the mean of the values sharing its key, divided by their (population) standard
    deviation when `std`; a key held by a single value gives 0 (nothing to compare with)."""
    members: dict[Hashable, list[int]] = defaultdict(list)
    for index, key in enumerate(keys):
        members[key].append(index)
    out = np.zeros(len(values), dtype=np.float64)
    for indices in members.values():
        if len(indices) < 2:
            continue
        own = values[indices]
        centred = own - own.mean()
        out[indices] = centred / (own.std() + EPS) if std else centred
    return out


def episode_returns(steps: Steps) -> np.ndarray:
    """The undiscounted return of each step's episode, per step."""
    totals: dict[Hashable, float] = defaultdict(float)
    for episode, reward in zip(steps.episode, steps.reward, strict=True):
        totals[episode] += float(reward)
    return np.array([totals[e] for e in steps.episode], dtype=np.float64)


def returns_to_go(steps: Steps, gamma: float) -> np.ndarray:
    """sum_j gamma^j r_{t+j} within each step's episode."""
    out = np.zeros(len(steps.reward), dtype=np.float64)
    running: dict[Hashable, float] = defaultdict(float)
    for index in reversed(range(len(steps.reward))):
        episode = steps.episode[index]
        running[episode] = float(steps.reward[index]) + gamma * running[episode]
        out[index] = running[episode]
    return out


def grpo(steps: Steps, std: bool = True) -> np.ndarray:
    """Episode return normalized within the group of episodes from the same initial state."""
    first: dict[Hashable, int] = {}
    for index, episode in enumerate(steps.episode):
        first.setdefault(episode, index)
    returns = episode_returns(steps)
    episodes = list(first)
    per_episode = relative(
        returns[[first[e] for e in episodes]], [steps.group[first[e]] for e in episodes], std
    )
    advantage = dict(zip(episodes, per_episode, strict=True))
    return np.array([advantage[e] for e in steps.episode], dtype=np.float64)


def contexts(steps: Steps, depth: int) -> list[tuple[Hashable, ...] | None]:
    """Each step's depth-k context key: its group, the previous `depth` (observation, action) pairs of its
    episode and its observation; None for a step with fewer than `depth` steps before it."""
    position: dict[Hashable, list[int]] = defaultdict(list)
    keys: list[tuple[Hashable, ...] | None] = []
    for index, episode in enumerate(steps.episode):
        before = position[episode]
        if len(before) < depth:
            keys.append(None)
        else:
            past = before[len(before) - depth :]
            history = tuple((steps.observation[i], steps.action[i]) for i in past)
            keys.append((steps.group[index], history, steps.observation[index]))
        before.append(index)
    return keys


def gigpo(steps: Steps, gamma: float = 0.95, step_weight: float = 1.0, std: bool = True) -> np.ndarray:
    """GRPO's episode advantage plus `step_weight` times the anchor-state step advantage."""
    anchors = contexts(steps, 0)
    step = relative(returns_to_go(steps, gamma), anchors, std)
    return grpo(steps, std) + step_weight * step


def hgpo_step(steps: Steps, gamma: float, max_depth: int, alpha: float, std: bool) -> np.ndarray:
    """HGPO's step-level advantage: relative returns-to-go in each context group of depth 0..max_depth
    with two or more members, averaged with weights (depth + 1)^alpha; 0 for a step alone at every depth."""
    returns = returns_to_go(steps, gamma)
    weighted = np.zeros(len(returns), dtype=np.float64)
    total = np.zeros(len(returns), dtype=np.float64)
    for depth in range(max_depth + 1):
        keys = contexts(steps, depth)
        sizes: dict[Hashable, int] = defaultdict(int)
        for key in keys:
            sizes[key] += 1
        member = np.array([key is not None and sizes[key] > 1 for key in keys])
        if not member.any():
            continue
        advantage = relative(
            returns, [key if key is not None else ("alone", i) for i, key in enumerate(keys)], std
        )
        weight = (depth + 1) ** alpha
        weighted[member] += weight * advantage[member]
        total[member] += weight
    return np.divide(weighted, total, out=np.zeros_like(weighted), where=total > 0)


def hgpo(
    steps: Steps,
    gamma: float = 0.95,
    step_weight: float = 1.0,
    std: bool = True,
    max_depth: int = 2,
    alpha: float = 1.0,
) -> np.ndarray:
    """GRPO's episode advantage plus `step_weight` times HGPO's hierarchy-of-groups step advantage."""
    return grpo(steps, std) + step_weight * hgpo_step(steps, gamma, max_depth, alpha, std)


ESTIMATORS: Mapping[str, Callable[..., np.ndarray]] = {"grpo": grpo, "gigpo": gigpo, "hgpo": hgpo}
"""Estimator name -> function(steps, **its keyword settings from the config)."""


def advantages(name: str, steps: Steps, **settings: float | int | bool) -> np.ndarray:
    """Run estimator `name`; an unknown name is an error listing the known ones."""
    if name not in ESTIMATORS:
        raise ValueError(f"unknown advantage estimator {name!r}; known: {', '.join(ESTIMATORS)}")
    return ESTIMATORS[name](steps, **settings)
