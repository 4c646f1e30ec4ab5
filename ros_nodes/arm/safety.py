"""The bridge's safety layer: every command passes here, whatever the policy upstream did.

Limits clip (velocity, workspace box, joint velocity and position); invalid commands are refused (held
still); commands older than a timeout stop the arm (MoveIt Servo's `incoming_command_timeout`, 0.1 s by
default); an emergency stop latches until an explicit reset, which is refused while the stop is still
asserted (as a hardware e-stop must be released before it can be reset).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class SafetyLimits:
    """What the bridge lets through (metres, seconds, radians; world frame of the arm's base)."""

    workspace_low: tuple[float, float, float] = (0.25, -0.45, 0.015)
    workspace_high: tuple[float, float, float] = (0.75, 0.45, 0.55)
    max_linear_speed: float = 0.25
    """End-effector speed limit (m/s); faster twists are scaled down, keeping their direction."""
    max_angular_speed: float = 0.5
    """End-effector angular speed limit (rad/s)."""
    command_timeout_s: float = 0.1
    """Stop when the last valid command is older than this."""
    workspace_lookahead_s: float = 0.3
    """Near a face of the box, slow so that the end effector would reach it no sooner than this. It must
    exceed the loop's latency (joint state age plus how long the arm keeps applying a command), or the
    end effector overshoots the face: at 0.1 s it did by 2 cm on a loaded 2-core machine."""
    max_gripper_width: float = 0.08

    def __post_init__(self) -> None:
        low, high = np.array(self.workspace_low), np.array(self.workspace_high)
        if low.shape != (3,) or high.shape != (3,) or not np.all(low < high):
            raise ValueError(
                f"workspace box needs 3 lows below 3 highs, got {self.workspace_low}, {self.workspace_high}"
            )
        for name in (
            "max_linear_speed",
            "max_angular_speed",
            "command_timeout_s",
            "workspace_lookahead_s",
            "max_gripper_width",
        ):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")


def scale_to_norm(vector: np.ndarray, limit: float) -> np.ndarray:
    """`vector` scaled down (never up) so that its norm is at most `limit`, keeping its direction."""
    norm = float(np.linalg.norm(vector))
    return vector * (limit / norm) if norm > limit else vector


def clip_linear(linear: np.ndarray, ee_position: np.ndarray, limits: SafetyLimits) -> np.ndarray:
    """The twist's linear part after the speed limit and the workspace box.

    Per axis, motion towards a face is limited to (distance to the face) / lookahead, so the end effector
    slows down to a stop at the box; outside the box, only motion back towards it is allowed. Nothing here
    ever creates motion that was not commanded.
    """
    v = scale_to_norm(np.asarray(linear, dtype=float), limits.max_linear_speed)
    p = np.asarray(ee_position, dtype=float)
    t = limits.workspace_lookahead_s
    upper = np.maximum((np.array(limits.workspace_high) - p) / t, 0.0)
    lower = np.minimum((np.array(limits.workspace_low) - p) / t, 0.0)
    return np.clip(v, lower, upper)


def clip_joint_velocity(qdot: np.ndarray, max_velocity: np.ndarray) -> np.ndarray:
    """Joint velocities scaled down together so that none exceeds its limit (the direction is kept)."""
    ratio = float(np.max(np.abs(qdot) / max_velocity)) if len(qdot) else 0.0
    return qdot / ratio if ratio > 1.0 else qdot


def joint_position_command(
    q: np.ndarray, qdot: np.ndarray, dt: float, position_limits: np.ndarray
) -> np.ndarray:
    """The next position command for a position interface: q + qdot dt inside the joints' range."""
    return np.clip(q + qdot * dt, position_limits[:, 0], position_limits[:, 1])


class Halt(enum.Enum):
    """Why the arm is held still (None of these: a fresh, valid command is moving it)."""

    NO_COMMAND = "no command yet"
    STALE = "command timed out"
    REFUSED = "last command refused"
    ESTOP = "emergency stop latched"


@dataclass(frozen=True)
class Twist:
    linear: np.ndarray
    angular: np.ndarray

    @staticmethod
    def zero() -> Twist:
        return Twist(np.zeros(3), np.zeros(3))


class CommandGate:
    """The state the safety layer keeps between commands: the latest valid twist and the e-stop latch.

    Times are monotonic seconds given by the caller, so that the logic is tested without a clock.
    """

    def __init__(self, limits: SafetyLimits) -> None:
        self.limits = limits
        self._twist = Twist.zero()
        self._received = -np.inf
        self._refused = False
        self.estop_latched = False
        self.estop_asserted = False

    def offer(
        self, linear: np.ndarray, angular: np.ndarray, now: float, stamp_problem: str | None = None
    ) -> str | None:
        """Take a new twist; returns why it was refused (the arm then holds still), or None.

        `stamp_problem`: why its header stamp disqualifies it (`ros_nodes.stamps.stamp_problem`), if it does.
        """
        linear, angular = np.asarray(linear, dtype=float), np.asarray(angular, dtype=float)
        reason = None
        if not (np.all(np.isfinite(linear)) and np.all(np.isfinite(angular))):
            reason = f"non-finite twist {linear.tolist()} / {angular.tolist()}"
        elif stamp_problem:
            reason = f"twist {stamp_problem}"
        self._received, self._refused = now, reason is not None
        self._twist = Twist.zero() if reason else Twist(linear, angular)
        return reason

    def check_gripper(self, width: float) -> str | None:
        """Why a gripper width is refused, or None."""
        if not (np.isfinite(width) and 0.0 <= width <= self.limits.max_gripper_width):
            return f"gripper width {width} outside [0, {self.limits.max_gripper_width}] m"
        return None

    def halt(self, now: float) -> Halt | None:
        """Why the arm must be still now, or None when the latest twist may move it."""
        if self.estop_latched:
            return Halt.ESTOP
        if self._received == -np.inf:
            return Halt.NO_COMMAND
        if self._refused:
            return Halt.REFUSED
        if now - self._received > self.limits.command_timeout_s:
            return Halt.STALE
        return None

    def twist(self, now: float, ee_position: np.ndarray) -> Twist:
        """The twist to send now: the latest one clipped to the limits, or zero when halted."""
        if self.halt(now) is not None:
            return Twist.zero()
        linear = clip_linear(self._twist.linear, ee_position, self.limits)
        return Twist(linear, scale_to_norm(self._twist.angular, self.limits.max_angular_speed))

    def estop(self, asserted: bool) -> bool:
        """The e-stop input changed; returns True when this latched the stop. Releasing does not reset."""
        self.estop_asserted = asserted
        newly = asserted and not self.estop_latched
        if asserted:
            self.estop_latched = True
            self._twist = Twist.zero()
        return newly

    def reset_estop(self) -> tuple[bool, str]:
        """Clear the latch unless the e-stop is still asserted; (success, message)."""
        if not self.estop_latched:
            return True, "emergency stop was not latched"
        if self.estop_asserted:
            return False, "emergency stop still asserted: release it (publish false) before resetting"
        self.estop_latched = False
        self._received = -np.inf  # a command sent before the stop must not resume motion
        return True, "emergency stop reset; waiting for a new command"
