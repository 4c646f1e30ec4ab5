"""The `gymnasium` backend: gymnasium-robotics' Fetch goal environments behind the batched contract.

Environments nobody here wrote, so that the trainer can be measured against other people's results (and
stable-baselines3's SAC + HER) on the same tasks. Each of the `num_envs` Fetch envs is a plain
`gymnasium.make` instance (with its 50-step TimeLimit) stepped in turn; the contract's auto-reset and info
keys are written here. Fetch keeps its own observation (with velocities) and action (end-effector
displacement, gripper opening); its success radius is 5 cm. Domain randomization is not offered.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from sim.skill_env.contract import (
    GoalObservation,
    GoalVecEnv,
    StepResult,
    check_actions,
    check_batch,
    step_info,
    zero_observation,
)
from sim.skill_env.randomization import RandomizationConfig

FETCH_TASKS: Mapping[str, str] = {
    "reach": "FetchReach-v4",
    "push": "FetchPush-v4",
    "pick_and_place": "FetchPickAndPlace-v4",
}
"""Skill -> gymnasium-robotics environment id."""

_XYZ = ("x", "y", "z")
_GRIPPER = ("gripper_state.left", "gripper_state.right")
_GRIPPER_VEL = ("gripper_vel.left", "gripper_vel.right")


def _fields(*names: str) -> tuple[str, ...]:
    return tuple(f"{name}.{axis}" for name in names for axis in _XYZ)


# The order of gymnasium_robotics.envs.fetch.MujocoFetchEnv._get_obs (object fields only with an object).
FETCH_REACH_LAYOUT = _fields("grip_pos") + _GRIPPER + _fields("grip_velp") + _GRIPPER_VEL
FETCH_OBJECT_LAYOUT = (
    _fields("grip_pos", "object_pos", "object_rel_pos")
    + _GRIPPER
    + _fields("object_rot", "object_velp", "object_velr", "grip_velp")
    + _GRIPPER_VEL
)
FETCH_ACTION_LAYOUT = ("displacement.x", "displacement.y", "displacement.z", "gripper_opening")


def _import_gymnasium_robotics() -> Any:
    try:
        import gymnasium
        import gymnasium_robotics
    except ImportError as error:
        raise ImportError(
            "the gymnasium skill-env backend needs gymnasium-robotics: "
            f"pip install gymnasium-robotics==1.4.2 (pinned in requirements.txt; `make setup`) ({error})"
        ) from error
    gymnasium.register_envs(gymnasium_robotics)
    return gymnasium


class FetchSkillEnv(GoalVecEnv):
    """FetchReach / FetchPush / FetchPickAndPlace (v4), `num_envs` at once, under the GoalVecEnv contract."""

    backend = "gymnasium"
    goal_layout = ("goal.x", "goal.y", "goal.z")
    action_layout = FETCH_ACTION_LAYOUT

    def __init__(self, skill: str, num_envs: int, seed: int = 0) -> None:
        check_batch(self.backend, skill, FETCH_TASKS, num_envs)
        gymnasium = _import_gymnasium_robotics()
        self.skill, self.num_envs, self.env_id = skill, num_envs, FETCH_TASKS[skill]
        self._envs = [gymnasium.make(self.env_id) for _ in range(num_envs)]
        first = self._envs[0]
        self.max_episode_steps = int(first.spec.max_episode_steps)
        self.distance_threshold = float(first.unwrapped.distance_threshold)
        self.control_dt = float(first.unwrapped.dt)
        self.observation_layout = FETCH_REACH_LAYOUT if skill == "reach" else FETCH_OBJECT_LAYOUT
        self._seed: int | None = seed
        self._obs = zero_observation(self.num_envs, self.obs_dim, self.goal_dim)
        self._returns = np.zeros(num_envs, dtype=np.float32)
        self._lengths = np.zeros(num_envs, dtype=np.int64)

    def reset(self, seed: int | None = None) -> GoalObservation:
        if seed is not None:
            self._seed = seed
        seeds: list[int | None] = [None] * self.num_envs
        if self._seed is not None:
            seeds = [
                int(s.generate_state(1)[0]) for s in np.random.SeedSequence(self._seed).spawn(self.num_envs)
            ]
            self._seed = None  # a later reset() without a seed continues each env's own random stream
        for i, (env, env_seed) in enumerate(zip(self._envs, seeds, strict=True)):
            self._write(self._obs, i, env.reset(seed=env_seed)[0])
        self._returns[:] = 0
        self._lengths[:] = 0
        return {key: value.copy() for key, value in self._obs.items()}

    def step(self, actions: np.ndarray) -> StepResult:
        clean, valid = check_actions(actions, self.num_envs, self.action_dim)
        n = self.num_envs
        reward = np.zeros(n, dtype=np.float32)
        success = np.zeros(n, dtype=bool)
        terminated = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        episode_return = np.zeros(n, dtype=np.float32)
        episode_length = np.zeros(n, dtype=np.int64)
        final = zero_observation(self.num_envs, self.obs_dim, self.goal_dim)
        for i, env in enumerate(self._envs):
            observation, reward[i], terminated[i], truncated[i], info = env.step(clean[i].astype(np.float32))
            success[i] = bool(info["is_success"])
            self._write(final, i, observation)
            self._returns[i] += reward[i]
            self._lengths[i] += 1
            if terminated[i] or truncated[i]:
                episode_return[i], episode_length[i] = self._returns[i], self._lengths[i]
                self._returns[i], self._lengths[i] = 0, 0
                self._write(self._obs, i, env.reset()[0])
            else:
                self._write(self._obs, i, observation)
        info = step_info(success, terminated, truncated, valid, final, episode_return, episode_length)
        observation = {key: value.copy() for key, value in self._obs.items()}
        return StepResult(observation, reward, terminated, truncated, info)

    def close(self) -> None:
        for env in self._envs:
            env.close()

    @staticmethod
    def _write(target: GoalObservation, i: int, observation: Mapping[str, np.ndarray]) -> None:
        for key in target:
            target[key][i] = observation[key]


def make_fetch_env(
    skill: str, num_envs: int, seed: int, randomization: RandomizationConfig | None, **options: object
) -> FetchSkillEnv:
    """The registry's factory. Fetch's physics is not randomized here, and it takes no options."""
    if randomization is not None:
        raise ValueError("the gymnasium backend does not randomize Fetch's dynamics; pass randomization=None")
    if options:
        raise ValueError(f"the gymnasium backend takes no options, got {sorted(options)}")
    return FetchSkillEnv(skill, num_envs, seed)
