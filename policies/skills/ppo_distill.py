"""PPO's actor started from a trained policy (e.g. the DAgger clone): DAgger distillation before PPO.

PPO from scratch has to find a grasp by chance; a policy that already grasps (a SAC actor of another shape,
an ONNX file) is a better start, but its weights do not fit rsl-rl's actor. So the actor learns its actions
instead, as a student from a teacher (Ross et al. 2011): in round 0 the teacher plays, in every later round
the student's own mean plays, and the teacher labels every state visited, the student's mistakes included;
after each round the student regresses onto all labels so far. The student's input normalizer is fitted to
the states it will meet. PPO then starts from the student, exploring with `ppo.init_std`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from rsl_rl.models import MLPModel
from tensordict import TensorDict
from tqdm import tqdm

from policies.skills.evaluation import Policy
from policies.skills.loaded_policy import check_layouts, load_policy
from policies.skills.ppo_config import ACTOR_GROUPS
from policies.skills.rsl_rl_env import RslRlGoalEnv


@dataclass(frozen=True)
class DistillRound:
    """One round's play: who acted, and how often its episodes succeeded."""

    actor: str
    success_rate: float
    labels: int
    loss: float


def load_teacher(path: Path, env: RslRlGoalEnv) -> Policy:
    """The policy to start from, refused with the reason if missing, unreadable or of other layouts."""
    if not path.is_file():
        raise FileNotFoundError(
            f"ppo.init_policy {path} does not exist: give an exported policy (.onnx) or a checkpoint (.pt) "
            "of this skill, e.g. policies/pretrained/skills/<skill>/policy.onnx"
        )
    teacher, info = load_policy(path)
    check_layouts(info, env.env, str(path))
    return teacher


def distill(
    env: RslRlGoalEnv,
    actor: MLPModel,
    teacher: Policy,
    rounds: int,
    steps_per_round: int,
    updates_per_round: int,
    batch_size: int = 1024,
    learning_rate: float = 1e-3,
    progress: bool = False,
) -> list[DistillRound]:
    """Train `actor`'s mean to act as `teacher` on `env`; return each round's figures."""
    inputs: list[torch.Tensor] = []
    labels: list[torch.Tensor] = []
    optimizer = torch.optim.Adam(actor.mlp.parameters(), lr=learning_rate)
    history = []
    bar = tqdm(total=rounds, unit="round", desc="distilling the start policy", disable=not progress)
    for round_ in range(rounds):
        acting = "teacher" if round_ == 0 else "student"
        observation = env.get_observations()
        env.pop_episodes()
        for _ in range(steps_per_round):
            label = teacher_actions(teacher, observation, env.device)
            actor.update_normalization(observation)
            inputs.append(torch.cat([observation[group] for group in ACTOR_GROUPS], dim=-1))
            labels.append(label)
            if acting == "teacher":
                action = label
            else:
                with torch.no_grad():
                    action = actor(observation)
            observation, *_ = env.step(action)
        successes = env.pop_episodes().successes
        loss = regress(actor, optimizer, torch.cat(inputs), torch.cat(labels), updates_per_round, batch_size)
        rate = float(np.mean(successes)) if successes else float("nan")
        history.append(DistillRound(acting, rate, sum(len(x) for x in labels), loss))
        bar.update(1)
        bar.set_postfix(actor=acting, success=f"{rate:.2f}", loss=f"{loss:.4f}")
    bar.close()
    return history


def teacher_actions(teacher: Policy, observation: TensorDict, device: str) -> torch.Tensor:
    obs, goal = (observation[group].cpu().numpy() for group in ACTOR_GROUPS)
    return torch.as_tensor(np.asarray(teacher(obs, goal), np.float32), device=device)


def regress(
    actor: MLPModel,
    optimizer: torch.optim.Optimizer,
    inputs: torch.Tensor,
    labels: torch.Tensor,
    updates: int,
    batch_size: int,
) -> float:
    """Minibatch MSE of the actor's mean (its MLP on normalized inputs) to the labels; the last loss."""
    generator = torch.Generator(device="cpu").manual_seed(len(inputs))
    loss = torch.zeros(())
    for _ in range(updates):
        rows = torch.randint(len(inputs), (min(batch_size, len(inputs)),), generator=generator)
        rows = rows.to(inputs.device)
        with torch.no_grad():
            normalized = actor.obs_normalizer(inputs[rows])
        mean = actor.distribution.deterministic_output(actor.mlp(normalized))
        loss = torch.nn.functional.mse_loss(mean, labels[rows])
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    return float(loss.detach())
