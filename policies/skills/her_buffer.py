"""Hindsight experience replay (Andrychowicz et al. 2017), "future" strategy, vectorized in numpy.

Transitions are stored episode-major, `(episodes, horizon, dim)`, so that a goal achieved later in the
same episode is one index away. Each of the N parallel envs writes into its own open episode slot; the
slot joins the sampled pool when its episode ends (terminated or truncated). Rewards are never stored:
every sampled batch recomputes them with the env's vectorized `compute_reward(achieved, desired)`, the
relabelled ones and the others alike, so both come from one function.

Written by hand because the libraries that have one (stable-baselines3's HerReplayBuffer) tie it to
their own algorithm classes and step one transition at a time in Python.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

RewardFn = Callable[[np.ndarray, np.ndarray], np.ndarray]
"""(achieved_goal (B, goal_dim), desired_goal (B, goal_dim)) -> reward (B,)."""


@dataclass(frozen=True)
class Batch:
    """Sampled transitions, float32 arrays with the batch first."""

    obs: np.ndarray
    goal: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    terminated: np.ndarray
    """1.0 where the episode truly ended at this transition (no bootstrapping), else 0.0."""
    expert_action: np.ndarray | None = None
    """A demonstration's noiseless action where `action` is the one executed, noise included: behaviour
    cloning's target (None outside a buffer of demonstrations)."""


class HerReplayBuffer:
    """A ring of whole episodes; `sample` relabels a `relabel_prob` fraction with future achieved goals."""

    def __init__(
        self,
        *,
        num_envs: int,
        obs_dim: int,
        goal_dim: int,
        action_dim: int,
        horizon: int,
        capacity: int,
        compute_reward: RewardFn,
        her_k: int = 4,
        seed: int = 0,
        expert_actions: bool = False,
    ) -> None:
        """`capacity` counts transitions; `her_k` relabelled goals per real one gives p = k / (k + 1);
        `expert_actions`: `add` takes a demonstrator's noiseless actions too, and `sample` returns them."""
        episodes = max(capacity // horizon, 2 * num_envs + 1)
        self.num_envs, self.horizon, self.episodes = num_envs, horizon, episodes
        self.relabel_prob = her_k / (her_k + 1.0)
        self.compute_reward = compute_reward
        self.rng = np.random.default_rng(seed)
        shape = (episodes, horizon)
        self.obs = np.zeros((*shape, obs_dim), np.float32)
        self.next_obs = np.zeros((*shape, obs_dim), np.float32)
        self.goal = np.zeros((*shape, goal_dim), np.float32)
        self.next_achieved = np.zeros((*shape, goal_dim), np.float32)
        self.action = np.zeros((*shape, action_dim), np.float32)
        self.terminated = np.zeros(shape, np.float32)
        self.expert_action = np.zeros((*shape, action_dim) if expert_actions else (0, 0, 0), np.float32)
        self.length = np.zeros(episodes, np.int64)
        """Length of each complete episode; 0 while a slot is open or empty."""
        self._slot = np.arange(num_envs)
        self._step = np.zeros(num_envs, np.int64)
        self._next_slot = num_envs

    def add(
        self,
        obs: np.ndarray,
        goal: np.ndarray,
        action: np.ndarray,
        next_obs: np.ndarray,
        next_achieved: np.ndarray,
        terminated: np.ndarray,
        done: np.ndarray,
        expert_action: np.ndarray | None = None,
    ) -> None:
        """Store one step of every env; `done` (terminated or truncated) closes that env's episode.

        An episode that fills `horizon` steps is closed as well; a longer one continues as a new episode.

        `next_obs` and `next_achieved` are what the step led to, before any auto-reset.
        """
        slot, step = self._slot, self._step
        self.obs[slot, step] = obs
        self.goal[slot, step] = goal
        self.action[slot, step] = action
        self.next_obs[slot, step] = next_obs
        self.next_achieved[slot, step] = next_achieved
        self.terminated[slot, step] = terminated
        if self.expert_action.size:
            if expert_action is None:
                raise ValueError("this buffer keeps demonstrations: add needs their expert_action")
            self.expert_action[slot, step] = expert_action
        step += 1
        for env in np.flatnonzero(np.asarray(done) | (step >= self.horizon)):
            self.length[slot[env]] = step[env]
            new = self._next_slot % self.episodes
            while new in slot:  # never reuse another env's open episode
                self._next_slot += 1
                new = self._next_slot % self.episodes
            self._next_slot += 1
            self.length[new] = 0
            slot[env], step[env] = new, 0

    @property
    def size(self) -> int:
        """Transitions available for sampling (complete episodes only)."""
        return int(self.length.sum())

    @property
    def episodes_stored(self) -> int:
        return int(np.count_nonzero(self.length))

    def sample(self, batch_size: int, relabel: bool = True) -> Batch:
        """Transitions drawn uniformly; with probability relabel_prob the goal is one achieved later
        (never with `relabel` False: the goals the episodes were collected for)."""
        lengths = self.length
        complete = np.flatnonzero(lengths)
        if complete.size == 0:
            raise RuntimeError("no complete episode stored yet; collect more steps before sampling")
        ends = np.cumsum(lengths[complete])
        flat = self.rng.integers(ends[-1], size=batch_size)
        which = np.searchsorted(ends, flat, side="right")
        episode = complete[which]
        t = flat - (ends[which] - lengths[episode])
        future = t + (self.rng.random(batch_size) * (lengths[episode] - t)).astype(np.int64)
        relabelled = self.rng.random(batch_size) < (self.relabel_prob if relabel else 0.0)
        goal = np.where(relabelled[:, None], self.next_achieved[episode, future], self.goal[episode, t])
        reward = self.compute_reward(self.next_achieved[episode, t], goal)
        return Batch(
            obs=self.obs[episode, t],
            goal=goal,
            action=self.action[episode, t],
            reward=np.asarray(reward, np.float32),
            next_obs=self.next_obs[episode, t],
            terminated=self.terminated[episode, t],
            expert_action=self.expert_action[episode, t] if self.expert_action.size else None,
        )

    ARRAYS = ("obs", "next_obs", "goal", "next_achieved", "action", "terminated", "expert_action", "length")

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to resume: the episode slots written so far (views), cursors and the rng."""
        used = min(self._next_slot, self.episodes)
        return {
            **{name: getattr(self, name)[:used] for name in self.ARRAYS},
            "slot": self._slot,
            "step": self._step,
            "next_slot": self._next_slot,
            "rng": self.rng.bit_generator.state,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore a saved buffer; episodes that were still open are dropped, since the envs restart."""
        used = len(state["length"])
        if used > self.episodes or state["obs"].shape[1:] != self.obs.shape[1:]:
            raise ValueError(
                f"saved replay buffer of shape {state['obs'].shape} does not fit this one {self.obs.shape}"
            )
        for name in self.ARRAYS:
            array = getattr(self, name)
            if name == "expert_action":
                if not array.size:
                    continue
                saved = state.get(name)
                if saved is None or not saved.size:  # saved without them: the executed ones, as cloned then
                    saved = state["action"]
            else:
                saved = state[name]
            array[:used] = saved
            array[used:] = 0
        self._slot[...] = state["slot"]
        self._step[...] = 0
        self.length[self._slot] = 0
        self._next_slot = int(state["next_slot"])
        self.rng.bit_generator.state = state["rng"]
