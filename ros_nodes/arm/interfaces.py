"""How ROS 2 arms take end-effector motion, keyed by exact name: MoveIt Servo's twist input, or a
ros2_control forward command controller for joint velocities or joint positions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from ros_nodes.arm.kinematics import ArmKinematics
from ros_nodes.arm.safety import Twist, clip_joint_velocity, joint_position_command


@dataclass(frozen=True)
class CommandInterface:
    name: str
    message: Literal["TwistStamped", "Float64MultiArray"]
    default_topic: str
    description: str


INTERFACES: dict[str, CommandInterface] = {
    i.name: i
    for i in (
        CommandInterface(
            "servo",
            "TwistStamped",
            "/servo_node/delta_twist_cmds",
            "MoveIt Servo: end-effector twists, Servo solves the joint motion",
        ),
        CommandInterface(
            "forward_velocity",
            "Float64MultiArray",
            "/forward_velocity_controller/commands",
            "ros2_control forward_command_controller on velocity interfaces: joint velocities",
        ),
        CommandInterface(
            "forward_position",
            "Float64MultiArray",
            "/forward_position_controller/commands",
            "ros2_control forward_command_controller on position interfaces: joint positions",
        ),
    )
}


def command_interface(name: str) -> CommandInterface:
    try:
        return INTERFACES[name]
    except KeyError:
        raise ValueError(f"unknown command_interface {name!r}; known: {', '.join(INTERFACES)}") from None


def joint_command(
    interface: CommandInterface,
    kinematics: ArmKinematics,
    twist: Twist,
    q: np.ndarray,
    dt: float,
    max_joint_velocity: np.ndarray,
) -> np.ndarray:
    """The Float64MultiArray data for a joint interface: velocities, or positions one period ahead.

    The kinematics must be set to configuration q. Joint velocities are scaled down together to their
    limits and positions stay inside the joints' range. (Servo takes the twist itself: no joint command.)
    """
    if interface.message != "Float64MultiArray":
        raise ValueError(f"{interface.name} takes twists, not joint commands")
    qdot = clip_joint_velocity(kinematics.joint_velocity(twist.linear), max_joint_velocity)
    if interface.name == "forward_velocity":
        return qdot
    return joint_position_command(q, qdot, dt, kinematics.limits)
