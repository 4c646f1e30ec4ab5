"""Cartesian velocity servo for the arm: differential inverse kinematics on the grip site.

This is what MoveIt Servo does on a real arm: a twist command is integrated into an end-effector
target, and a damped-least-squares step on the Jacobian turns the pose error into joint position
commands for the joint controllers. Here the orientation is held top-down with a fixed yaw and the
redundant degree of freedom is pulled towards the home posture in the Jacobian's null space.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np


@dataclass(frozen=True)
class IKConfig:
    """Gains of the differential IK step."""

    damping: float = 0.05
    """Damped-least-squares lambda: trades tracking accuracy for bounded steps near singularities."""
    nullspace_gain: float = 0.1
    """Fraction of the home-posture error corrected per step inside the null space."""
    max_joint_step: float = 0.2
    """Largest joint position change commanded in one step (rad)."""


@dataclass(frozen=True)
class Workspace:
    """Axis-aligned box the end-effector target is kept inside (m, world frame)."""

    low: tuple[float, float, float] = (0.25, -0.45, 0.015)
    high: tuple[float, float, float] = (0.75, 0.45, 0.55)


class EndEffectorServo:
    """Integrates a velocity command into an end-effector target and solves joint targets for it."""

    def __init__(
        self,
        model: mujoco.MjModel,
        site: str,
        joints: tuple[str, ...],
        home: np.ndarray,
        workspace: Workspace,
        max_lead: float,
        config: IKConfig,
    ) -> None:
        self._model = model
        self._site = model.site(site).id
        self._qpos = np.array([model.joint(j).qposadr[0] for j in joints])
        self._dofs = np.array([model.joint(j).dofadr[0] for j in joints])
        self._range = np.array([model.joint(j).range for j in joints])
        self._home = np.asarray(home, dtype=np.float64)
        self._low = np.asarray(workspace.low)
        self._high = np.asarray(workspace.high)
        self._max_lead = max_lead
        self._config = config
        self._damping = config.damping**2 * np.eye(6)
        self._solution = np.zeros(6)
        self._jacp = np.zeros((3, model.nv))
        self._jacr = np.zeros((3, model.nv))
        self._target = np.zeros(3)
        self._rotation = np.eye(3)

    def reset(self, data: mujoco.MjData) -> None:
        """Hold the current pose: target = site position, orientation = site orientation."""
        self._target = data.site_xpos[self._site].copy()
        self._rotation = data.site_xmat[self._site].reshape(3, 3).copy()

    def command(self, data: mujoco.MjData, velocity: np.ndarray, dt: float) -> np.ndarray:
        """Advance the target by velocity * dt and return joint position targets reaching it.

        The target stays inside the workspace and within max_lead of the actual grip point, so a
        blocked arm does not wind up a large error that it would release later.
        """
        position = data.site_xpos[self._site]
        target = np.clip(self._target + velocity * dt, self._low, self._high)
        lead = target - position
        distance = float(np.linalg.norm(lead))
        if distance > self._max_lead:
            target = position + lead * (self._max_lead / distance)
        self._target = target
        return self._joint_targets(data, target, self._rotation)

    def place(
        self,
        data: mujoco.MjData,
        target: np.ndarray,
        rotation: np.ndarray,
        iterations: int = 60,
        tolerance: float = 0.002,
    ) -> None:
        """Set the arm's joints, by kinematics alone (no physics), so the site sits at target with rotation.

        For starting an episode somewhere other than home; the null-space pull keeps the posture near home.
        Stops within `tolerance` (m): damped least squares leaves about a millimetre anyway.
        """
        for _ in range(iterations):
            data.qpos[self._qpos] = self._joint_targets(data, target, rotation)
            mujoco.mj_kinematics(self._model, data)
            mujoco.mj_comPos(self._model, data)
            if np.linalg.norm(data.site_xpos[self._site] - target) < tolerance:
                break

    def _joint_targets(self, data: mujoco.MjData, target: np.ndarray, rotation: np.ndarray) -> np.ndarray:
        """One damped-least-squares step from the current joints towards (target, rotation)."""
        position = data.site_xpos[self._site]
        error = np.empty(6)
        error[:3] = target - position
        error[3:] = orientation_error(rotation, data.site_xmat[self._site].reshape(3, 3))

        mujoco.mj_jacSite(self._model, data, self._jacp, self._jacr, self._site)
        jac = np.vstack([self._jacp[:, self._dofs], self._jacr[:, self._dofs]])
        q = data.qpos[self._qpos]
        secondary = self._config.nullspace_gain * (self._home - q)
        step = damped_least_squares(jac, error, secondary, self._damping, self._solution)
        step = np.clip(step, -self._config.max_joint_step, self._config.max_joint_step)
        return np.clip(q + step, self._range[:, 0], self._range[:, 1])


def orientation_error(desired: np.ndarray, current: np.ndarray) -> np.ndarray:
    """Small-angle rotation vector from `current` to `desired` (3x3 rotation matrices): half the sum over
    axes of (current axis x desired axis), read off R_d R^T."""
    m = desired @ current.T
    return np.array([0.5 * (m[2, 1] - m[1, 2]), 0.5 * (m[0, 2] - m[2, 0]), 0.5 * (m[1, 0] - m[0, 1])])


def damped_least_squares(
    jac: np.ndarray, task: np.ndarray, secondary: np.ndarray, damping: np.ndarray, solution: np.ndarray
) -> np.ndarray:
    """Joint motion for a 6-D task with a secondary joint motion z kept to the Jacobian's null space.

    step = J^T (J J^T + l^2 I)^-1 task + (I - J^T (J J^T + l^2 I)^-1 J) z
         = z + J^T (J J^T + l^2 I)^-1 (task - J z),  one 6x6 solve (MuJoCo's Cholesky, no LAPACK).
    `damping` is l^2 I; `solution` is a (6,) scratch array.
    """
    normal = jac @ jac.T + damping
    mujoco.mju_cholFactor(normal, 0.0)
    mujoco.mju_cholSolve(solution, normal, task - jac @ secondary)
    return secondary + jac.T @ solution
