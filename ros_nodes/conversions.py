"""Message <-> `sim.tabletop` object conversions: the only place that knows both shapes."""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import Point, Pose, Quaternion
from hgpo_msgs.msg import ObjectState as ObjectStateMsg
from hgpo_msgs.msg import SceneState as SceneStateMsg
from hgpo_msgs.msg import Subgoal as SubgoalMsg
from sensor_msgs.msg import JointState

from sim.tabletop import ObjectState, SceneState, Subgoal


def pose_msg(position: np.ndarray, quaternion_wxyz: np.ndarray) -> Pose:
    w, x, y, z = (float(v) for v in quaternion_wxyz)
    px, py, pz = (float(v) for v in position)
    return Pose(position=Point(x=px, y=py, z=pz), orientation=Quaternion(x=x, y=y, z=z, w=w))


def _pose_arrays(pose: Pose) -> tuple[np.ndarray, np.ndarray]:
    p, q = pose.position, pose.orientation
    return np.array([p.x, p.y, p.z]), np.array([q.w, q.x, q.y, q.z])


def scene_to_msg(state: SceneState, stamp: Time, frame_id: str) -> SceneStateMsg:
    msg = SceneStateMsg()
    msg.header.stamp = stamp
    msg.header.frame_id = frame_id
    msg.ee_pose = pose_msg(state.ee_position, state.ee_quaternion)
    msg.gripper_width = float(state.gripper_width)
    msg.objects = [
        ObjectStateMsg(
            name=obj.name,
            category=obj.category,
            pose=pose_msg(obj.position, obj.quaternion),
            size=[float(v) for v in obj.size],
        )
        for obj in state.objects.values()
    ]
    return msg


def scene_from_msg(msg: SceneStateMsg) -> SceneState:
    """The scene as the controller and planner see it over DDS (no joint data: that is on /joint_states)."""
    objects = {}
    for obj in msg.objects:
        position, quaternion = _pose_arrays(obj.pose)
        objects[obj.name] = ObjectState(
            obj.name, obj.category, position, quaternion, np.array(obj.size, dtype=float)
        )
    ee_position, ee_quaternion = _pose_arrays(msg.ee_pose)
    return SceneState(
        ee_position=ee_position,
        ee_quaternion=ee_quaternion,
        gripper_width=msg.gripper_width,
        objects=objects,
        joint_names=(),
        joint_positions=np.zeros(0),
        joint_velocities=np.zeros(0),
        time=msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9,
    )


def joint_state_msg(state: SceneState, stamp: Time) -> JointState:
    msg = JointState(name=list(state.joint_names))
    msg.header.stamp = stamp
    msg.position = [float(v) for v in state.joint_positions]
    msg.velocity = [float(v) for v in state.joint_velocities]
    return msg


def subgoal_to_msg(subgoal: Subgoal, subgoal_id: int, goal: np.ndarray, timeout_s: float) -> SubgoalMsg:
    msg = SubgoalMsg(id=subgoal_id, text=str(subgoal), skill=subgoal.skill, args=list(subgoal.args))
    msg.goal = [float(v) for v in goal]
    msg.timeout_s = float(timeout_s)
    return msg


def subgoal_from_msg(msg: SubgoalMsg) -> Subgoal:
    return Subgoal(skill=msg.skill, args=tuple(msg.args))


def clip(text: str, limit: int = 80) -> str:
    """`text` cut to `limit` characters for messages and logs, saying how long it was."""
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text)} characters)"
