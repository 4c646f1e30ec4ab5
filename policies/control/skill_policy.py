"""The skill policy interface, its scripted reference and the options a backend is built from."""

from __future__ import annotations

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

    def deployment_differences(self, max_speed: float, control_period_s: float) -> list[str]:
        """How deployment (speed of a full action, control period) differs from what the policy was trained
        at: worth a warning, since learned gains hold at their training values, but not fatal."""
        ...


class ExpertSkillPolicy:
    """The scripted experts of `sim.tabletop`: the reference that learned skills are measured against."""

    name = "expert"

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray:
        return expert_action(subgoal, state)

    def source(self, planner_skill: str) -> str:
        return "expert (scripted)"

    def deployment_differences(self, max_speed: float, control_period_s: float) -> list[str]:
        return []  # scripted: its gains hold at any speed and rate


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
