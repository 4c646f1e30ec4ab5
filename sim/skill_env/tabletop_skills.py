"""The tabletop skills as goal-conditioned episodes: where each episode starts, its goal, what it moves.

Scenes are the tasks' own seeded layouts (four blocks, two plates); one block is the episode's object.
The arm starts above the table near that object (as Fetch's gripper starts near its object), and goals
lie near it too, so that an episode of 50 (reach) or 75 steps at the world's speed limit (0.25 m/s, five
times slower than Fetch's) has time to finish. Goals are sampled like Fetch's:
- reach: the grip point to a point in the air over the table;
- push: the object, slid along the table, to a point on it whose path is clear of the other blocks;
- pick_and_place: the object to a point on the table (clear of other blocks) or, half the time, in the air.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sim.tabletop.layout import (
    BlockFilter,
    Layout,
    LayoutRanges,
    sample_blocks,
    sample_layout,
    sample_plates,
)
from sim.tabletop.model import BLOCK_SIZE, BLOCKS, TABLE_TOP_Z
from sim.tabletop.predicates import ABOVE_TOLERANCE
from sim.tabletop.state import SceneState
from sim.tabletop.tasks import PUSH_CORRIDOR, PUSH_RUN_UP, segment_distance

RESTING_Z = TABLE_TOP_Z + BLOCK_SIZE / 2
"""Height of a block's centre resting on the table."""
GOAL_XY_LOW = np.array([0.33, -0.33])
GOAL_XY_HIGH = np.array([0.67, 0.33])
"""Where goals on or above the table lie (reachable with the gripper pointing down)."""
REACH_GOAL_Z = (0.05, 0.3)
REACH_GOAL_OFFSET = 0.15
"""A reach goal lies within this distance (per axis) of the start, inside the box above."""
START_OFFSET_XY = 0.1
"""The grip point starts within this distance (per axis) of the object..."""
START_Z = (0.12, 0.25)
"""...and at a height in this range."""
PUSH_RANGE = (0.05, 0.15)
CARRY_RANGE = (0.05, 0.22)
"""A pushed / carried object's goal lies at a distance in this range from its start (m)."""
AIR_GOAL_FRACTION = 0.5
AIR_GOAL_HEIGHT = (0.02, 0.2)
"""Height of an air goal above the resting height (m)."""
GOAL_CLEARANCE = 0.07
"""A goal on the table keeps this far from the other blocks' centres (m)."""
MAX_TRIES = 1000
PUSH_LAYOUT_TRIES = 200
"""Tries to place each block around one push goal before drawing another goal."""


@dataclass(frozen=True)
class Episode:
    """How one episode starts: the scene, its object, the goal and where the grip point begins."""

    layout: Layout
    obj: str
    goal: np.ndarray
    grip_start: np.ndarray


@dataclass(frozen=True)
class TabletopSkill:
    """One skill's episodes: sampling, the achieved point and the defaults of its environment."""

    name: str
    sample: Callable[[np.random.Generator, LayoutRanges], Episode]
    achieved: Callable[[SceneState, str], np.ndarray]
    """(state, obj) -> the point that must reach the goal: the grip point or the object's centre."""
    distance_threshold: float
    max_episode_steps: int
    expert: str
    """The scripted expert (sim.tabletop.experts.EXPERTS) that solves these episodes: a reference."""


def _grip_start(rng: np.random.Generator, layout: Layout, obj: str) -> np.ndarray:
    x, y, _ = layout.blocks[obj]
    offset = rng.uniform(-START_OFFSET_XY, START_OFFSET_XY, 2)
    return np.array([x + offset[0], y + offset[1], rng.uniform(*START_Z)])


def grip_in_start_range(state: SceneState, obj: str) -> bool:
    """Whether the grip point lies where push and pick_and_place episodes start, or on their way down from
    there: within START_OFFSET_XY of the object per axis and no higher than START_Z; below START_Z, only over
    the object (within its width per axis), where the policies descend. Farther away, higher up (the arm's
    home is half a metre above the table) or low beside the object (where a place on a plate nearby ends),
    their policies never learned to act."""
    target = state.object(obj)
    offset = np.abs(np.asarray(state.ee_position[:2]) - target.position[:2])
    height = state.ee_position[2]
    if height > START_Z[1]:
        return False
    return bool(np.all(offset <= (START_OFFSET_XY if height >= START_Z[0] else float(max(target.size[:2])))))


def _choose_block(rng: np.random.Generator) -> str:
    return BLOCKS[int(rng.integers(len(BLOCKS)))]


def _clear_of_others(xy: np.ndarray, layout: Layout, obj: str) -> bool:
    return all(
        np.hypot(xy[0] - x, xy[1] - y) >= GOAL_CLEARANCE
        for name, (x, y, _) in layout.blocks.items()
        if name != obj
    )


def _goal_xy_near(
    rng: np.random.Generator, start: np.ndarray, accept: Callable[[np.ndarray], bool]
) -> np.ndarray:
    """A goal xy on the table at a distance in CARRY_RANGE from start that `accept` takes, by rejection."""
    for _ in range(MAX_TRIES):
        xy = rng.uniform(GOAL_XY_LOW, GOAL_XY_HIGH)
        if CARRY_RANGE[0] <= np.linalg.norm(xy - start) <= CARRY_RANGE[1] and accept(xy):
            return xy
    raise RuntimeError(
        f"no goal found near {start} in {MAX_TRIES} tries; loosen CARRY_RANGE or GOAL_CLEARANCE"
    )


def _sample_reach(rng: np.random.Generator, ranges: LayoutRanges) -> Episode:
    layout = sample_layout(rng, ranges)
    obj = _choose_block(rng)
    start = _grip_start(rng, layout, obj)
    return Episode(layout, obj, reach_goal(rng, start), start)


def reach_goal(rng: np.random.Generator, grip_start: np.ndarray) -> np.ndarray:
    """A reach goal: a point in the air near where the grip point starts, inside the workspace (other
    backends sample their reach goals with this too)."""
    low, high = np.array([*GOAL_XY_LOW, REACH_GOAL_Z[0]]), np.array([*GOAL_XY_HIGH, REACH_GOAL_Z[1]])
    return np.clip(grip_start + rng.uniform(-REACH_GOAL_OFFSET, REACH_GOAL_OFFSET, 3), low, high)


def _push_filter(obj: str, goal_xy: np.ndarray) -> BlockFilter:
    """The pushed block within PUSH_RANGE of the goal; the others off its path and the pusher's run-up."""

    def accept(name: str, xy: np.ndarray, placed: Mapping[str, np.ndarray]) -> bool:
        if name == obj:
            return bool(PUSH_RANGE[0] <= np.linalg.norm(goal_xy - xy) <= PUSH_RANGE[1])
        start = placed[obj]
        run_up = start - PUSH_RUN_UP * (goal_xy - start) / np.linalg.norm(goal_xy - start)
        return segment_distance(xy, run_up, goal_xy) >= PUSH_CORRIDOR

    return accept


def _sample_push(rng: np.random.Generator, ranges: LayoutRanges) -> Episode:
    # The goal first, then the pushed block within reach of it, then the others off its path and run-up;
    # a goal whose corridor leaves no room for the other blocks is drawn again.
    attempt_ranges = dataclasses.replace(ranges, max_tries=PUSH_LAYOUT_TRIES)
    for _ in range(MAX_TRIES):
        obj = _choose_block(rng)
        goal_xy = rng.uniform(GOAL_XY_LOW, GOAL_XY_HIGH)

        order = (obj, *(b for b in BLOCKS if b != obj))
        accept = _push_filter(obj, goal_xy)
        try:
            layout = sample_blocks(rng, attempt_ranges, sample_plates(rng, ranges), accept, order)
        except RuntimeError:
            continue
        return Episode(layout, obj, np.array([*goal_xy, RESTING_Z]), _grip_start(rng, layout, obj))
    raise RuntimeError(f"no push episode found in {MAX_TRIES} tries; loosen PUSH_RANGE or LayoutRanges")


def _sample_pick_and_place(rng: np.random.Generator, ranges: LayoutRanges) -> Episode:
    layout = sample_layout(rng, ranges)
    obj = _choose_block(rng)
    start = np.array(layout.blocks[obj][:2])
    goal = carry_goal(rng, start, RESTING_Z, lambda xy: _clear_of_others(xy, layout, obj))
    return Episode(layout, obj, goal, _grip_start(rng, layout, obj))


def carry_goal(
    rng: np.random.Generator, start_xy: np.ndarray, resting_z: float, clear: Callable[[np.ndarray], bool]
) -> np.ndarray:
    """A pick_and_place goal for an object resting at start_xy: in the air half the time, else on the table
    where `clear` allows (other backends sample their pick_and_place goals with this too)."""
    if rng.uniform() < AIR_GOAL_FRACTION:
        xy = _goal_xy_near(rng, start_xy, lambda _xy: True)
        return np.array([*xy, resting_z + rng.uniform(*AIR_GOAL_HEIGHT)])
    return np.array([*_goal_xy_near(rng, start_xy, clear), resting_z])


def _grip_point(state: SceneState, obj: str) -> np.ndarray:
    return np.asarray(state.ee_position)


def _object_centre(state: SceneState, obj: str) -> np.ndarray:
    return np.asarray(state.object(obj).position)


TABLETOP_SKILLS: Mapping[str, TabletopSkill] = {
    skill.name: skill
    for skill in (
        TabletopSkill("reach", _sample_reach, _grip_point, ABOVE_TOLERANCE, 50, "reach"),
        TabletopSkill("push", _sample_push, _object_centre, 0.03, 75, "push"),
        TabletopSkill("pick_and_place", _sample_pick_and_place, _object_centre, 0.03, 75, "pick"),
    )
}
"""The tabletop skills, keyed by exact name."""
