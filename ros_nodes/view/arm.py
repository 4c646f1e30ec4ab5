"""The arm's visible shapes from the MuJoCo model of the tabletop, posed at a joint state by forward
kinematics, as one Foxglove entity: the same model the simulator steps, so the view cannot drift from it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import mujoco
import numpy as np
from foxglove.messages import (
    Color,
    CubePrimitive,
    CylinderPrimitive,
    SceneEntity,
    SpherePrimitive,
    Timestamp,
    Vector3,
)

from ros_nodes.view.scene import FRAME, pose
from sim.tabletop.model import ARM_JOINTS, FINGER_JOINTS, HOME_QPOS, build_mjcf

ARM_ROOT = "link0"  # the arm's base body; every arm body hangs below it


class ArmGeometry:
    """Forward kinematics of the arm's geoms; `entity(joint positions)` gives them as primitives."""

    def __init__(self) -> None:
        self.model = mujoco.MjModel.from_xml_string(build_mjcf())
        self.data = mujoco.MjData(self.model)
        root = self.model.body(ARM_ROOT).id
        shapes = (
            mujoco.mjtGeom.mjGEOM_CAPSULE,
            mujoco.mjtGeom.mjGEOM_CYLINDER,
            mujoco.mjtGeom.mjGEOM_BOX,
            mujoco.mjtGeom.mjGEOM_SPHERE,
        )
        self.geoms = [
            g
            for g in range(self.model.ngeom)
            if self.model.body_rootid[self.model.geom_bodyid[g]] == root
            and self.model.geom_type[g] in shapes
            and self.model.geom_rgba[g][3] > 0
        ]
        self._qpos = {name: int(self.model.joint(name).qposadr[0]) for name in ARM_JOINTS + FINGER_JOINTS}
        for name, value in zip(ARM_JOINTS, HOME_QPOS, strict=True):
            self.data.qpos[self._qpos[name]] = value

    def entity(self, positions: Mapping[str, float], stamp: Timestamp) -> SceneEntity:
        """The arm at `positions` (joint name -> position; joints not named keep their last value)."""
        for name, value in positions.items():
            if name in self._qpos:
                self.data.qpos[self._qpos[name]] = value
        mujoco.mj_kinematics(self.model, self.data)
        cubes, cylinders, spheres = [], [], []
        quat = np.zeros(4)
        for g in self.geoms:
            mujoco.mju_mat2Quat(quat, self.data.geom_xmat[g])
            at = pose(self.data.geom_xpos[g], (quat[1], quat[2], quat[3], quat[0]))
            r, g_, b, a = (float(c) for c in self.model.geom_rgba[g])
            colour = Color(r=r, g=g_, b=b, a=a)
            size = self.model.geom_size[g]
            kind = self.model.geom_type[g]
            if kind == mujoco.mjtGeom.mjGEOM_BOX:
                cubes.append(CubePrimitive(pose=at, size=_vector(2 * size), color=colour))
            elif kind == mujoco.mjtGeom.mjGEOM_SPHERE:
                spheres.append(SpherePrimitive(pose=at, size=_vector([2 * size[0]] * 3), color=colour))
            else:  # a capsule drawn as the cylinder around it (its caps' length included)
                caps = 2 * size[0] if kind == mujoco.mjtGeom.mjGEOM_CAPSULE else 0.0
                extent = [2 * size[0], 2 * size[0], 2 * size[1] + caps]
                cylinders.append(
                    CylinderPrimitive(
                        pose=at, size=_vector(extent), bottom_scale=1.0, top_scale=1.0, color=colour
                    )
                )
        return SceneEntity(
            timestamp=stamp, frame_id=FRAME, id="arm", cubes=cubes, cylinders=cylinders, spheres=spheres
        )

    def geom_positions(self) -> np.ndarray:
        """World positions of the drawn geoms at the last `entity` call (for tests)."""
        return self.data.geom_xpos[self.geoms].copy()


def _vector(values: Sequence[float] | np.ndarray) -> Vector3:
    x, y, z = (float(v) for v in values)
    return Vector3(x=x, y=y, z=z)
