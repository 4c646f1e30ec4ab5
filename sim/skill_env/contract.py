"""The batched goal-conditioned environment contract: all that trainers, evaluators and benchmarks know.

In the manner of rsl_rl's `VecEnv` and Isaac Gym tasks, one object steps `num_envs` independent episodes
of one skill at once. Everything is a numpy array with the batch first:

    env = make_skill_env("mujoco", "pick_and_place", num_envs=16, seed=0)
    obs = env.reset()                      # {"observation": (16, obs_dim), "achieved_goal": (16, goal_dim),
                                           #  "desired_goal": (16, goal_dim)}, float32
    obs, reward, terminated, truncated, info = env.step(actions)   # actions (16, action_dim) in [-1, 1]
    final = info["final_observation"]      # what the actions led to, before any auto-reset
    reward == env.compute_reward(final["achieved_goal"], final["desired_goal"])

Semantics, as gymnasium-robotics' Fetch tasks (so HER works unchanged):
- The reward is sparse, -1 while the achieved goal is farther than `distance_threshold` (metres) from the
  desired goal and 0 within it; `compute_reward` recomputes it for any (achieved, desired) pair, which is
  what hindsight relabelling needs.
- Episodes last `max_episode_steps` control steps and do not end on success: `truncated` is True at the
  time limit. `terminated` is True only where a backend ends an episode for good (none of the tabletop
  skills does); a trainer bootstraps through truncation and not through termination.
- Auto-reset: an env whose episode ended is reset inside `step`, and the observation returned for it is
  the first of its next episode. The observation its last action led to is in `info["final_observation"]`.

Reserved `info` keys (every backend writes all of them, each an array over the batch):
- `success` (bool): the achieved goal is within the threshold after this step (before any auto-reset);
  at the last step of an episode it is the episode's success.
- `time_outs` (bool): the episode ended by its time limit and not for good (`truncated & ~terminated`, from
  `time_outs()`; the rsl_rl name): where a trainer bootstraps.
- `is_action_valid` (bool): the action was finite and inside [-1, 1]. Non-finite entries are applied as 0
  and out-of-range entries are clipped; the step still happens.
- `final_observation` (dict like the observation): what this step's action led to, for every env, before
  any auto-reset; rows of envs that did not end equal the returned observation. Store transitions with it.
- `episode_return` (float32) and `episode_length` (int64): the sums over the episode that just ended,
  valid where `terminated | truncated`, 0 elsewhere.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping
from typing import Any, NamedTuple, Protocol, TypeVar, runtime_checkable

import numpy as np

from sim.config_mapping import build_dataclass

GoalObservation = dict[str, np.ndarray]
"""Keys `observation`, `achieved_goal`, `desired_goal`; float32 arrays of shape (num_envs, dim)."""
OBSERVATION_KEYS = ("observation", "achieved_goal", "desired_goal")


class StepResult(NamedTuple):
    """What `GoalVecEnv.step` returns; unpacks like gymnasium's five-tuple."""

    observation: GoalObservation
    reward: np.ndarray
    """(num_envs,) float32, -1 or 0."""
    terminated: np.ndarray
    """(num_envs,) bool."""
    truncated: np.ndarray
    """(num_envs,) bool."""
    info: dict[str, Any]


class DeviceStep(NamedTuple):
    """A step's results left on the device that computed them, each array a DLPack exporter (`__dlpack__`),
    so a learner on the same device reads them in place (`torch.from_dlpack`) instead of through host memory.
    The same batch semantics as `StepResult`; of `info` only what a learner needs."""

    observation: Mapping[str, Any]
    final_observation: Mapping[str, Any]
    reward: Any
    terminated: Any
    truncated: Any
    success: Any

    @classmethod
    def from_host(cls, result: StepResult) -> DeviceStep:
        """A host backend's step in the same shape (numpy arrays export DLPack too)."""
        info = result.info
        return cls(
            result.observation,
            info["final_observation"],
            result.reward,
            result.terminated,
            result.truncated,
            info["success"],
        )


@runtime_checkable
class DeviceStepping(Protocol):
    """A backend that can also step without leaving its device (the `mjx` backend on a GPU).

    `dlpack_device` is the device its arrays live on, in torch's words (`cpu`, `cuda`): a learner uses
    `step_on_device` only where its own tensors live there too."""

    @property
    def dlpack_device(self) -> str: ...

    def step_on_device(self, actions: Any) -> DeviceStep:
        """`step` with actions from any DLPack exporter on `dlpack_device` (shape (num_envs, action_dim)),
        invalid entries applied as `step` applies them."""
        ...


def goal_distance(achieved: np.ndarray, desired: np.ndarray) -> np.ndarray:
    """Euclidean distance over the last axis, for any matching leading shape."""
    return np.linalg.norm(np.asarray(achieved) - np.asarray(desired), axis=-1)


def sparse_reward(achieved: np.ndarray, desired: np.ndarray, threshold: float) -> np.ndarray:
    """-1 where the goals are farther apart than threshold, 0 within it (float32, leading shape)."""
    return -(goal_distance(achieved, desired) > threshold).astype(np.float32)


Config = TypeVar("Config")


def check_batch(backend: str, skill: str, known: Collection[str], num_envs: int) -> None:
    """What every backend's constructor checks first: a skill it runs, and at least one env."""
    if skill not in known:
        raise ValueError(f"unknown {backend} skill {skill!r}; known: {', '.join(known)}")
    if num_envs < 1:
        raise ValueError(f"num_envs must be >= 1, got {num_envs}")


def config_from_options(backend: str, config_type: type[Config], options: Mapping[str, object]) -> Config:
    """A backend's config dataclass from the registry's free-form options, through the one strict loader
    (an unknown option or a value of the wrong type is named)."""
    config: Config = build_dataclass(config_type, dict(options), f"{backend} skill-env options")
    return config


class GoalVecEnv(ABC):
    """A batch of `num_envs` goal-conditioned episodes of one skill, stepped together.

    Attributes every backend sets: `backend` and `skill` (registry names), `num_envs`, `obs_dim`,
    `goal_dim`, `action_dim`, `max_episode_steps`, `control_dt` (seconds per step), `distance_threshold`
    (metres) and the layouts: `observation_layout` / `goal_layout` / `action_layout`, one name per vector
    entry (e.g. "ee_position.x"), which export writes into a policy's metadata so that deployment can
    refuse a policy whose inputs it does not compute.
    """

    backend: str
    skill: str
    num_envs: int
    max_episode_steps: int
    control_dt: float
    distance_threshold: float
    observation_layout: tuple[str, ...]
    goal_layout: tuple[str, ...]
    action_layout: tuple[str, ...]

    @property
    def obs_dim(self) -> int:
        return len(self.observation_layout)

    @property
    def goal_dim(self) -> int:
        return len(self.goal_layout)

    @property
    def action_dim(self) -> int:
        return len(self.action_layout)

    @abstractmethod
    def reset(self, seed: int | None = None) -> GoalObservation:
        """Start a new episode in every env; with a seed, reseed first (the same seed gives the same run)."""

    @abstractmethod
    def step(self, actions: np.ndarray) -> StepResult:
        """Apply one normalized action per env (shape (num_envs, action_dim)) for one control step."""

    def compute_reward(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
        """The reward `step` gives, for any batch of goals of shape (..., goal_dim): for HER relabelling."""
        return sparse_reward(achieved_goal, desired_goal, self.distance_threshold)

    def goal_reached(self, achieved_goal: np.ndarray, desired_goal: np.ndarray) -> np.ndarray:
        """Whether each achieved goal lies within the threshold of its desired goal (bool, leading shape)."""
        return goal_distance(achieved_goal, desired_goal) <= self.distance_threshold

    def close(self) -> None:  # noqa: B027 (optional hook: most backends hold nothing to free)
        """Free what the backend holds (threads, simulators, renderers)."""

    def __enter__(self) -> GoalVecEnv:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def time_outs(terminated: np.ndarray, truncated: np.ndarray) -> np.ndarray:
    """The reserved `time_outs` key: episodes cut by the time limit that did not also end for good, so that
    a trainer bootstrapping on it never bootstraps through a termination."""
    return np.asarray(truncated, dtype=bool) & ~np.asarray(terminated, dtype=bool)


def step_info(
    success: np.ndarray,
    terminated: np.ndarray,
    truncated: np.ndarray,
    is_action_valid: np.ndarray,
    final_observation: GoalObservation,
    episode_return: np.ndarray,
    episode_length: np.ndarray,
) -> dict[str, Any]:
    """A step's info with the reserved keys (see the module docstring), built once for every backend."""
    return {
        "success": success,
        "time_outs": time_outs(terminated, truncated),
        "is_action_valid": is_action_valid,
        "final_observation": final_observation,
        "episode_return": episode_return,
        "episode_length": episode_length,
    }


def zero_observation(num_envs: int, obs_dim: int, goal_dim: int) -> GoalObservation:
    """A batch's observation dict of float32 zeros, for a backend to fill row by row."""
    return {
        "observation": np.zeros((num_envs, obs_dim), dtype=np.float32),
        "achieved_goal": np.zeros((num_envs, goal_dim), dtype=np.float32),
        "desired_goal": np.zeros((num_envs, goal_dim), dtype=np.float32),
    }


def check_actions(actions: np.ndarray, num_envs: int, action_dim: int) -> tuple[np.ndarray, np.ndarray]:
    """Validate the batch's shape; return (actions as float64 with non-finite entries 0 and clipped to
    [-1, 1], per-env `is_action_valid`). A wrong shape is a programming error and raises ValueError."""
    array = np.asarray(actions, dtype=np.float64)
    if array.shape != (num_envs, action_dim):
        raise ValueError(f"actions must have shape ({num_envs}, {action_dim}), got {array.shape}")
    finite = np.isfinite(array)
    valid = np.all(finite & (np.abs(np.where(finite, array, 0.0)) <= 1.0), axis=1)
    return np.clip(np.where(finite, array, 0.0), -1.0, 1.0), valid
