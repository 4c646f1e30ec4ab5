"""The goal as the planner writes it before it plans (`llm.goal_parse`): the instruction turned into goal
atoms in the scene's relation words, on one line in the order they are to be achieved, e.g.

    on(blue_block, yellow_block); on(red_block, blue_block); never(pick)

`on` and `above` are the predicates task goals are judged by (`sim.tabletop.predicates`); `never(skill)` is
a skill the instruction rules out ("without picking it up"). Every later decision shows these atoms, each
marked as holding in the scene or still to do, so the choice of the next subgoal reads the goal's progress
instead of recalling the instruction's words: the words are read once, here.

Atoms are written in the subgoal syntax, so `parse_subgoal` reads each one."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from policies.planning.parsing import ParseError, parse_subgoal
from sim.tabletop import SKILLS, SceneState
from sim.tabletop.goal import Atom

ARGUMENTS: dict[str, tuple[tuple[str, ...], ...]] = {
    "on": (("block",), ("plate", "block")),
    "above": (("block", "plate"),),
}
"""Each goal predicate the planner may write, with the object categories of its arguments."""
NEVER = "never"
SEPARATOR = "; "


class GoalError(ValueError):
    """A written goal that cannot be used; says which atom and why, in words the model can act on."""


@dataclass(frozen=True)
class PlannerGoal:
    """Goal atoms in the order to achieve them, and the skills the instruction rules out."""

    atoms: tuple[Atom, ...]
    forbidden: tuple[str, ...] = ()

    def __str__(self) -> str:
        return SEPARATOR.join([*map(str, self.atoms), *(f"{NEVER}({skill})" for skill in self.forbidden)])

    def render(self, state: SceneState) -> str:
        """One line per atom with whether it holds in `state`, then the ruled-out skills."""
        lines = [f"- {atom}: {'holds' if atom.holds(state) else 'to do'}" for atom in self.atoms]
        lines.extend(f"- {NEVER}({skill}): do not use {skill}" for skill in self.forbidden)
        return "\n".join(lines)


def parse_goal(text: str, state: SceneState) -> PlannerGoal:
    """The goal a model wrote, checked against the scene: known predicates and skills, objects of the
    scene of the right categories, at least one atom, no atom twice."""
    atoms: list[Atom] = []
    forbidden: list[str] = []
    pieces = [piece for line in text.splitlines() for piece in line.split(";") if piece.strip(" `.")]
    for number, piece in enumerate(pieces, start=1):
        where = f"goal atom {number} ({piece.strip()[:60]!r})"
        try:
            call = parse_subgoal(piece)
        except ParseError as err:
            raise GoalError(
                f"{where}: {err}; write atoms such as on(red_block, left_plate), separated by ;"
            ) from err
        if call is None:
            raise GoalError(f"{where}: done() is not a goal atom")
        if call.skill == NEVER:
            if len(call.args) != 1 or call.args[0] not in SKILLS:
                raise GoalError(f"{where}: never takes one skill: {', '.join(SKILLS)}")
            forbidden.append(call.args[0])
            continue
        if call.skill not in ARGUMENTS:
            raise GoalError(
                f"{where}: unknown predicate {call.skill}; known: {', '.join([*ARGUMENTS, NEVER])}"
            )
        _check_arguments(where, call.skill, call.args, state)
        atoms.append(Atom(call.skill, call.args))
    if not atoms:
        raise GoalError(
            "the goal names no atom; write atoms such as on(red_block, left_plate), separated by ;"
        )
    if len(set(atoms)) < len(atoms) or len(set(forbidden)) < len(forbidden):
        raise GoalError("the goal repeats an atom; write each once")
    return PlannerGoal(tuple(atoms), tuple(forbidden))


def _check_arguments(where: str, predicate: str, args: Sequence[str], state: SceneState) -> None:
    kinds = ARGUMENTS[predicate]
    if len(args) != len(kinds):
        plural = "s" if len(kinds) > 1 else ""
        raise GoalError(f"{where}: {predicate} takes {len(kinds)} argument{plural}, got {len(args)}")
    for arg, allowed in zip(args, kinds, strict=True):
        if arg not in state.objects:
            raise GoalError(f"{where}: no object {arg!r} in the scene; objects: {', '.join(state.objects)}")
        if state.object(arg).category not in allowed:
            raise GoalError(
                f"{where}: {arg} is a {state.object(arg).category}, {predicate} wants {'|'.join(allowed)}"
            )
    if len(set(args)) < len(args):
        raise GoalError(f"{where}: an object cannot relate to itself")
