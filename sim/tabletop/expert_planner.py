"""The expert planner: a closed-loop oracle that turns a task's goal atoms into skill subgoals.

It is asked again after every subgoal, with the current scene, so it recovers from a dropped block or
a disturbed stack the same way an LLM planner is asked to: by looking at the scene and the goal. Goal atoms
are achieved in the order the task lists them (a tower's from the bottom up); a block that sits on the block
to be moved, or on the block to be stacked onto, is first set aside on the plate with the most room.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from sim.tabletop.goal import Atom, Task
from sim.tabletop.predicates import held, on
from sim.tabletop.skills import SLOT_CLEARANCE, Subgoal, plate_slots
from sim.tabletop.state import SceneState


def held_block(state: SceneState) -> str | None:
    return next((name for name in state.names("block") if held(state, name)), None)


def resting_on(state: SceneState, base: str) -> str | None:
    """The block resting on `base`, if any."""
    return next((name for name in state.names("block") if name != base and on(state, name, base)), None)


def roomiest_plate(state: SceneState, obj: str) -> str:
    """The plate with the most free slots for `obj` (the first plate on a tie)."""

    def free(plate: str) -> int:
        others = [state.objects[n].position[:2] for n in state.names("block") if n != obj]
        slots = plate_slots(state, plate)
        if not others:
            return len(slots)
        gaps = np.min(np.linalg.norm(slots[:, None, :] - np.array(others)[None], axis=2), axis=1)
        return int(np.sum(gaps >= SLOT_CLEARANCE))

    return max(state.names("plate"), key=free)


def _set_aside(state: SceneState, block: str) -> Subgoal:
    if held(state, block):
        return Subgoal("place", (block, roomiest_plate(state, block)))
    return Subgoal("pick", (block,))


def _achieve_above(task: Task, atom: Atom, state: SceneState) -> Subgoal:
    return Subgoal("reach", atom.args)


def _achieve_on(task: Task, atom: Atom, state: SceneState) -> Subgoal:
    obj, target = atom.args
    if "pick" not in task.skills:
        return Subgoal("push", (obj, target))
    holding = held_block(state)
    if holding is not None and holding != obj:
        return _set_aside(state, holding)
    for blocked in (obj, target) if state.object(target).category == "block" else (obj,):
        blocker = resting_on(state, blocked)
        if blocker is not None and blocker != obj:
            return _set_aside(state, blocker)
    if holding == obj:
        return Subgoal("place", (obj, target))
    return Subgoal("pick", (obj,))


ACHIEVERS: Mapping[str, Callable[[Task, Atom, SceneState], Subgoal]] = {
    "above": _achieve_above,
    "on": _achieve_on,
}
"""How the expert makes each goal predicate true, keyed by predicate name."""


class ExpertPlanner:
    """Returns the next subgoal for the first goal atom that does not hold, or None when done."""

    def next_subgoal(self, task: Task, state: SceneState) -> Subgoal | None:
        """The next subgoal in the current scene; None once every goal atom holds."""
        for atom in task.goal:
            if not atom.holds(state):
                return ACHIEVERS[atom.predicate](task, atom, state)
        return None
