"""Skill policy backends behind one interface, selected by exact name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from sim.tabletop import SceneState, Subgoal, expert_action


class SkillPolicy(Protocol):
    """π(a | s, g): a normalized action in [-1, 1]^4 (end-effector velocity fraction, gripper)."""

    name: str

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray: ...

    def source(self, planner_skill: str) -> str:
        """What executes a planner skill, for logs and run configs."""
        ...


class ExpertSkillPolicy:
    """The scripted experts of `sim.tabletop`: the reference that learned skills are measured against."""

    name = "expert"

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray:
        return expert_action(subgoal, state)

    def source(self, planner_skill: str) -> str:
        return "expert (scripted)"


GOAL_HORIZON_M = 0.12
"""Waypoint distance of the onnx backend: inside the training goals' range (reach: up to 15 cm per axis)."""


@dataclass(frozen=True)
class SkillPolicyConfig:
    """What a backend needs beyond its name (the expert needs nothing)."""

    model_dir: Path | None = None
    """Folder of `<skill>/policy.onnx` files for `onnx`; None: the shipped pretrained policies."""
    fallback: str = "expert"
    """Backend for skills without a policy file under `onnx`; "none": their subgoals fail."""
    goal_horizon_m: float = GOAL_HORIZON_M
    """`onnx`: a goal farther than this is fed as a waypoint this far towards it (0: the goal itself)."""


def _onnx(config: SkillPolicyConfig) -> SkillPolicy:
    from policies.control.onnx_skill_policy import SHIPPED_MODEL_DIR, OnnxSkillPolicy  # onnxruntime: on use

    fallback = None if config.fallback == "none" else make_skill_policy(config.fallback)
    if isinstance(fallback, OnnxSkillPolicy):
        raise ValueError("the fallback of the onnx skill policy cannot be onnx itself")
    return OnnxSkillPolicy(config.model_dir or SHIPPED_MODEL_DIR, fallback, config.goal_horizon_m)


SKILL_POLICIES: dict[str, Callable[[SkillPolicyConfig], SkillPolicy]] = {
    "expert": lambda _config: ExpertSkillPolicy(),
    "onnx": _onnx,
}


def make_skill_policy(name: str, config: SkillPolicyConfig | None = None) -> SkillPolicy:
    """The backend called `name`; ValueError listing the known ones, PolicyFileError for a bad policy file."""
    if name not in SKILL_POLICIES:
        raise ValueError(f"unknown skill policy {name!r}; known: {', '.join(sorted(SKILL_POLICIES))}")
    return SKILL_POLICIES[name](config or SkillPolicyConfig())
