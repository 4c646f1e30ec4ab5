"""Mock arm hardware, as ros2_control's mock components behind a forward controller: integrates the latest
joint command at the arm's rate within joint position and velocity limits, and drops commands older than
a timeout (the arm then stops). A parallel gripper moves towards its width target at a finite speed.

It is kinematic: no dynamics, no contacts. Objects are not moved by the arm.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class FakeArmLimits:
    position: np.ndarray
    """(n, 2) joint ranges."""
    velocity: np.ndarray
    """(n,) joint speed limits (rad/s)."""
    command_timeout_s: float = 0.1
    gripper_speed: float = 0.1
    """Finger opening speed (m/s)."""
    max_gripper_width: float = 0.08


class FakeArm:
    """Joint positions and velocities under velocity or position commands; times are the caller's."""

    def __init__(self, limits: FakeArmLimits, q0: np.ndarray, gripper_width: float) -> None:
        self.limits = limits
        self.reset(q0, gripper_width)

    def reset(self, q0: np.ndarray, gripper_width: float) -> None:
        """Stand still at q0 with the gripper at gripper_width, forgetting any command."""
        self.q = np.array(q0, dtype=float)
        self.qdot = np.zeros_like(self.q)
        self.gripper_width = gripper_width
        self.gripper_velocity = 0.0
        self._gripper_target = gripper_width
        self._command: tuple[str, np.ndarray] | None = None
        self._commanded_at = -np.inf

    def command(self, kind: str, values: np.ndarray, now: float) -> str | None:
        """Take a 'velocity' or 'position' command; returns why it was dropped, or None."""
        values = np.asarray(values, dtype=float)
        if values.shape != self.q.shape:
            return f"{kind} command has {values.size} values for {self.q.size} joints"
        if not np.all(np.isfinite(values)):
            return f"non-finite {kind} command"
        self._command, self._commanded_at = (kind, values), now
        return None

    def command_gripper(self, width: float) -> str | None:
        if not np.isfinite(width):
            return "non-finite gripper width"
        self._gripper_target = float(np.clip(width, 0.0, self.limits.max_gripper_width))
        return None

    def stale(self, now: float) -> bool:
        return now - self._commanded_at > self.limits.command_timeout_s

    def step(self, dt: float, now: float) -> None:
        """Advance dt seconds: move under the latest fresh command, or stop when it is stale."""
        lo, hi = self.limits.position[:, 0], self.limits.position[:, 1]
        vmax = self.limits.velocity
        if self._command is None or self.stale(now):
            target = self.q
        elif self._command[0] == "velocity":
            target = self.q + np.clip(self._command[1], -vmax, vmax) * dt
        else:
            target = self.q + np.clip(self._command[1] - self.q, -vmax * dt, vmax * dt)
        new_q = np.clip(target, lo, hi)
        self.qdot = (new_q - self.q) / dt
        self.q = new_q
        error = self._gripper_target - self.gripper_width
        step = float(np.clip(error, -self.limits.gripper_speed * dt, self.limits.gripper_speed * dt))
        self.gripper_width += step
        self.gripper_velocity = step / dt
