"""A trained policy from a file, as a batched numpy function: a checkpoint (.pt) or an ONNX file (.onnx)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from policies.skills.checkpoint import PolicyInfo
from policies.skills.environments import policy_info
from policies.skills.evaluation import Policy
from policies.skills.trained_actor import load_trained_actor
from sim.skill_env.contract import GoalVecEnv


def load_policy(path: Path) -> tuple[Policy, PolicyInfo]:
    """(deterministic batched policy, what it was trained on); CheckpointError or ValueError if unusable."""
    if path.suffix == ".onnx":
        from policies.skills.onnx_policy import OnnxPolicy

        onnx = OnnxPolicy(path)
        return onnx.act_batch, onnx.info
    actor, info = load_trained_actor(path)

    def policy(obs: np.ndarray, goal: np.ndarray) -> np.ndarray:
        with torch.no_grad():
            return actor(torch.from_numpy(obs), torch.from_numpy(goal)).numpy()

    return policy, info


def check_layouts(info: PolicyInfo, env: GoalVecEnv, source: str) -> None:
    """ValueError naming the difference when the policy's inputs are not what the env computes."""
    expected = policy_info(env, info.run_id)
    for name, ours, theirs in (
        ("observation", info.obs_layout, expected.obs_layout),
        ("goal", info.goal_layout, expected.goal_layout),
    ):
        if ours != theirs:
            raise ValueError(
                f"{source} was trained on the {name} layout {[n for n, _ in ours]}, but the {env.backend} "
                f"{env.skill} env computes {[n for n, _ in theirs]}"
            )
