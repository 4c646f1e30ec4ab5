"""Our batched goal-conditioned env contract seen through rsl-rl-lib's `VecEnv`, so its PPO trains on it.

Observations go out as a TensorDict with one group per contract key (`observation`, `achieved_goal`,
`desired_goal`); the runner's `obs_groups` picks the policy input (observation and desired goal, in that
order, as our ONNX contract's `obs` and `goal`). `extras["time_outs"]` marks episodes cut by the time
limit, so PPO bootstraps through them. Episodes that end are recorded (training return, success, final
distance) for the run's own metrics, and averaged into rsl-rl's console and TensorBoard log too.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch
from rsl_rl.env import VecEnv
from tensordict import TensorDict

from policies.skills.ppo_config import REWARDS
from sim.skill_env.contract import OBSERVATION_KEYS, GoalObservation, GoalVecEnv, goal_distance


@dataclass
class EpisodeRecord:
    """Sums over the episodes that ended since the last `pop_episodes`."""

    returns: list[float]
    successes: list[float]
    final_distances: list[float]


class RslRlGoalEnv(VecEnv):
    """Adapts a `GoalVecEnv` (numpy, auto-reset, time limits inside) to rsl-rl-lib 5.x's `VecEnv`.

    `device`: where rsl-rl's tensors live (cuda on a GPU box): each step's few numbers per env cross over.
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
        self.cfg = {"backend": env.backend, "skill": env.skill, "reward": reward}
        self.episode_length_buf = torch.zeros(env.num_envs, dtype=torch.long, device=device)
        self._returns = np.zeros(env.num_envs)
        self._episodes = EpisodeRecord([], [], [])
        self._observation = env.reset(seed=seed)

    def get_observations(self) -> TensorDict:
        return self._as_tensordict(self._observation)

    def step(self, actions: torch.Tensor) -> tuple[TensorDict, torch.Tensor, torch.Tensor, dict]:
        """One env step; actions outside [-1, 1] are clipped here (a Gaussian policy's samples often are)."""
        clipped = actions.detach().cpu().numpy().clip(-1.0, 1.0)
        observation, sparse, terminated, truncated, info = self.env.step(clipped)
        final = info["final_observation"]
        distance = goal_distance(final["achieved_goal"], final["desired_goal"])
        reward = -distance if self.reward == "dense" else sparse
        done = terminated | truncated
        self._returns += reward
        self.episode_length_buf += 1
        ended = np.flatnonzero(done)
        log: dict[str, torch.Tensor] = {}
        if ended.size:
            self._episodes.returns += self._returns[ended].tolist()
            self._episodes.successes += info["success"][ended].astype(float).tolist()
            self._episodes.final_distances += distance[ended].tolist()
            log = {
                "/episode/success": torch.as_tensor(info["success"][ended], dtype=torch.float32),
                "/episode/final_distance": torch.as_tensor(distance[ended], dtype=torch.float32),
            }
            self._returns[ended] = 0.0
            self.episode_length_buf[torch.from_numpy(ended).to(self.device)] = 0
        self._observation = observation
        extras = {"time_outs": torch.from_numpy(truncated & ~terminated).to(self.device), "log": log}
        rewards = torch.as_tensor(reward, dtype=torch.float32, device=self.device)
        dones = torch.from_numpy(done).long().to(self.device)
        return self._as_tensordict(observation), rewards, dones, extras

    def pop_episodes(self) -> EpisodeRecord:
        """The episodes that ended since the last call, and forget them."""
        episodes, self._episodes = self._episodes, EpisodeRecord([], [], [])
        return episodes

    def _as_tensordict(self, observation: GoalObservation) -> TensorDict:
        return TensorDict(
            {key: torch.from_numpy(np.asarray(observation[key], np.float32)) for key in OBSERVATION_KEYS},
            batch_size=[self.num_envs],
            device=self.device,
        )
