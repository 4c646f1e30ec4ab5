"""Scripted-expert demonstrations for the replay's demonstration buffer (Nair et al. 2018).

A backend that has scripted experts (the MuJoCo tabletop: `sim/tabletop/experts.py`) exposes them as
`expert_actions()`, the experts' normalized actions for the envs' current states. Episodes are stored
with their real goals; the buffer relabels them with hindsight like any other. With action noise the
buffer keeps both actions: the executed one for the critics, the expert's own for behaviour cloning (the
noise widens the states the expert is seen in, as in DART, Laskey et al. 2017, without teaching it).
"""

from __future__ import annotations

import numpy as np
import torch
from tqdm import tqdm

from policies.skills.config import DemoConfig
from policies.skills.her_buffer import HerReplayBuffer
from policies.skills.sac import SAC
from sim.skill_env.contract import GoalVecEnv


def collect_demonstrations(
    env: GoalVecEnv, buffer: HerReplayBuffer, config: DemoConfig, agent: SAC, progress: bool = False
) -> float:
    """Fill `buffer` with `config.episodes` expert episodes; return the experts' success rate.

    The agent's normalizers see the demonstrations too, so the first updates do not meet unseen scales.
    """
    expert = getattr(env, "expert_actions", None)
    if expert is None:
        raise ValueError(
            f"the {env.backend} backend has no scripted expert for {env.skill!r}; set demos.episodes: 0"
        )
    rng = np.random.default_rng(buffer.rng.integers(2**31))
    observation = env.reset()
    successes: list[bool] = []
    bar = tqdm(total=config.episodes, unit="episode", desc="expert demonstrations", disable=not progress)
    while len(successes) < config.episodes:
        obs, goal = observation["observation"], observation["desired_goal"]
        intended = np.asarray(expert(), np.float32)
        action = intended
        if config.action_noise:
            action = np.clip(action + rng.normal(0.0, config.action_noise, action.shape), -1.0, 1.0)
        observation, _, terminated, truncated, info = env.step(action.astype(np.float32))
        final = info["final_observation"]
        done = terminated | truncated
        buffer.add(
            obs, goal, action, final["observation"], final["achieved_goal"], terminated, done, intended
        )
        agent.observe(torch.from_numpy(obs), torch.from_numpy(goal), torch.from_numpy(final["achieved_goal"]))
        successes += info["success"][done].tolist()
        bar.update(min(int(done.sum()), config.episodes - bar.n))
    bar.close()
    return float(np.mean(successes))
