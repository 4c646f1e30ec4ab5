"""Skill policy backends behind one interface, selected by exact name."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import numpy as np

from sim.tabletop import SceneState, Subgoal, expert_action


class SkillPolicy(Protocol):
    """π(a | s, g): a normalized action in [-1, 1]^4 (end-effector velocity fraction, gripper)."""

    name: str

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray: ...


class ExpertSkillPolicy:
    """The scripted experts of `sim.tabletop`: the reference that learned skills are measured against."""

    name = "expert"

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray:
        return expert_action(subgoal, state)


SKILL_POLICIES: dict[str, Callable[[], SkillPolicy]] = {"expert": ExpertSkillPolicy}


def make_skill_policy(name: str) -> SkillPolicy:
    if name not in SKILL_POLICIES:
        raise ValueError(f"unknown skill policy {name!r}; known: {', '.join(sorted(SKILL_POLICIES))}")
    return SKILL_POLICIES[name]()
