"""Pure predicates over a SceneState.

Skill success, task success and the experts all read these functions; there is no second copy.
Every predicate takes the state first and object names after it, so that a task goal can name one
as data: ("on", ("red_block", "left_plate")).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from sim.tabletop.model import TABLE_TOP_Z
from sim.tabletop.state import SceneState

HOVER_HEIGHT = 0.10
"""Height of the grip point above an object's centre when the gripper is 'above' it (m)."""
ABOVE_TOLERANCE = 0.02
"""Largest distance between the grip point and the hover point for 'above' (m)."""
LIFT_HEIGHT = 0.05
"""Height of an object's lower face above the table for 'lifted' (m)."""
GRIP_XY_TOLERANCE = 0.02
GRIP_Z_TOLERANCE = 0.02
"""Largest offset of an object's centre from the grip point while it is held (m)."""
GRIP_WIDTH_SLACK = 0.006
"""A held object keeps the fingers within this much of its width (m); wider means released."""
REST_TOLERANCE = 0.012
"""Largest gap between an object's lower face and the surface it rests 'on' (m)."""
PLATE_MARGIN = 0.005
"""An object is on a plate when its centre lies this far inside the plate's edge (m)."""


def near(a: np.ndarray, b: np.ndarray, tolerance: float) -> bool:
    """Whether two points lie within tolerance of each other."""
    return bool(np.linalg.norm(np.asarray(a) - np.asarray(b)) <= tolerance)


def hover_point(state: SceneState, obj: str) -> np.ndarray:
    """Where the grip point goes to be above an object."""
    return state.object(obj).position + np.array([0.0, 0.0, HOVER_HEIGHT])


def above(state: SceneState, obj: str) -> bool:
    """The gripper hovers above the object."""
    return near(state.ee_position, hover_point(state, obj), ABOVE_TOLERANCE)


def held(state: SceneState, obj: str) -> bool:
    """The object sits between the finger pads and the fingers are closed on it."""
    target = state.object(obj)
    offset = target.position - state.ee_position
    width = float(min(target.size[:2]))
    return bool(
        np.hypot(offset[0], offset[1]) <= GRIP_XY_TOLERANCE
        and abs(offset[2]) <= GRIP_Z_TOLERANCE
        and 0.5 * width <= state.gripper_width <= width + GRIP_WIDTH_SLACK
    )


def lifted(state: SceneState, obj: str) -> bool:
    """The object's lower face is at least LIFT_HEIGHT above the table."""
    return state.object(obj).bottom_z >= TABLE_TOP_Z + LIFT_HEIGHT


def on(state: SceneState, obj: str, target: str) -> bool:
    """The object rests, released, on the target: its centre over a plate, or over a block's top face."""
    if obj == target or held(state, obj):
        return False
    top, base = state.object(obj), state.object(target)
    offset = np.abs(top.position[:2] - base.position[:2])
    if base.category == "plate":
        over = bool(np.all(offset <= base.size[:2] / 2 - PLATE_MARGIN))
    else:
        over = bool(np.hypot(*offset) <= min(base.size[:2]) / 2)
    return over and abs(top.bottom_z - base.top_z) <= REST_TOLERANCE


PREDICATES: Mapping[str, Callable[..., bool]] = {
    "above": above,
    "held": held,
    "lifted": lifted,
    "on": on,
}
"""Predicates a task goal may name, keyed by exact name."""
