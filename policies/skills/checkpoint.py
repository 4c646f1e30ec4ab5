"""The actor checkpoint: what a trainer writes and `hgpo export-onnx` reads.

A checkpoint is a `torch.save`d dict holding at least

    "actor_config": dict   # ActorConfig fields
    "actor_state":  dict   # GoalConditionedActor.state_dict(), normalizer statistics included
    "policy_info":  dict   # PolicyInfo fields: what the policy was trained on

Other keys (critic, optimizers, step counters) may sit beside them: a trainer's full checkpoint is
exportable as it is. `save_actor` writes exactly these keys; trainers that write their own dict call
`actor_checkpoint_entries` and merge.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from policies.skills.networks import ActorConfig, GoalConditionedActor
from sim.skill_env.observation import OBSERVATION_VERSION

Layout = tuple[tuple[str, int], ...]
"""A named vector layout: (name, length) of each consecutive slice, e.g. (("ee_position", 3), ...)."""


class CheckpointError(ValueError):
    """A checkpoint that is missing, unreadable or lacks what an actor needs."""


def as_layout(pairs: Any) -> Layout:
    """A layout from any sequence of (name, length) pairs (JSON and YAML give lists)."""
    layout = tuple((str(name), int(size)) for name, size in pairs)
    if any(size < 1 for _, size in layout) or len({name for name, _ in layout}) != len(layout):
        raise ValueError(f"a layout needs unique names and positive lengths, got {layout}")
    return layout


def layout_dim(layout: Layout) -> int:
    return sum(size for _, size in layout)


@dataclass(frozen=True)
class PolicyInfo:
    """What a policy was trained on; exported into the ONNX file's metadata and checked at deployment."""

    skills: tuple[str, ...]
    """The skills this policy executes (names of `sim.tabletop.SKILLS`)."""
    obs_layout: Layout
    """The observation vector's named slices, as the env's observation builder lays them out."""
    goal_layout: Layout
    """The desired-goal vector's named slices."""
    action_scale: float
    """End-effector speed (m/s) of a full action during training (`max_linear_speed` at deployment)."""
    control_period_s: float
    """Seconds between two actions during training."""
    run_id: str
    """The training run that produced it (its run folder's name)."""
    observation_version: int = OBSERVATION_VERSION
    """`sim.skill_env.OBSERVATION_VERSION` when it was trained: what `observe` computed then."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "skills", tuple(str(s) for s in self.skills))
        object.__setattr__(self, "obs_layout", as_layout(self.obs_layout))
        object.__setattr__(self, "goal_layout", as_layout(self.goal_layout))
        if not self.skills:
            raise ValueError("a policy must name at least one skill")
        if not (self.action_scale > 0 and self.control_period_s > 0):
            raise ValueError(f"action_scale and control_period_s must be positive, got {self}")


def actor_checkpoint_entries(actor: GoalConditionedActor, info: PolicyInfo) -> dict[str, Any]:
    """The three entries `load_actor` reads, to merge into a trainer's own checkpoint dict."""
    if (layout_dim(info.obs_layout), layout_dim(info.goal_layout)) != (
        actor.config.obs_dim,
        actor.config.goal_dim,
    ):
        raise ValueError(
            f"layouts of {layout_dim(info.obs_layout)} + {layout_dim(info.goal_layout)} values do not fit "
            f"an actor of obs_dim {actor.config.obs_dim}, goal_dim {actor.config.goal_dim}"
        )
    return {
        "actor_config": asdict(actor.config),
        "actor_state": actor.state_dict(),
        "policy_info": asdict(info),
    }


def save_actor(path: str | os.PathLike[str], actor: GoalConditionedActor, info: PolicyInfo) -> None:
    """Write an actor-only checkpoint atomically (temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(actor_checkpoint_entries(actor, info), tmp)
    tmp.replace(path)


def load_actor(checkpoint: str | os.PathLike[str]) -> tuple[GoalConditionedActor, PolicyInfo]:
    """Rebuild the actor (in eval mode, on the CPU) and its PolicyInfo; CheckpointError says what is wrong."""
    path = Path(checkpoint)
    data = read_checkpoint(path, "expected a file written by hgpo train-skills")
    return actor_from_entries(data, str(path))


def read_checkpoint(path: Path, missing_hint: str) -> Any:
    """torch.load on the CPU (weights only) with one CheckpointError for a missing or unreadable file."""
    if not path.is_file():
        raise CheckpointError(f"checkpoint {path} does not exist ({missing_hint})")
    try:
        return torch.load(path, map_location="cpu", weights_only=True)
    except Exception as err:  # torch raises many types for truncated or foreign files
        raise CheckpointError(f"checkpoint {path} is not a readable torch file: {err}") from err


def actor_from_entries(data: Any, source: str) -> tuple[GoalConditionedActor, PolicyInfo]:
    """The actor and PolicyInfo from a checkpoint dict already in memory (`source` names it in errors)."""
    needed = ("actor_config", "actor_state", "policy_info")
    missing = [key for key in needed if not isinstance(data, Mapping) or key not in data]
    if missing:
        raise CheckpointError(
            f"{source} is not a skill actor checkpoint: missing {', '.join(missing)} "
            "(save one with policies.skills.checkpoint.save_actor)"
        )
    try:
        config = ActorConfig(**data["actor_config"])
        info = PolicyInfo(**data["policy_info"])
        actor = GoalConditionedActor(config)
        actor.load_state_dict(data["actor_state"])
    except (TypeError, ValueError, RuntimeError) as err:
        raise CheckpointError(f"{source}: inconsistent actor checkpoint: {err}") from err
    return actor.eval(), info
