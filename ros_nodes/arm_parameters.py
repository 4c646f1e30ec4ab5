"""Parameters that describe the arm, declared alike by `arm_bridge` and `fake_arm` (lists as well as
scalars, which `node_main.Parameters` does not take)."""

from __future__ import annotations

from typing import Any

import numpy as np
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.node import Node

from ros_nodes.arm.kinematics import ArmDescription

FRANKA_MAX_JOINT_VELOCITY = (2.175, 2.175, 2.175, 2.175, 2.61, 2.61, 2.61)
"""Franka Emika Panda joint speed limits (rad/s), the defaults for the tabletop arm."""


def declare(node: Node, name: str, default: Any, description: str) -> Any:
    value = node.declare_parameter(name, default, ParameterDescriptor(description=description)).value
    return tuple(value) if isinstance(value, list | tuple) else value


def arm_description(node: Node) -> ArmDescription:
    d = ArmDescription()
    return ArmDescription(
        robot_description=declare(
            node,
            "robot_description",
            d.robot_description,
            "URDF or MJCF file of the arm; empty: the tabletop arm (sim/tabletop/model.py)",
        ),
        arm_joints=declare(
            node, "arm_joints", list(d.arm_joints), "commanded joints, in command-array order"
        ),
        gripper_joints=declare(
            node,
            "gripper_joints",
            list(d.gripper_joints),
            "finger joints whose positions add up to the gripper width",
        ),
        ee_frame=declare(node, "ee_frame", d.ee_frame, "site or body of the end effector in the model"),
        ee_offset=declare(node, "ee_offset", list(d.ee_offset), "grip point in the ee_frame body (m)"),
        home=declare(node, "home", list(d.home), "posture the redundant joints are pulled towards (rad)"),
    )


def max_joint_velocity(node: Node, joints: int) -> np.ndarray:
    values = np.array(
        declare(
            node,
            "max_joint_velocity",
            list(FRANKA_MAX_JOINT_VELOCITY),
            "joint speed limits (rad/s), one per arm joint",
        ),
        dtype=float,
    )
    if values.shape != (joints,) or not np.all(values > 0):
        raise ValueError(f"max_joint_velocity needs {joints} positive values, got {values.tolist()}")
    return values
