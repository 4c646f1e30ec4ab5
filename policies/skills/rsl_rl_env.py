"""Our batched goal-conditioned env contract seen through rsl-rl-lib's `VecEnv`, so its PPO trains on it.

Observations go out as a TensorDict with one group per contract key (`observation`, `achieved_goal`,
`desired_goal`); the runner's `obs_groups` picks the policy input (observation and desired goal, in that
order, as our ONNX contract's `obs` and `goal`). `extras["time_outs"]` marks episodes cut by the time
limit, so PPO bootstraps through them. Episodes that end are recorded (training return, success, final
distance) for the run's own metrics, and averaged into rsl-rl's console and TensorBoard log too.

A backend that steps on the learner's device (`DeviceStepping`: the `mjx` backend on a GPU, with PPO on
`cuda`) hands its arrays over by DLPack, in place: the batch never crosses host memory. Other backends
step on numpy, and their arrays are read in place too (on the CPU) before moving to the learner's device.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from policies.skills.ppo_config import REWARDS
from sim.skill_env.contract import (
    OBSERVATION_KEYS,
    DeviceStep,
    DeviceStepping,
    GoalVecEnv,
)


@dataclass
class EpisodeRecord:
    """Sums over the episodes that ended since the last `pop_episodes`."""

    returns: list[float]
    successes: list[float]
    final_distances: list[float]


class RslRlGoalEnv(VecEnv):
    """Adapts a `GoalVecEnv` (auto-reset, time limits inside) to rsl-rl-lib 5.x's `VecEnv`.

    `device`: where rsl-rl's tensors live (cuda on a GPU box).
    """

    def __init__(
        self, env: GoalVecEnv, reward: str = "dense", seed: int | None = None, device: str = "cpu"
    ) -> None:
        if reward not in REWARDS:
            raise ValueError(f"unknown reward {reward!r}; known: {', '.join(REWARDS)}")
        self.env = env
        self.reward = reward
        self.num_envs = env.num_envs
        self.num_actions = env.action_dim
        self.max_episode_length = env.max_episode_steps
        self.device = device
        self.on_device = isinstance(env, DeviceStepping) and env.dlpack_device == torch.device(device).type
        """Whether steps hand over by DLPack on the device (no host copies)."""
        self.cfg = {"backend": env.backend, "skill": env.skill, "reward": reward}
        self.episode_length_buf = torch.zeros(env.num_envs, dtype=torch.long, device=device)
        self._returns = torch.zeros(env.num_envs, device=device)
        self._episodes = EpisodeRecord([], [], [])
        self._observation = self._as_tensordict(env.reset(seed=seed))

    def get_observations(self) -> TensorDict:
        return self._observation

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """One env step; actions outside [-1, 1] are clipped here (a Gaussian policy's samples often are)."""
        result = self._env_step(actions.detach().clamp(-1.0, 1.0).contiguous())
        final = result.final_observation
        distance = torch.linalg.vector_norm(
            self._tensor(final["achieved_goal"]) - self._tensor(final["desired_goal"]), dim=-1
        )
        reward = -distance if self.reward == "dense" else self._tensor(result.reward).float()
        terminated = self._tensor(result.terminated).bool()
        truncated = self._tensor(result.truncated).bool()
        done = terminated | truncated
        self._returns += reward
        self.episode_length_buf += 1
        log: dict[str, torch.Tensor] = {}
        if done.any():
            success = self._tensor(result.success).float()[done]
            self._episodes.returns += self._returns[done].tolist()
            self._episodes.successes += success.tolist()
            self._episodes.final_distances += distance[done].tolist()
            log = {"/episode/success": success, "/episode/final_distance": distance[done]}
            self._returns[done] = 0.0
            self.episode_length_buf[done] = 0
        self._observation = self._as_tensordict(result.observation)
        extras = {"time_outs": truncated & ~terminated, "log": log}
        return self._observation, reward.float(), done.long(), extras

    def pop_episodes(self) -> EpisodeRecord:
        """The episodes that ended since the last call, and forget them."""
        episodes, self._episodes = self._episodes, EpisodeRecord([], [], [])
        return episodes

    def _env_step(self, actions: torch.Tensor) -> DeviceStep:
        if self.on_device:
            return self.env.step_on_device(actions)  # type: ignore[attr-defined]
        return DeviceStep.from_host(self.env.step(actions.cpu().numpy()))

    def _tensor(self, array: object) -> torch.Tensor:
        """An env array as a tensor on the learner's device, read in place where it already lives there."""
        if isinstance(array, np.ndarray):
            return torch.as_tensor(array, device=self.device)
        return torch.from_dlpack(array).to(self.device)  # type: ignore[arg-type]

    def _as_tensordict(self, observation: object) -> TensorDict:
        return TensorDict(
            {key: self._tensor(observation[key]).float() for key in OBSERVATION_KEYS},  # type: ignore[index]
            batch_size=[self.num_envs],
            device=self.device,
        )
