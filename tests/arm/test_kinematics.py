"""The arm's kinematics on its model: the tabletop MJCF by default, a URDF by path, and joint-name checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from ros_nodes.arm.kinematics import ArmDescription, ArmKinematics, JointIndex, JointStateMismatchError
from sim.tabletop import TabletopWorld, make_task
from sim.tabletop.model import ARM_JOINTS, FINGER_JOINTS, HOME_QPOS

PANDA_URDF = Path(__file__).with_name("panda_arm.urdf")
URDF_ARM = ArmDescription(
    robot_description=str(PANDA_URDF),
    arm_joints=tuple(f"panda_joint{i}" for i in range(1, 8)),
    gripper_joints=("panda_finger_joint1", "panda_finger_joint2"),
    ee_frame="panda_hand_tcp",
)


@pytest.fixture(scope="module")
def arm() -> ArmKinematics:
    return ArmKinematics(ArmDescription())


def test_default_model_agrees_with_the_simulator(arm: ArmKinematics) -> None:
    with TabletopWorld() as world:
        state = world.reset(make_task("reach", seed=0))
    arm.set_positions(np.array(HOME_QPOS))
    position, quaternion = arm.ee_pose()
    assert np.allclose(position, state.ee_position, atol=1e-9)
    assert np.allclose(np.abs(quaternion @ state.ee_quaternion), 1.0, atol=1e-9)


def test_urdf_gives_the_same_end_effector_as_the_mjcf(arm: ArmKinematics) -> None:
    urdf = ArmKinematics(URDF_ARM)
    rng = np.random.default_rng(0)
    for _ in range(5):
        q = rng.uniform(arm.limits[:, 0], arm.limits[:, 1])
        arm.set_positions(q)
        urdf.set_positions(q)
        (p1, q1), (p2, q2) = arm.ee_pose(), urdf.ee_pose()
        assert np.allclose(p1, p2, atol=1e-6) and np.isclose(abs(q1 @ q2), 1.0, atol=1e-6)
    assert np.allclose(urdf.limits, arm.limits)


def test_model_errors_are_clear(tmp_path: Path) -> None:
    with pytest.raises(
        ValueError, match="arm_joints shoulder_pan_joint not in the model; its joints: .*joint1"
    ):
        ArmKinematics(ArmDescription(arm_joints=("shoulder_pan_joint", *ARM_JOINTS[1:])))
    with pytest.raises(ValueError, match="ee_frame 'tool0' is neither a site nor a body"):
        ArmKinematics(ArmDescription(ee_frame="tool0"))
    with pytest.raises(ValueError, match="cannot read it"):
        ArmKinematics(ArmDescription(robot_description=str(tmp_path / "missing.urdf")))
    bad = tmp_path / "bad.urdf"
    bad.write_text("<robot name='x'><joint name='j' type='revolute'><parent link='nowhere'/></joint></robot>")
    with pytest.raises(ValueError, match="MuJoCo cannot read it"):
        ArmKinematics(ArmDescription(robot_description=str(bad)))


def test_joint_velocity_moves_the_end_effector_as_commanded(arm: ArmKinematics) -> None:
    q = np.array(HOME_QPOS)
    arm.set_positions(q)
    arm.hold_here()
    start, orientation = arm.ee_pose()
    velocity, dt = np.array([0.1, -0.05, 0.05]), 0.01
    for _ in range(50):
        q = q + arm.joint_velocity(velocity) * dt
        arm.set_positions(q)
    end, end_orientation = arm.ee_pose()
    assert np.allclose(end - start, velocity * 0.5, atol=2e-3)
    assert abs(orientation @ end_orientation) > 0.999  # orientation held


def test_joint_index_reorders_and_finds_fingers() -> None:
    index = JointIndex(ARM_JOINTS, FINGER_JOINTS)
    names = [*reversed(ARM_JOINTS), *FINGER_JOINTS]
    positions = [*range(7, 0, -1), 0.01, 0.02]
    q, qdot, fingers = index.read(names, positions)
    assert np.array_equal(q, range(1, 8)) and not np.any(qdot) and np.allclose(fingers, [0.01, 0.02])
    q, _, fingers = index.read(ARM_JOINTS, range(7))
    assert fingers is None and np.array_equal(q, range(7))  # fingers may come from another driver


def test_joint_state_that_disagrees_with_the_model_is_an_error() -> None:
    index = JointIndex(ARM_JOINTS, FINGER_JOINTS)
    ur = [
        "shoulder_pan_joint",
        "shoulder_lift_joint",
        "elbow_joint",
        "wrist_1_joint",
        "wrist_2_joint",
        "wrist_3_joint",
    ]
    with pytest.raises(JointStateMismatchError) as error:
        index.read(ur, range(6))
    message = str(error.value)
    assert "lacks joint(s) joint1" in message and "it names 6" in message and "arm has 7" in message
    assert "arm_joints" in message  # says what to change
    with pytest.raises(JointStateMismatchError, match="7 names but 6 positions"):
        index.read(ARM_JOINTS, range(6))
