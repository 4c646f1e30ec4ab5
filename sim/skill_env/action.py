"""What a learned skill policy writes: the normalized action, and the per-skill rule applied to it.

The action is the one the scripted experts and the controller use (`sim.tabletop.action_to_command`):
(dx, dy, dz) as a fraction of the world's max_speed and the gripper command (-1 open, +1 closed). A skill
that does not use the gripper has it fixed, in training and in deployment alike, through `skill_action`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

ACTION_LAYOUT: tuple[str, ...] = ("ee_velocity.x", "ee_velocity.y", "ee_velocity.z", "gripper")
HOLD_ACTION = np.array([0.0, 0.0, 0.0, -1.0])
"""Stand still with the gripper open: what a latency buffer holds at the start of an episode."""
FIXED_GRIPPER: Mapping[str, float] = {"push": 1.0}
"""Skills whose gripper command is fixed whatever the policy says (push pushes with closed fingers)."""


def skill_action(skill: str, actions: np.ndarray) -> np.ndarray:
    """Actions (..., 4) clipped to [-1, 1] with the skill's fixed gripper command applied (a new array)."""
    result = np.clip(np.asarray(actions, dtype=np.float64), -1.0, 1.0)
    if skill in FIXED_GRIPPER:
        result[..., 3] = FIXED_GRIPPER[skill]
    return result
