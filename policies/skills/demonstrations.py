"""Scripted-expert demonstrations for the replay's demonstration buffer (Nair et al. 2018), and DAgger.

A backend that has scripted experts (the MuJoCo tabletop: `sim/tabletop/experts.py`) exposes them as
`expert_actions()`, the experts' normalized actions for the envs' current states. Episodes are stored
with their real goals; the buffer relabels them with hindsight like any other. The buffer keeps both
actions of every step: the executed one for the critics, the expert's own for behaviour cloning. With
action noise the expert's episodes cover wider states than its own path (DART, Laskey et al. 2017); in
DAgger's episodes (Ross et al. 2011) the cloned actor acts, so the expert labels the states the clone
itself reaches, its mistakes included, which the expert's own episodes never show.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import torch
from tqdm import tqdm

from policies.skills.config import DemoConfig
from policies.skills.her_buffer import HerReplayBuffer
from policies.skills.sac import SAC
from sim.skill_env.contract import GoalVecEnv

Actor = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]
"""(observation, desired goal, the expert's action) -> the action executed, all batched."""


def collect_demonstrations(
    env: GoalVecEnv, buffer: HerReplayBuffer, config: DemoConfig, agent: SAC, progress: bool = False
) -> float:
    """Fill `buffer` with `config.episodes` expert episodes; return the experts' success rate.

    The agent's normalizers see the demonstrations too, so the first updates do not meet unseen scales.
    """
    rng = np.random.default_rng(buffer.rng.integers(2**31))

    def noisy_expert(obs: np.ndarray, goal: np.ndarray, intended: np.ndarray) -> np.ndarray:
        if not config.action_noise:
            return intended
        return np.clip(intended + rng.normal(0.0, config.action_noise, intended.shape), -1.0, 1.0)

    return _collect(env, buffer, config.episodes, noisy_expert, agent, "expert demonstrations", progress)


def collect_dagger_episodes(
    env: GoalVecEnv, buffer: HerReplayBuffer, episodes: int, agent: SAC, progress: bool = False
) -> float:
    """Add `episodes` episodes of the agent's deterministic actor, labelled by the expert; return the actor's
    success rate in them. The normalizers stay as they are: the actor keeps the input scales it was cloned
    with (moving them under its weights undid the cloning, see the runner)."""

    def clone(obs: np.ndarray, goal: np.ndarray, intended: np.ndarray) -> np.ndarray:
        return agent.act(torch.from_numpy(obs), torch.from_numpy(goal), deterministic=True).numpy()

    return _collect(env, buffer, episodes, clone, None, "DAgger episodes", progress)


def _collect(
    env: GoalVecEnv,
    buffer: HerReplayBuffer,
    episodes: int,
    act: Actor,
    observer: SAC | None,
    desc: str,
    progress: bool,
) -> float:
    """Play `episodes` episodes with `act`, storing each step with the expert's action as its label."""
    expert = getattr(env, "expert_actions", None)
    if expert is None:
        raise ValueError(
            f"the {env.backend} backend has no scripted expert for {env.skill!r}; set demos.episodes: 0"
        )
    observation = env.reset()
    successes: list[bool] = []
    bar = tqdm(total=episodes, unit="episode", desc=desc, disable=not progress)
    while len(successes) < episodes:
        obs, goal = observation["observation"], observation["desired_goal"]
        intended = np.asarray(expert(), np.float32)
        action = np.asarray(act(obs, goal, intended), np.float32)
        observation, _, terminated, truncated, info = env.step(action)
        final = info["final_observation"]
        done = terminated | truncated
        buffer.add(
            obs, goal, action, final["observation"], final["achieved_goal"], terminated, done, intended
        )
        if observer is not None:
            observer.observe(
                torch.from_numpy(obs), torch.from_numpy(goal), torch.from_numpy(final["achieved_goal"])
            )
        successes += info["success"][done].tolist()
        bar.update(min(int(done.sum()), episodes - bar.n))
    bar.close()
    return float(np.mean(successes))
