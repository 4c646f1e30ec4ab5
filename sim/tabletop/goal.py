"""What a task asks for: goal atoms over the scene's predicates, and the task that bundles them with an
instruction and a seeded layout."""

from __future__ import annotations

from dataclasses import dataclass

from sim.tabletop.layout import Layout
from sim.tabletop.predicates import PREDICATES
from sim.tabletop.state import SceneState


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
    phrasing: str = ""
    """Id of the instruction's template in `sim.tabletop.phrasing.PHRASINGS` ('' when built by hand)."""
    split: str | None = None
    """The grammar split it was drawn from: None (canonical), 'train' or 'heldout'."""
    forbidden: tuple[str, ...] = ()
    """Skills the instruction rules out ('push ... onto', 'without picking it up': pick): using one fails
    the task even when its goal atoms hold."""

    def success(self, state: SceneState) -> bool:
        """Every goal atom holds."""
        return all(atom.holds(state) for atom in self.goal)

    def forbids(self, skill: str) -> bool:
        """Whether the instruction rules this skill out."""
        return skill in self.forbidden
