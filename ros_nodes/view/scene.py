"""The tabletop as Foxglove 3D entities (blocks, plates, the gripper, the current subgoal's target) and the
JSON messages of the view's panels; plain values in, `foxglove` messages out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from foxglove.messages import (
    Color,
    CubePrimitive,
    Pose,
    Quaternion,
    SceneEntity,
    SceneUpdate,
    SpherePrimitive,
    TextPrimitive,
    Timestamp,
    Vector3,
)

from sim.tabletop.model import BLOCK_COLOURS, PLATE_COLOURS

FRAME = "world"  # the scene frame of SceneState
_GRIPPER = (0.9, 0.9, 0.9)
_TARGET = (1.0, 0.55, 0.0)
_UNKNOWN = (0.6, 0.6, 0.9)


@dataclass(frozen=True)
class Body:
    """An object of the scene: name, category, position, orientation (x, y, z, w) and full extents (m)."""

    name: str
    category: str
    position: tuple[float, float, float]
    orientation: tuple[float, float, float, float]
    size: tuple[float, float, float]


def pose(position: Sequence[float], orientation: Sequence[float] = (0.0, 0.0, 0.0, 1.0)) -> Pose:
    x, y, z = position
    qx, qy, qz, qw = orientation
    return Pose(position=Vector3(x=x, y=y, z=z), orientation=Quaternion(x=qx, y=qy, z=qz, w=qw))


def _colour(rgb: Sequence[float], alpha: float = 1.0) -> Color:
    return Color(r=rgb[0], g=rgb[1], b=rgb[2], a=alpha)


def _label(name: str, position: Sequence[float], above: float) -> TextPrimitive:
    x, y, z = position
    return TextPrimitive(
        pose=pose((x, y, z + above)),
        billboard=True,
        font_size=14.0,
        scale_invariant=True,
        color=_colour((1, 1, 1)),
        text=name,
    )


def timestamp(stamp_ns: int) -> Timestamp:
    return Timestamp(stamp_ns // 1_000_000_000, stamp_ns % 1_000_000_000)


def scene_update(
    stamp: Timestamp,
    bodies: Sequence[Body],
    gripper: tuple[float, float, float],
    gripper_width: float,
    target: tuple[float, float, float] | None,
    target_label: str = "",
    more: Sequence[SceneEntity] = (),
) -> SceneUpdate:
    """One frame of the 3D panel: an entity per body, the gripper (its opening as its width), the target,
    then `more` (the arm)."""
    entities = list(more)
    for body in bodies:
        rgb = {**BLOCK_COLOURS, **PLATE_COLOURS}.get(body.name, _UNKNOWN)
        cube = CubePrimitive(
            pose=pose(body.position, body.orientation),
            size=Vector3(x=body.size[0], y=body.size[1], z=body.size[2]),
            color=_colour(rgb),
        )
        entities.append(
            SceneEntity(
                timestamp=stamp,
                frame_id=FRAME,
                id=body.name,
                cubes=[cube],
                texts=[_label(body.name, body.position, body.size[2])],
            )
        )
    fingers = CubePrimitive(
        pose=pose(gripper),
        size=Vector3(x=0.02, y=max(gripper_width, 0.005) + 0.02, z=0.04),
        color=_colour(_GRIPPER, 0.8),
    )
    entities.append(SceneEntity(timestamp=stamp, frame_id=FRAME, id="gripper", cubes=[fingers]))
    if target is not None:
        marker = SpherePrimitive(
            pose=pose(target), size=Vector3(x=0.03, y=0.03, z=0.03), color=_colour(_TARGET, 0.7)
        )
        entities.append(
            SceneEntity(
                timestamp=stamp,
                frame_id=FRAME,
                id="target",
                spheres=[marker],
                texts=[_label(target_label or "target", target, 0.04)],
            )
        )
    return SceneUpdate(entities=entities)
