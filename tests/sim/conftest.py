"""Shared fixtures for the tabletop tests: one world per module and a builder of hand-made scenes."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping

import numpy as np
import pytest

from sim.tabletop import ObjectState, SceneState, TabletopWorld, WorldConfig
from sim.tabletop.model import BLOCK_SIZE, PLATE_SIZE, TABLE_TOP_Z

RESTING_Z = TABLE_TOP_Z + BLOCK_SIZE / 2
DEFAULT_BLOCKS = {"red_block": (0.5, 0.0, RESTING_Z), "blue_block": (0.4, 0.1, RESTING_Z)}
DEFAULT_PLATES = {"left_plate": (0.5, 0.25), "right_plate": (0.5, -0.25)}


@pytest.fixture(scope="module")
def world() -> Iterator[TabletopWorld]:
    world = TabletopWorld(WorldConfig(control_dt=0.04))
    yield world
    world.close()


SceneBuilder = Callable[..., SceneState]


@pytest.fixture
def scene() -> SceneBuilder:
    """Build a SceneState by hand: blocks and plates given as centre positions."""

    def build(
        ee: tuple[float, float, float] = (0.5, 0.0, 0.3),
        width: float = 0.08,
        blocks: Mapping[str, tuple[float, float, float]] | None = None,
        plates: Mapping[str, tuple[float, float]] | None = None,
    ) -> SceneState:
        blocks = DEFAULT_BLOCKS if blocks is None else blocks
        plates = DEFAULT_PLATES if plates is None else plates
        upright = np.array([1.0, 0.0, 0.0, 0.0])
        objects = {
            name: ObjectState(name, "block", np.array(pos, dtype=float), upright, np.full(3, BLOCK_SIZE))
            for name, pos in blocks.items()
        }
        for name, (x, y) in plates.items():
            centre = np.array([x, y, TABLE_TOP_Z + PLATE_SIZE[2] / 2])
            objects[name] = ObjectState(name, "plate", centre, upright, np.array(PLATE_SIZE))
        return SceneState(
            ee_position=np.array(ee, dtype=float),
            ee_quaternion=np.array([0.0, 0.7071068, 0.7071068, 0.0]),
            gripper_width=width,
            objects=objects,
            joint_names=(),
            joint_positions=np.zeros(0),
            joint_velocities=np.zeros(0),
            time=0.0,
        )

    return build
