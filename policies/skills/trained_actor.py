"""Any trained skill checkpoint as one deployable module (obs, goal) -> action in [-1, 1].

SAC actor checkpoints (`algorithm: sac` runs) and rsl-rl-lib PPO checkpoints (`algorithm: ppo` runs) alike,
so that export and evaluation take either.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import torch
from torch import nn

from policies.skills.checkpoint import CheckpointError, PolicyInfo, actor_from_entries, read_checkpoint

if TYPE_CHECKING:
    from policies.skills.config import TrainConfig

PPO_ENTRIES = ("train_config", "policy_info")
"""What a PPO run saves among rsl-rl's `infos`, beside the weights, to be rebuilt without its run folder."""


class TrainedActor(Protocol):
    """The deterministic policy of a checkpoint and the input statistics it learned."""

    def __call__(self, obs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor: ...

    def eval(self) -> Any: ...

    def input_statistics(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(obs mean, obs std, goal mean, goal std) of the inputs it saw in training."""
        ...


class PpoActor(nn.Module):
    """rsl-rl's deterministic policy (its observation normalizer, MLP and the Gaussian's mean) on (obs, goal),
    clipped to the action range as the training env clipped its actions."""

    def __init__(self, policy: Any, obs_dim: int) -> None:
        super().__init__()
        self.model = policy.as_jit()  # rsl-rl's own export copy: normalizer, MLP, deterministic output
        self.obs_dim = obs_dim

    def forward(self, obs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        # The runner's obs_groups feed the policy [observation, desired_goal] in that order.
        return self.model(torch.cat([obs, goal], dim=-1)).clamp(-1.0, 1.0)

    def input_statistics(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        normalizer = self.model.obs_normalizer
        if not hasattr(normalizer, "_mean"):  # obs_normalization: false leaves an identity
            dim = self.model.mlp[0].in_features
            mean, std = torch.zeros(dim), torch.ones(dim)
        else:
            mean, std = normalizer._mean[0], normalizer._std[0]
        return mean[: self.obs_dim], std[: self.obs_dim], mean[self.obs_dim :], std[self.obs_dim :]


def ppo_actor_from_entries(data: Mapping[str, Any], source: str) -> tuple[PpoActor, PolicyInfo]:
    """Rebuild rsl-rl's runner from the run's own config (one env of its backend) and load the weights."""
    from rsl_rl.runners import OnPolicyRunner

    from policies.skills.config import config_from_dict
    from policies.skills.environments import make_env
    from policies.skills.rsl_rl_env import RslRlGoalEnv

    infos = data["infos"]
    missing = [key for key in PPO_ENTRIES if key not in infos]
    if missing:
        raise CheckpointError(
            f"{source} is a PPO checkpoint without {', '.join(missing)} (written before they were saved): "
            "resume its run with hgpo train-skills --resume RUN to save it again"
        )
    try:
        config = config_from_dict(dict(infos["train_config"]), f"{source}: train_config")
        info = PolicyInfo(**infos["policy_info"])
    except (TypeError, ValueError) as err:
        raise CheckpointError(f"{source}: inconsistent PPO checkpoint: {err}") from err
    env = make_env(_shape_twin(config), 1, config.seed)
    try:
        with contextlib.redirect_stdout(io.StringIO()):  # rsl-rl prints its model on construction
            runner = OnPolicyRunner(RslRlGoalEnv(env, config.ppo.reward), config.ppo.rsl_rl_train_cfg(), None)
        runner.alg.load(dict(data), {"actor": True}, strict=True)
    except (KeyError, RuntimeError) as err:
        raise CheckpointError(f"{source}: PPO weights do not fit the run's config: {err}") from err
    finally:
        env.close()
    obs_dim = sum(size for _, size in info.obs_layout)
    return PpoActor(runner.get_inference_policy("cpu"), obs_dim).eval(), info


SHAPE_TWINS = {"mjx": "mujoco", "isaacgym": "mujoco"}
"""Backends whose envs have the `mujoco` backend's skills and layouts: rebuilding an actor needs only the
shapes, so one CPU env of the twin stands in (no JAX compile, no GPU simulator to start)."""


def _shape_twin(config: TrainConfig) -> TrainConfig:
    twin = SHAPE_TWINS.get(config.backend)
    return config if twin is None else dataclasses.replace(config, backend=twin, env_options={})


def is_ppo_checkpoint(data: Any) -> bool:
    """rsl-rl's layout (`actor_state_dict`, `infos`), as PPO runs save it."""
    return isinstance(data, Mapping) and "actor_state_dict" in data and isinstance(data.get("infos"), Mapping)


def load_trained_actor(checkpoint: str | os.PathLike[str]) -> tuple[TrainedActor, PolicyInfo]:
    """The actor of any train-skills checkpoint (in eval mode, on the CPU) and what it was trained on."""
    path = Path(checkpoint)
    data = read_checkpoint(path, "expected a file written by hgpo train-skills")
    if is_ppo_checkpoint(data):
        return ppo_actor_from_entries(data, str(path))
    return actor_from_entries(data, str(path))
