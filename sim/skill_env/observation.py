"""What a learned skill policy reads: the observation and goal vectors, built from a `SceneState`.

This module is the contract between training and deployment. The tabletop environments build every
observation with `observe`, and the controller node builds its inputs with `policy_inputs` from the
`SceneState` it receives, so a policy sees the same numbers in both places. Only what a real arm's bridge
can publish goes in: the grip point, the gripper width and object poses (no velocities).

Layouts name each vector entry; export writes them, with `OBSERVATION_VERSION`, into the ONNX metadata,
and the controller refuses a policy whose layout differs from the one it computes.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from scipy.spatial.transform import Rotation  # type: ignore[import-untyped]

from sim.tabletop.skills import Subgoal, ground
from sim.tabletop.state import SceneState

OBSERVATION_VERSION = 2
"""Bumped whenever `observe` changes what it computes, so that old policy files fail loudly. 2: a cube's
orientation is reported as the one of its 24 equivalent orientations nearest the identity."""

OBSERVATION_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ee_position", ("x", "y", "z")),  # grip point between the finger pads, world frame (m)
    ("gripper_width", ("",)),  # distance between the finger pads (m)
    ("object_position", ("x", "y", "z")),  # centre of the subgoal's object (m)
    ("object_relative_position", ("x", "y", "z")),  # object_position - ee_position (m)
    ("object_quaternion", ("w", "x", "y", "z")),  # orientation, w >= 0; a cube's: canonical_cube_quaternion
)
OBSERVATION_LAYOUT: tuple[str, ...] = tuple(
    f"{name}.{axis}" if axis else name for name, axes in OBSERVATION_FIELDS for axis in axes
)
"""One name per observation entry, in order."""
GOAL_LAYOUT: tuple[str, ...] = ("goal.x", "goal.y", "goal.z")
"""The goal vector: the point the skill drives to (grip point for reach, object centre otherwise)."""

POLICY_SKILLS: Mapping[str, str] = {
    "reach": "reach",
    "pick": "pick_and_place",
    "place": "pick_and_place",
    "push": "push",
}
"""Planner skill (sim.tabletop.SKILLS) -> the learned skill that serves it. One pick_and_place policy serves
both pick and place: their grounded goals are both object-centre points."""


_CUBE_ROTATIONS = Rotation.create_group("O").as_quat(scalar_first=True)
"""The 24 rotations that map a cube onto itself (w x y z)."""
CUBE_CONJUGATES = _CUBE_ROTATIONS * np.array([1.0, -1.0, -1.0, -1.0])


def _right_product_matrices(quaternions: np.ndarray) -> np.ndarray:
    """(n, 4, 4) matrices M with q * s = M @ q for each quaternion s (w x y z) of `quaternions` (n, 4)."""
    w, x, y, z = quaternions.T
    rows = ([w, -x, -y, -z], [x, w, z, -y], [y, -z, w, x], [z, y, -x, w])
    return np.stack([np.stack(row, axis=-1) for row in rows], axis=1)


CUBE_RIGHT_PRODUCTS = _right_product_matrices(_CUBE_ROTATIONS)
"""q * s = CUBE_RIGHT_PRODUCTS[k] @ q for the k-th rotation s: one matrix product per observation, where
scipy's Rotation product costs 3.5x as much on every env step (and a product written out per component 5x)."""


def observe(state: SceneState, obj: str) -> np.ndarray:
    """The observation (float32, OBSERVATION_LAYOUT) of a scene for a subgoal about object `obj`."""
    target = state.object(obj)
    cube = float(target.size.max() - target.size.min()) < 1e-9  # np.allclose: 10x the cost, every tick
    quaternion = canonical_cube_quaternion(target.quaternion) if cube else target.quaternion
    return observation_vector(state.ee_position, np.array([state.gripper_width]), target.position, quaternion)


def canonical_cube_quaternion(quaternion: np.ndarray) -> np.ndarray:
    """A cube's orientation (..., 4 as w x y z) as the one of its 24 equivalent orientations (the cube's own
    rotations, scipy's octahedral group) nearest the identity. A block knocked onto its side, or turned past
    45°, is the same block in the same place as an upright one within ±45° of yaw, which is all that the
    policies' episodes show them; its raw quaternion would be an input they never met (in the stack the
    learned pick and reach failed at 8 of 9 such blocks)."""
    q = np.asarray(quaternion, dtype=np.float64)
    nearest = np.argmax(np.abs(q @ CUBE_CONJUGATES.T), axis=-1)  # the largest |w| of q * s: the least angle
    return (CUBE_RIGHT_PRODUCTS[nearest] @ q[..., None])[..., 0]


def observation_vector(
    ee_position: np.ndarray,
    gripper_width: np.ndarray,
    object_position: np.ndarray,
    object_quaternion: np.ndarray,
) -> np.ndarray:
    """`observe` on arrays with any leading batch shape (..., 3), (..., 1), (..., 3), (..., 4 as w x y z):
    for backends that hold whole batches of poses (Isaac Gym), so that no second copy of the layout exists."""
    ee = np.asarray(ee_position, dtype=np.float64)
    position = np.asarray(object_position, dtype=np.float64)
    quaternion = np.asarray(object_quaternion, dtype=np.float64)
    quaternion = np.where(quaternion[..., :1] < 0, -quaternion, quaternion)
    width = np.asarray(gripper_width, dtype=np.float64)
    return np.concatenate([ee, width, position, position - ee, quaternion], axis=-1).astype(np.float32)


def policy_skill(skill: str) -> str:
    """The learned skill that serves a planner skill; ValueError listing the known ones otherwise."""
    try:
        return POLICY_SKILLS[skill]
    except KeyError:
        raise ValueError(
            f"no learned skill serves {skill!r}; planner skills with one: {', '.join(POLICY_SKILLS)}"
        ) from None


def policy_inputs(subgoal: Subgoal, state: SceneState) -> tuple[str, np.ndarray, np.ndarray]:
    """(learned skill, observation, goal) for a planner subgoal in a scene, as the controller feeds a policy.

    The goal is the subgoal's grounding (`sim.tabletop.ground`), the object its first argument. Raises
    the grounding's SubgoalError for a subgoal the scene cannot support.
    """
    goal = ground(subgoal, state).astype(np.float32)
    return policy_skill(subgoal.skill), observe(state, subgoal.args[0]), goal
