"""Seeded scene layouts: where the plates and blocks start. Tasks build one; the world applies it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sim.tabletop.model import BLOCKS, PLATE_SIZE, PLATES

SLOT_SPACING = 0.06
"""Distance between neighbouring placement slots along a plate's long side (m)."""


@dataclass(frozen=True)
class Layout:
    """Initial poses: blocks as (x, y, yaw) resting on the table, plates as (x, y) centres."""

    blocks: Mapping[str, tuple[float, float, float]]
    plates: Mapping[str, tuple[float, float]]


@dataclass(frozen=True)
class LayoutRanges:
    """Where things may start: every sampled position is reachable with the gripper pointing down."""

    block_x: tuple[float, float] = (0.33, 0.67)
    block_y: tuple[float, float] = (-0.3, 0.3)
    block_yaw: float = 0.35
    """Largest absolute yaw of a block (rad); the gripper's yaw is fixed."""
    block_spacing: float = 0.1
    """Smallest distance between block centres: room for the open fingers between them."""
    plate_clearance: float = 0.05
    """Smallest gap between a block centre and a plate's edge."""
    plate_x: tuple[float, float] = (0.45, 0.58)
    plate_y: tuple[float, float] = (0.22, 0.28)
    """Range of |y| of the plate centres: left_plate at +y, right_plate at -y."""
    max_tries: int = 10_000


BlockFilter = Callable[[str, np.ndarray, Mapping[str, np.ndarray]], bool]
"""A task's extra constraint: (block name, candidate xy, blocks placed so far) -> acceptable."""


def sample_plates(rng: np.random.Generator, ranges: LayoutRanges) -> dict[str, tuple[float, float]]:
    """Plate centres, one on each side of the robot."""
    return {
        name: (float(rng.uniform(*ranges.plate_x)), sign * float(rng.uniform(*ranges.plate_y)))
        for name, sign in zip(PLATES, (1.0, -1.0), strict=True)
    }


def _clear_of_plates(xy: np.ndarray, plates: Mapping[str, tuple[float, float]], clearance: float) -> bool:
    half = np.array(PLATE_SIZE[:2]) / 2 + clearance
    return all(np.any(np.abs(xy - np.array(centre)) > half) for centre in plates.values())


def sample_blocks(
    rng: np.random.Generator,
    ranges: LayoutRanges,
    plates: Mapping[str, tuple[float, float]],
    accept: BlockFilter | None = None,
    order: tuple[str, ...] = BLOCKS,
    fixed: Mapping[str, tuple[float, float, float]] | None = None,
) -> Layout:
    """Place blocks in `order` by rejection: never overlapping each other or a plate, and as `accept` says.
    Blocks in `fixed` (x, y, yaw) are already placed (on a plate, say); the others keep clear of them."""
    placed = {name: np.array(pose[:2]) for name, pose in (fixed or {}).items()}
    yaws = {name: pose[2] for name, pose in (fixed or {}).items()}
    for name in order:
        if name in placed:
            continue
        for _ in range(ranges.max_tries):
            xy = np.array([rng.uniform(*ranges.block_x), rng.uniform(*ranges.block_y)])
            if (
                _clear_of_plates(xy, plates, ranges.plate_clearance)
                and all(np.linalg.norm(xy - other) >= ranges.block_spacing for other in placed.values())
                and (accept is None or accept(name, xy, placed))
            ):
                placed[name] = xy
                yaws[name] = float(rng.uniform(-ranges.block_yaw, ranges.block_yaw))
                break
        else:
            raise RuntimeError(f"could not place {name} in {ranges.max_tries} tries; loosen LayoutRanges")
    blocks = {name: (float(placed[name][0]), float(placed[name][1]), yaws[name]) for name in BLOCKS}
    return Layout(blocks=blocks, plates=dict(plates))


def slot_offsets(length: float = PLATE_SIZE[1]) -> np.ndarray:
    """Offsets along a plate's long side (y) of its placement slots, centred on the plate."""
    count = max(1, int(length // SLOT_SPACING))
    return (np.arange(count) - (count - 1) / 2) * SLOT_SPACING


def on_plates(
    rng: np.random.Generator,
    ranges: LayoutRanges,
    plates: Mapping[str, tuple[float, float]],
    slots: Mapping[str, tuple[str, int]],
) -> Layout:
    """Blocks that start on plates, {block: (plate, slot index)}, the others sampled on the table."""
    offsets = slot_offsets()
    fixed = {
        block: (
            plates[plate][0],
            plates[plate][1] + float(offsets[index]),
            float(rng.uniform(-ranges.block_yaw, ranges.block_yaw)),
        )
        for block, (plate, index) in slots.items()
    }
    return sample_blocks(rng, ranges, plates, fixed=fixed)


def sample_layout(rng: np.random.Generator, ranges: LayoutRanges) -> Layout:
    """Plates, then blocks with no constraint beyond not overlapping."""
    return sample_blocks(rng, ranges, sample_plates(rng, ranges))
