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
FIXED_GRIPPER: Mapping[str, float] = {"push": 1.0, "reach": -1.0}
"""Skills whose gripper command is fixed whatever the policy says: push pushes with closed fingers; reach
moves the grip point with the fingers open, as the expert does (half-closed, they caught a block just placed
and dragged it along to the next one)."""


def skill_action(skill: str, actions: np.ndarray) -> np.ndarray:
    """Actions (..., 4) clipped to [-1, 1] with the skill's fixed gripper command applied (a new array)."""
    result = np.clip(np.asarray(actions, dtype=np.float64), -1.0, 1.0)
    if skill in FIXED_GRIPPER:
        result[..., 3] = FIXED_GRIPPER[skill]
    return result


class ActionChannel:
    """The path from a policy's action to the actuators in one env: noise, the skill's rule, then latency.

    Shared by the backends so that action noise and latency mean the same everywhere. With no noise and no
    latency it is `skill_action` and nothing else.
    """

    def __init__(self, skill: str) -> None:
        self.skill = skill
        self._history = skill_action(skill, HOLD_ACTION)[None]

    def reset(self, latency_steps: int) -> None:
        """Start an episode whose actions act `latency_steps` control steps late (holding still first)."""
        self._history = np.tile(skill_action(self.skill, HOLD_ACTION), (latency_steps + 1, 1))

    def __call__(self, action: np.ndarray, rng: np.random.Generator, noise_std: float) -> np.ndarray:
        """The action the actuators get this step."""
        if noise_std > 0:
            action = action + rng.normal(0.0, noise_std, action.shape)
        action = skill_action(self.skill, action)
        if len(self._history) == 1:
            return action
        self._history = np.roll(self._history, 1, axis=0)
        self._history[0] = action
        return self._history[-1].copy()
