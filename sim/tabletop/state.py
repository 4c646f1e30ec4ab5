"""Plain snapshots of the scene: what every predicate, expert, policy and ROS message reads."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np

from sim.tabletop.errors import UnknownObjectError

Category = Literal["block", "plate"]


@dataclass(frozen=True, eq=False)
class ObjectState:
    """One object's pose and size (metres, world frame)."""

    name: str
    category: Category
    position: np.ndarray
    """(3,) centre of the object."""
    quaternion: np.ndarray
    """(4,) orientation, w x y z."""
    size: np.ndarray
    """(3,) full extents along the object's own axes."""

    @property
    def top_z(self) -> float:
        """Height of the object's upper face (objects stay near upright on the table)."""
        return float(self.position[2] + self.size[2] / 2)

    @property
    def bottom_z(self) -> float:
        """Height of the object's lower face."""
        return float(self.position[2] - self.size[2] / 2)


@dataclass(frozen=True, eq=False)
class SceneState:
    """The whole scene at one instant: end effector, gripper, objects and arm joints."""

    ee_position: np.ndarray
    """(3,) grip point between the finger pads."""
    ee_quaternion: np.ndarray
    """(4,) end-effector orientation, w x y z."""
    gripper_width: float
    """Distance between the finger pads (m)."""
    objects: Mapping[str, ObjectState]
    joint_names: tuple[str, ...]
    joint_positions: np.ndarray
    joint_velocities: np.ndarray
    time: float
    """Simulated seconds since reset."""

    def object(self, name: str) -> ObjectState:
        """Look an object up by name; raises UnknownObjectError listing the known names."""
        try:
            return self.objects[name]
        except KeyError:
            raise UnknownObjectError(name, self.objects) from None

    def names(self, category: Category) -> tuple[str, ...]:
        """Names of the objects of one category, in scene order."""
        return tuple(name for name, obj in self.objects.items() if obj.category == category)
