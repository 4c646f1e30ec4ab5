"""Tasks as data: an instruction, a seeded layout and a goal of predicate atoms that must all hold."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sim.tabletop.errors import UnknownTaskError
from sim.tabletop.layout import Layout, LayoutRanges, sample_blocks, sample_layout, sample_plates
from sim.tabletop.model import BLOCKS, PLATES
from sim.tabletop.predicates import PREDICATES
from sim.tabletop.state import SceneState

PUSH_CORRIDOR = 0.08
"""Other blocks keep this far from the line a pushed block travels along (m)."""
PUSH_RUN_UP = 0.08
"""Length of the pusher's approach behind the pushed block, kept clear as well (m)."""


@dataclass(frozen=True)
class Atom:
    """A named predicate applied to objects, e.g. on(red_block, left_plate)."""

    predicate: str
    args: tuple[str, ...]

    def holds(self, state: SceneState) -> bool:
        """Evaluate the predicate in a scene."""
        return PREDICATES[self.predicate](state, *self.args)

    def __str__(self) -> str:
        return f"{self.predicate}({', '.join(self.args)})"


@dataclass(frozen=True)
class Task:
    """One seeded episode's task: what to say, where things start and what counts as done."""

    name: str
    instruction: str
    seed: int
    layout: Layout
    goal: tuple[Atom, ...]
    skills: tuple[str, ...]
    """Skills the task is to be solved with (push forbids grasping)."""

    def success(self, state: SceneState) -> bool:
        """Every goal atom holds."""
        return all(atom.holds(state) for atom in self.goal)


Builder = Callable[[np.random.Generator, LayoutRanges], tuple[str, Layout, tuple[Atom, ...]]]


@dataclass(frozen=True)
class TaskSpec:
    """A registered task: its skills and the seeded builder of instruction, layout and goal."""

    name: str
    skills: tuple[str, ...]
    build: Builder
    description: str


def _words(name: str) -> str:
    return name.replace("_", " ")


def _choose(rng: np.random.Generator, names: tuple[str, ...]) -> str:
    return names[int(rng.integers(len(names)))]


def _reach(rng: np.random.Generator, ranges: LayoutRanges) -> tuple[str, Layout, tuple[Atom, ...]]:
    obj = _choose(rng, BLOCKS)
    return f"move the gripper above the {_words(obj)}", sample_layout(rng, ranges), (Atom("above", (obj,)),)


def _pick_place(rng: np.random.Generator, ranges: LayoutRanges) -> tuple[str, Layout, tuple[Atom, ...]]:
    obj, plate = _choose(rng, BLOCKS), _choose(rng, PLATES)
    layout = sample_layout(rng, ranges)
    return f"put the {_words(obj)} on the {_words(plate)}", layout, (Atom("on", (obj, plate)),)


def segment_distance(point: np.ndarray, start: np.ndarray, end: np.ndarray) -> float:
    """Distance from a point to the segment start-end."""
    span = end - start
    t = np.clip(np.dot(point - start, span) / np.dot(span, span), 0.0, 1.0)
    return float(np.linalg.norm(point - (start + t * span)))


def _push(rng: np.random.Generator, ranges: LayoutRanges) -> tuple[str, Layout, tuple[Atom, ...]]:
    obj, plate = _choose(rng, BLOCKS), _choose(rng, PLATES)
    plates = sample_plates(rng, ranges)
    goal = np.array(plates[plate])

    def clear_path(name: str, xy: np.ndarray, placed: Mapping[str, np.ndarray]) -> bool:
        # The pushed block is placed first; the others keep off its path and the pusher's run-up.
        if name == obj:
            return True
        start = placed[obj]
        run_up = start - PUSH_RUN_UP * (goal - start) / np.linalg.norm(goal - start)
        return segment_distance(xy, run_up, goal) >= PUSH_CORRIDOR

    order = (obj, *(b for b in BLOCKS if b != obj))
    layout = sample_blocks(rng, ranges, plates, clear_path, order)
    return f"push the {_words(obj)} onto the {_words(plate)}", layout, (Atom("on", (obj, plate)),)


def _stack(rng: np.random.Generator, ranges: LayoutRanges) -> tuple[str, Layout, tuple[Atom, ...]]:
    top, base = (BLOCKS[i] for i in rng.choice(len(BLOCKS), size=2, replace=False))
    layout = sample_layout(rng, ranges)
    return f"stack the {_words(top)} on the {_words(base)}", layout, (Atom("on", (top, base)),)


def _sort(rng: np.random.Generator, ranges: LayoutRanges) -> tuple[str, Layout, tuple[Atom, ...]]:
    assignment = {block: PLATES[int(rng.integers(len(PLATES)))] for block in BLOCKS}
    layout = sample_layout(rng, ranges)
    parts = []
    for plate in PLATES:
        colours = [block.removesuffix("_block") for block in BLOCKS if assignment[block] == plate]
        if colours:
            listed = colours[0] if len(colours) == 1 else f"{', '.join(colours[:-1])} and {colours[-1]}"
            parts.append(f"the {listed} {'block' if len(colours) == 1 else 'blocks'} on the {_words(plate)}")
    goal = tuple(Atom("on", (block, plate)) for block, plate in assignment.items())
    return f"sort the blocks: put {' and '.join(parts)}", layout, goal


PICK_AND_PLACE = ("pick", "place")
TASKS: Mapping[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("reach", ("reach",), _reach, "move the gripper above a block"),
        TaskSpec("pick_place", PICK_AND_PLACE, _pick_place, "put one block on a plate"),
        TaskSpec("push", ("push",), _push, "push one block onto a plate without grasping it"),
        TaskSpec("stack", PICK_AND_PLACE, _stack, "put one block on another"),
        TaskSpec("sort", PICK_AND_PLACE, _sort, "put every block on its plate (a seeded colour->plate map)"),
    )
}
"""Registered tasks, keyed by exact name."""


def make_task(name: str, seed: int, ranges: LayoutRanges | None = None) -> Task:
    """Build a registered task for a seed; the same (name, seed, ranges) always gives the same task."""
    spec = TASKS.get(name)
    if spec is None:
        raise UnknownTaskError(name, TASKS)
    rng = np.random.default_rng(seed)
    instruction, layout, goal = spec.build(rng, ranges or LayoutRanges())
    return Task(name=name, instruction=instruction, seed=seed, layout=layout, goal=goal, skills=spec.skills)
