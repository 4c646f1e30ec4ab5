"""The MuJoCo tabletop world: reset to a task's layout, step with an end-effector velocity command."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import mujoco
import numpy as np

from sim.tabletop.ik import EndEffectorServo, IKConfig, Workspace
from sim.tabletop.layout import Layout
from sim.tabletop.model import (
    ARM_JOINTS,
    BLOCKS,
    EE_SITE,
    FINGER_JOINTS,
    HOME_QPOS,
    MAX_GRIPPER_WIDTH,
    PLATE_SIZE,
    PLATES,
    TABLE_TOP_Z,
    load_model,
)
from sim.tabletop.state import ObjectState, SceneState

if TYPE_CHECKING:
    from sim.tabletop.goal import Task


@dataclass(frozen=True)
class WorldConfig:
    """Timing and limits of the simulated arm."""

    control_dt: float = 0.04
    """Seconds advanced by one step(); a multiple of physics_dt."""
    physics_dt: float = 0.002
    max_speed: float = 0.25
    """Largest end-effector speed (m/s); faster commands are scaled down, keeping their direction."""
    max_target_lead: float = 0.03
    """How far the integrated end-effector target may run ahead of the grip point (m)."""
    workspace: Workspace = field(default_factory=Workspace)
    ik: IKConfig = field(default_factory=IKConfig)

    @property
    def substeps(self) -> int:
        """Physics steps per control step."""
        return round(self.control_dt / self.physics_dt)

    def __post_init__(self) -> None:
        if self.physics_dt <= 0 or self.control_dt < self.physics_dt:
            raise ValueError(f"need 0 < physics_dt <= control_dt, got {self.physics_dt}, {self.control_dt}")
        if abs(self.substeps * self.physics_dt - self.control_dt) > 1e-9:
            raise ValueError(
                f"control_dt {self.control_dt} is not a multiple of physics_dt {self.physics_dt}"
            )


class TabletopWorld:
    """A headless MuJoCo scene driven like a real arm under Cartesian velocity control.

    `model` and `data` are public so that domain randomization can edit them between episodes.
    """

    def __init__(self, config: WorldConfig | None = None) -> None:
        self.config = config or WorldConfig()
        self.model = load_model(self.config.physics_dt)
        self.data = mujoco.MjData(self.model)
        self._arm_qpos = np.array([self.model.joint(j).qposadr[0] for j in ARM_JOINTS])
        self._finger_qpos = np.array([self.model.joint(j).qposadr[0] for j in FINGER_JOINTS])
        self._joint_names = ARM_JOINTS + FINGER_JOINTS
        self._joint_qpos = np.concatenate([self._arm_qpos, self._finger_qpos])
        self._joint_dofs = np.array([self.model.joint(j).dofadr[0] for j in self._joint_names])
        adr = [self.model.joint(f"{b}_joint").qposadr[0] for b in BLOCKS]
        self._block_pose = np.array(adr)[:, None] + np.arange(7)  # rows of (x y z qw qx qy qz) in qpos
        self._block_geom = np.array([self.model.body(b).geomadr[0] for b in BLOCKS])
        self._plate_mocap = np.array([self.model.body(p).mocapid[0] for p in PLATES])
        self._plate_size = _frozen(np.array(PLATE_SIZE))
        self._block_sizes = self._read_block_sizes()
        self._site = self.model.site(EE_SITE).id
        self._gripper_actuator = self.model.actuator("gripper").id
        self._servo = EndEffectorServo(
            self.model,
            EE_SITE,
            ARM_JOINTS,
            np.array(HOME_QPOS),
            self.config.workspace,
            self.config.max_target_lead,
            self.config.ik,
        )
        self._arm_range = np.array([self.model.joint(j).range for j in ARM_JOINTS])
        self.data.qpos[self._arm_qpos] = HOME_QPOS
        mujoco.mj_kinematics(self.model, self.data)
        self._home_rotation = _frozen(self.data.site_xmat[self._site].reshape(3, 3))
        mujoco.mj_resetData(self.model, self.data)
        self._renderer: mujoco.Renderer | None = None
        self._sync()

    def reset(self, task: Task) -> SceneState:
        """Put the arm at home with the gripper open and the blocks and plates where the task says."""
        return self.reset_layout(task.layout)

    def reset_layout(
        self, layout: Layout, grip_start: np.ndarray | None = None, joint_offset: np.ndarray | None = None
    ) -> SceneState:
        """Reset to a layout with the gripper open; the arm at home unless told otherwise.

        grip_start (3,) moves the grip point there by kinematics alone, keeping the home orientation (gripper
        pointing down); joint_offset (7,) is then added to the arm's joints (initial-pose randomization: it
        moves the grip point and tilts the gripper a little, and the servo holds that tilt).
        """
        model, data = self.model, self.data
        mujoco.mj_resetData(model, data)
        data.qpos[self._arm_qpos] = HOME_QPOS
        data.qpos[self._finger_qpos] = MAX_GRIPPER_WIDTH / 2
        if grip_start is not None:
            mujoco.mj_kinematics(model, data)
            mujoco.mj_comPos(model, data)
            self._servo.place(data, np.asarray(grip_start, dtype=np.float64), self._home_rotation)
        if joint_offset is not None:
            arm = data.qpos[self._arm_qpos] + joint_offset
            data.qpos[self._arm_qpos] = np.clip(arm, self._arm_range[:, 0], self._arm_range[:, 1])
        self._block_sizes = self._read_block_sizes()
        for index, name in enumerate(BLOCKS):
            x, y, yaw = layout.blocks[name]
            z = TABLE_TOP_Z + self._block_sizes[index, 2] / 2
            data.qpos[self._block_pose[index]] = (x, y, z, np.cos(yaw / 2), 0.0, 0.0, np.sin(yaw / 2))
        for index, name in enumerate(PLATES):
            x, y = layout.plates[name]
            data.mocap_pos[self._plate_mocap[index]] = (x, y, TABLE_TOP_Z + PLATE_SIZE[2] / 2)
        data.ctrl[: len(ARM_JOINTS)] = data.qpos[self._arm_qpos]
        data.ctrl[self._gripper_actuator] = MAX_GRIPPER_WIDTH
        mujoco.mj_forward(model, data)
        self._servo.reset(data)
        return self.state()

    def step(self, ee_velocity: np.ndarray, gripper_width: float) -> SceneState:
        """Advance control_dt under an end-effector velocity (m/s) and a gripper width target (m).

        The velocity is scaled down to max_speed; the width is clipped to [0, MAX_GRIPPER_WIDTH].
        """
        velocity = np.asarray(ee_velocity, dtype=np.float64)
        if velocity.shape != (3,):
            raise ValueError(f"ee_velocity must have shape (3,), got {velocity.shape}")
        if not (np.all(np.isfinite(velocity)) and np.isfinite(gripper_width)):
            raise ValueError(f"non-finite command: ee_velocity={velocity}, gripper_width={gripper_width}")
        speed = float(np.linalg.norm(velocity))
        if speed > self.config.max_speed:
            velocity = velocity * (self.config.max_speed / speed)
        data = self.data
        data.ctrl[: len(ARM_JOINTS)] = self._servo.command(data, velocity, self.config.control_dt)
        data.ctrl[self._gripper_actuator] = np.clip(gripper_width, 0.0, MAX_GRIPPER_WIDTH)
        mujoco.mj_step(self.model, data, nstep=self.config.substeps)
        self._sync()
        return self.state()

    def state(self) -> SceneState:
        """Snapshot of the current scene."""
        data = self.data
        blocks = _frozen(data.qpos[self._block_pose])
        plate_xyz = _frozen(data.mocap_pos[self._plate_mocap])
        plate_quat = _frozen(data.mocap_quat[self._plate_mocap])
        objects = {
            name: ObjectState(name, "block", blocks[i, :3], blocks[i, 3:], self._block_sizes[i])
            for i, name in enumerate(BLOCKS)
        }
        for i, name in enumerate(PLATES):
            objects[name] = ObjectState(name, "plate", plate_xyz[i], plate_quat[i], self._plate_size)
        quaternion = np.zeros(4)
        mujoco.mju_mat2Quat(quaternion, data.site_xmat[self._site])
        return SceneState(
            ee_position=_frozen(data.site_xpos[self._site]),
            ee_quaternion=_frozen(quaternion),
            gripper_width=float(data.qpos[self._finger_qpos].sum()),
            objects=objects,
            joint_names=self._joint_names,
            joint_positions=_frozen(data.qpos[self._joint_qpos]),
            joint_velocities=_frozen(data.qvel[self._joint_dofs]),
            time=float(data.time),
        )

    def render(self, width: int = 320, height: int = 240, camera: str = "front") -> np.ndarray:
        """An RGB frame (height, width, 3) uint8; needs an OpenGL backend (MUJOCO_GL=egl or osmesa)."""
        if self._renderer is None or (self._renderer.width, self._renderer.height) != (width, height):
            self._close_renderer()
            try:
                self._renderer = mujoco.Renderer(self.model, height=height, width=width)
            except Exception as error:  # mujoco raises several types when no GL context can be made
                raise RuntimeError(
                    "rendering needs an OpenGL context: set MUJOCO_GL=egl (Mesa or a GPU driver) or "
                    f"MUJOCO_GL=osmesa (apt-get install libosmesa6) before mujoco is imported ({error})"
                ) from error
        self._renderer.update_scene(self.data, camera=camera)
        return self._renderer.render()

    def close(self) -> None:
        """Free what the world holds beyond the model: the renderer, if one was made."""
        self._close_renderer()

    def _close_renderer(self) -> None:
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __enter__(self) -> TabletopWorld:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _read_block_sizes(self) -> np.ndarray:
        # Read again at every reset so that randomized geom sizes show in the state.
        return _frozen(2 * self.model.geom_size[self._block_geom])

    def _sync(self) -> None:
        # mj_step leaves positions from before its last integration; refresh kinematics and the
        # quantities the Jacobian needs so that state() and the next IK step see the same instant.
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)


def _frozen(array: np.ndarray) -> np.ndarray:
    copy = np.array(array, dtype=np.float64)
    copy.flags.writeable = False
    return copy
