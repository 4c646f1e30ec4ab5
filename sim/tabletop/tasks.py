"""Tasks as data: an instruction, a seeded layout and a goal of predicate atoms that must all hold.

`TASKS` registers every family by name (`sim.tabletop.families` draws its goal and layout,
`sim.tabletop.phrasing` words it). `make_task(name, seed)` gives the canonical sentence, as the project
has always said it; `make_task(name, seed, split="train" | "heldout")` draws a phrasing, and for composed
families a combination, from that split only. The split's words come from their own random stream, so a
seed's layout and goal are the same in every split of a single-skill family.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

import sim.tabletop.families as families
from sim.tabletop.errors import UnknownTaskError
from sim.tabletop.families import PUSH_CORRIDOR, PUSH_RUN_UP, Builder, segment_distance
from sim.tabletop.goal import Atom, Task
from sim.tabletop.layout import LayoutRanges
from sim.tabletop.phrasing import SPLITS, Split, draw, render

PHRASING_STREAM = 1
"""Seeds the phrasing's random stream as (seed, PHRASING_STREAM), apart from the layout's."""


@dataclass(frozen=True)
class TaskSpec:
    """A registered task family: its skills, what its instruction rules out, and its seeded builder."""

    name: str
    skills: tuple[str, ...]
    build: Builder
    description: str
    forbidden: tuple[str, ...] = ()
    composed: bool = False
    """A combination of single-skill goals (its combinations are split into training and held-out)."""


PICK_AND_PLACE = ("pick", "place")
TASKS: Mapping[str, TaskSpec] = {
    spec.name: spec
    for spec in (
        TaskSpec("reach", ("reach",), families.reach, "move the gripper above a block"),
        TaskSpec("pick_place", PICK_AND_PLACE, families.pick_place, "put one block on a plate"),
        TaskSpec(
            "push", ("push",), families.push, "push one block onto a plate without grasping it", ("pick",)
        ),
        TaskSpec("stack", PICK_AND_PLACE, families.stack, "put one block on another"),
        TaskSpec(
            "sort", PICK_AND_PLACE, families.sort, "put every block on its plate (a seeded colour->plate map)"
        ),
        TaskSpec(
            "multi_place",
            PICK_AND_PLACE,
            families.multi_place,
            "put two to four blocks on one plate",
            composed=True,
        ),
        TaskSpec(
            "tower", PICK_AND_PLACE, families.tower, "build a tower of three or four blocks", composed=True
        ),
        TaskSpec(
            "clear_plate",
            PICK_AND_PLACE,
            families.clear_plate,
            "move everything on one plate to the other",
            composed=True,
        ),
        TaskSpec("swap", PICK_AND_PLACE, families.swap, "two blocks exchange plates", composed=True),
        TaskSpec(
            "relational",
            PICK_AND_PLACE,
            families.relational,
            "put a block named by its place in the scene on a plate",
            composed=True,
        ),
    )
}
"""Registered tasks, keyed by exact name."""

TASK_GROUPS: Mapping[str, tuple[str, ...]] = {
    "templated": tuple(name for name, spec in TASKS.items() if not spec.composed),
    "compositions": tuple(name for name, spec in TASKS.items() if spec.composed),
    "all": tuple(TASKS),
}
"""Names that stand for several tasks on the command line."""


def task_names(name: str) -> tuple[str, ...]:
    """A task name or a group's names (`TASK_GROUPS`); raises UnknownTaskError listing both."""
    if name in TASK_GROUPS:
        return TASK_GROUPS[name]
    if name not in TASKS:
        raise UnknownTaskError(name, [*TASKS, *TASK_GROUPS])
    return (name,)


def make_task(name: str, seed: int, ranges: LayoutRanges | None = None, split: Split | None = None) -> Task:
    """Build a registered task for a seed; the same (name, seed, ranges, split) always gives the same task.

    split None: the canonical instruction (any combination); 'train' or 'heldout': a phrasing and, for a
    composed family, a combination of that split only.
    """
    spec = TASKS.get(name)
    if spec is None:
        raise UnknownTaskError(name, TASKS)
    if split is not None and split not in SPLITS:
        raise ValueError(
            f"unknown split {split!r}; known: {', '.join(SPLITS)} (or none, the canonical phrasing)"
        )
    draft = spec.build(np.random.default_rng(seed), ranges or LayoutRanges(), split)
    words = None if split is None else np.random.default_rng((seed, PHRASING_STREAM))
    phrasing = draw(name, split, words)
    return Task(
        name=name,
        instruction=render(phrasing, draft.slots, words),
        seed=seed,
        layout=draft.layout,
        goal=draft.goal,
        skills=spec.skills,
        phrasing=phrasing.id,
        split=split,
        forbidden=spec.forbidden,
    )


__all__ = [
    "PUSH_CORRIDOR",
    "PUSH_RUN_UP",
    "TASKS",
    "TASK_GROUPS",
    "Atom",
    "Task",
    "TaskSpec",
    "make_task",
    "segment_distance",
    "task_names",
]
