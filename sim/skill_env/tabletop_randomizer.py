"""Applies an episode's randomization to a tabletop world's MuJoCo model, in place, from nominal values.

Every write starts from the nominal arrays saved at construction, so draws never compound and restoring
the nominal model (scale 1) gives back the compiled values bit for bit.
"""

from __future__ import annotations

import mujoco
import numpy as np

from sim.skill_env.randomization import EpisodeRandomization
from sim.tabletop.model import ARM_JOINTS, BLOCKS, FINGER_JOINTS


class TabletopRandomizer:
    """Scales masses, friction, damping and servo gains of one world's model."""

    def __init__(self, model: mujoco.MjModel) -> None:
        self._model = model
        self._bodies = np.array([model.body(name).id for name in BLOCKS])
        # Both sides of every contact that matters: blocks, the table and the finger pads (and finger boxes).
        fingers = {model.body(name).id for name in ("left_finger", "right_finger")}
        self._geoms = np.array(
            [
                g
                for g in range(model.ngeom)
                if model.geom_bodyid[g] in fingers or model.geom_bodyid[g] in self._bodies
            ]
            + [model.geom("table").id]
        )
        self._dofs = np.array([model.joint(name).dofadr[0] for name in ARM_JOINTS + FINGER_JOINTS])
        self._mass = model.body_mass[self._bodies].copy()
        self._friction = model.geom_friction[self._geoms, 0].copy()
        self._damping = model.dof_damping[self._dofs].copy()
        self._gain = model.actuator_gainprm[:, 0].copy()
        self._bias = model.actuator_biasprm[:, 1].copy()
        self._randomized = False

    def apply(self, data: mujoco.MjData, params: EpisodeRandomization | None) -> None:
        """Set the model for the next episode: randomized by params, or nominal when params is None."""
        if params is None and not self._randomized:
            return
        model = self._model
        mass = 1.0 if params is None else params.object_mass_scale
        friction = 1.0 if params is None else params.friction_scale
        damping = 1.0 if params is None else params.joint_damping_scale
        gain = 1.0 if params is None else params.actuator_gain_scale
        model.body_mass[self._bodies] = self._mass * mass
        model.geom_friction[self._geoms, 0] = self._friction * friction
        model.dof_damping[self._dofs] = self._damping * damping
        # Position servos: force = kp * ctrl - kp * q - kv * qdot, so gain and bias move together.
        model.actuator_gainprm[:, 0] = self._gain * gain
        model.actuator_biasprm[:, 1] = self._bias * gain
        mujoco.mj_setConst(model, data)  # masses enter derived constants (e.g. inverse weights)
        self._randomized = params is not None
