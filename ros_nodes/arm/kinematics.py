"""The arm's kinematics from its model: MuJoCo on the tabletop MJCF by default, or on a URDF or MJCF file.

MuJoCo reads URDF itself, so one code path serves both descriptions (no second kinematics library). Only
the kinematic tree matters here: a URDF's meshes are dropped before parsing (their files are usually
`package://` paths that do not exist outside the robot's workspace) and massless links get a token mass.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import mujoco
import numpy as np

from sim.tabletop.ik import damped_least_squares, orientation_error
from sim.tabletop.model import ARM_JOINTS, EE_SITE, FINGER_JOINTS, HOME_QPOS, build_mjcf

EE_SITE_ADDED = "hgpo_ee"
# Keep fixed links as bodies (a URDF's tool frame is one) and give mesh-less links a valid inertia.
_URDF_COMPILER = '<compiler fusestatic="false" discardvisual="true" boundmass="0.001" boundinertia="1e-6"/>'


class JointStateMismatchError(ValueError):
    """A joint state does not name the joints of the arm's model; the message lists both."""


@dataclass(frozen=True)
class ArmDescription:
    """Which model, which joints and which frame: the arm's parameters in `arm_bridge.yaml`."""

    robot_description: str = ""
    """Path of a URDF or MJCF file; empty: the tabletop arm of sim/tabletop/model.py."""
    arm_joints: tuple[str, ...] = ARM_JOINTS
    """Commanded joints, in the order of the joint command arrays."""
    gripper_joints: tuple[str, ...] = FINGER_JOINTS
    """Finger joints whose positions add up to the gripper width; empty: the width is not measured."""
    ee_frame: str = EE_SITE
    """Site or body of the end effector (the grip point)."""
    ee_offset: tuple[float, float, float] = (0.0, 0.0, 0.0)
    """Offset of the grip point in the ee_frame body (when ee_frame names a body)."""
    home: tuple[float, ...] = HOME_QPOS
    """Posture the redundant degrees of freedom are pulled towards (rad)."""


def _urdf_for_kinematics(text: str) -> str:
    root = ET.fromstring(text)
    if root.tag != "robot":
        raise ValueError(f"expected a URDF <robot> root element, got <{root.tag}>")
    for link in root.iter("link"):
        for tag in ("visual", "collision"):
            for element in link.findall(tag):
                link.remove(element)
    for old in root.findall("mujoco"):
        root.remove(old)
    extension = ET.SubElement(root, "mujoco")
    extension.append(ET.fromstring(_URDF_COMPILER))
    return ET.tostring(root, encoding="unicode")


def load_spec(robot_description: str) -> mujoco.MjSpec:
    """The model as an editable MjSpec: the tabletop scene, or a URDF / MJCF file."""
    if not robot_description:
        return mujoco.MjSpec.from_string(build_mjcf())
    path = Path(robot_description)
    try:
        text = path.read_text()
    except OSError as error:
        raise ValueError(f"robot_description {path}: cannot read it ({error.strerror})") from None
    try:
        if path.suffix.lower() == ".urdf" or "<robot" in text[:2000]:
            return mujoco.MjSpec.from_string(_urdf_for_kinematics(text))
        return mujoco.MjSpec.from_file(str(path))
    except (ValueError, ET.ParseError) as error:
        raise ValueError(f"robot_description {path}: MuJoCo cannot read it: {error}") from None


@dataclass(frozen=True)
class RateGains:
    """Gains of the resolved-rate (velocity) IK: as MoveIt Servo, velocities in, velocities out."""

    damping: float = 0.01
    """Damped-least-squares lambda: bounded joint speeds near singularities, little lag elsewhere."""
    orientation_gain: float = 5.0
    """Turn back to the held orientation at this rate (1/s): the controller commands no rotation."""
    nullspace_gain: float = 1.0
    """Pull the redundant degrees of freedom towards home at this rate (1/s)."""


class ArmKinematics:
    """Forward kinematics and resolved-rate inverse kinematics of one arm, on a private MjData."""

    def __init__(self, description: ArmDescription, gains: RateGains | None = None) -> None:
        spec = load_spec(description.robot_description)
        site = description.ee_frame
        if spec.site(site) is None:
            body = spec.body(description.ee_frame)
            if body is None:
                raise ValueError(
                    f"ee_frame {description.ee_frame!r} is neither a site nor a body of the model"
                )
            body.add_site(name=EE_SITE_ADDED, pos=list(description.ee_offset))
            site = EE_SITE_ADDED
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        known = [self.model.joint(i).name for i in range(self.model.njnt)]
        for what, names in (
            ("arm_joints", description.arm_joints),
            ("gripper_joints", description.gripper_joints),
        ):
            missing = [n for n in names if n not in known]
            if missing:
                raise ValueError(
                    f"{what} {', '.join(missing)} not in the model; its joints: {', '.join(known)}"
                )
        if len(description.home) != len(description.arm_joints):
            raise ValueError(
                f"home has {len(description.home)} values for {len(description.arm_joints)} arm_joints"
            )
        self.description = description
        self.gains = gains or RateGains()
        self.joint_names = description.arm_joints
        self.limits = np.array([self.model.joint(j).range for j in self.joint_names])
        unlimited = ~np.array(
            [bool(self.model.jnt_limited[self.model.joint(j).id]) for j in self.joint_names]
        )
        self.limits[unlimited] = (-np.inf, np.inf)
        self._qpos = np.array([self.model.joint(j).qposadr[0] for j in self.joint_names])
        self._dofs = np.array([self.model.joint(j).dofadr[0] for j in self.joint_names])
        self._gripper_qpos = np.array(
            [self.model.joint(j).qposadr[0] for j in description.gripper_joints], dtype=int
        )
        self._site = self.model.site(site).id
        self._home = np.array(description.home, dtype=float)
        self._damping = self.gains.damping**2 * np.eye(6)
        self._jacp = np.zeros((3, self.model.nv))
        self._jacr = np.zeros((3, self.model.nv))
        self._solution = np.zeros(6)
        self._rotation = np.eye(3)

    def set_positions(self, q: np.ndarray, gripper: np.ndarray | None = None) -> None:
        """Put the arm in configuration q and update the kinematics (and the Jacobian's inputs)."""
        self.data.qpos[self._qpos] = q
        if gripper is not None and len(self._gripper_qpos):
            self.data.qpos[self._gripper_qpos] = gripper
        mujoco.mj_kinematics(self.model, self.data)
        mujoco.mj_comPos(self.model, self.data)

    def ee_pose(self) -> tuple[np.ndarray, np.ndarray]:
        """(position (3,), quaternion w x y z (4,)) of the end effector in the model's world frame."""
        quaternion = np.zeros(4)
        mujoco.mju_mat2Quat(quaternion, self.data.site_xmat[self._site])
        return self.data.site_xpos[self._site].copy(), quaternion

    def hold_here(self) -> None:
        """Hold the current orientation from now on (called whenever the arm stands)."""
        self._rotation = self.data.site_xmat[self._site].reshape(3, 3).copy()

    def joint_velocity(self, linear: np.ndarray) -> np.ndarray:
        """Joint velocities that move the end effector at `linear` (m/s) and hold its orientation.

        Velocities in, velocities out, as MoveIt Servo does: nothing is integrated, so the result does not
        depend on how often it is asked, and a zero twist gives zero joint motion in the task space.
        """
        task = np.empty(6)
        task[:3] = linear
        rotation = self.data.site_xmat[self._site].reshape(3, 3)
        task[3:] = self.gains.orientation_gain * orientation_error(self._rotation, rotation)
        mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, self._site)
        jac = np.vstack([self._jacp[:, self._dofs], self._jacr[:, self._dofs]])
        secondary = self.gains.nullspace_gain * (self._home - self.data.qpos[self._qpos])
        return damped_least_squares(jac, task, secondary, self._damping, self._solution)


class JointIndex:
    """Where each model joint sits in a /joint_states message, checked against the model's names."""

    def __init__(self, arm: Sequence[str], gripper: Sequence[str]) -> None:
        self.arm, self.gripper = tuple(arm), tuple(gripper)
        self._names: tuple[str, ...] | None = None
        self._arm_at = np.zeros(0, int)
        self._gripper_at: np.ndarray | None = None

    def read(
        self, names: Sequence[str], positions: Sequence[float], velocities: Sequence[float] = ()
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
        """(arm positions, arm velocities, finger positions or None when the message has no fingers).

        Raises JointStateMismatchError when the message lacks an arm joint or its arrays do not match its
        names; finger joints may come in another message (grippers often have their own driver).
        """
        names = tuple(names)
        if len(positions) != len(names) or (len(velocities) and len(velocities) != len(names)):
            raise JointStateMismatchError(
                f"joint state has {len(names)} names but {len(positions)} positions and {len(velocities)} "
                "velocities"
            )
        if names != self._names:
            missing = [n for n in self.arm if n not in names]
            if missing:
                raise JointStateMismatchError(
                    f"joint state lacks joint(s) {', '.join(missing)} of the arm model: it names "
                    f"{len(names)} ({', '.join(names) or 'none'}), the model's arm has {len(self.arm)} "
                    f"({', '.join(self.arm)}). Set arm_joints (and robot_description for another arm) in "
                    "arm_bridge.yaml to the arm's joint names"
                )
            self._arm_at = np.array([names.index(n) for n in self.arm])
            has_fingers = bool(self.gripper) and all(n in names for n in self.gripper)
            self._gripper_at = np.array([names.index(n) for n in self.gripper]) if has_fingers else None
            self._names = names
        p = np.asarray(positions, dtype=float)
        v = np.asarray(velocities, dtype=float) if len(velocities) else np.zeros(len(names))
        fingers = None if self._gripper_at is None else p[self._gripper_at]
        return p[self._arm_at], v[self._arm_at], fingers
