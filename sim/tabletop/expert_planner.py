"""The expert planner: a closed-loop oracle that turns a task's goal atoms into skill subgoals.

It is asked again after every subgoal, with the current scene, so it recovers from a dropped block or
a disturbed stack the same way an LLM planner is asked to: by looking at the scene and the goal.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from sim.tabletop.predicates import held
from sim.tabletop.skills import Subgoal
from sim.tabletop.state import SceneState
from sim.tabletop.tasks import Atom, Task


def _achieve_above(task: Task, atom: Atom, state: SceneState) -> Subgoal:
    return Subgoal("reach", atom.args)


def _achieve_on(task: Task, atom: Atom, state: SceneState) -> Subgoal:
    obj, target = atom.args
    if "pick" not in task.skills:
        return Subgoal("push", (obj, target))
    if held(state, obj):
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
