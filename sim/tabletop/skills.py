"""The skill vocabulary shared by the planner and the controller.

A subgoal names a skill and its object arguments. Each skill has typed parameters, a pure grounding
function (scene -> goal vector) and a success predicate built from `predicates`. The goal vector is
the 3-D point the skill drives to: the grip point for `reach`, the object's centre otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from sim.subgoal import Subgoal
from sim.tabletop.errors import ArgumentTypeError, ArityError, UnknownSkillError
from sim.tabletop.layout import slot_offsets
from sim.tabletop.model import TABLE_TOP_Z
from sim.tabletop.predicates import above, held, hover_point, lifted, on
from sim.tabletop.state import Category, SceneState

PICK_HEIGHT = 0.08
"""A picked object's lower face is raised to this height above the table (m)."""
SLOT_CLEARANCE = 0.045
"""A slot is free when no other block's centre lies within this distance of it (m)."""


@dataclass(frozen=True)
class Param:
    """A skill parameter and the object categories it accepts."""

    name: str
    categories: tuple[Category, ...]

    def __str__(self) -> str:
        return f"{self.name}: {'|'.join(self.categories)}"


@dataclass(frozen=True)
class Skill:
    """A skill's signature, grounding and success test."""

    name: str
    params: tuple[Param, ...]
    ground: Callable[..., np.ndarray]
    """(state, *args) -> goal vector (3,)."""
    success: Callable[..., bool]
    """(state, *args) -> whether the subgoal is achieved."""
    achieved: Callable[..., np.ndarray]
    """(state, *args) -> the point the skill drives towards its goal vector (grip point or object centre)."""
    description: str

    @property
    def signature(self) -> str:
        """e.g. 'place(obj: block, target: plate|block)'."""
        return f"{self.name}({', '.join(map(str, self.params))})"


def plate_slots(state: SceneState, plate: str) -> np.ndarray:
    """Centres (n, 2) of the placement slots along a plate's long side (y)."""
    base = state.object(plate)
    offsets = slot_offsets(float(base.size[1]))
    return base.position[:2] + np.stack([np.zeros(len(offsets)), offsets], axis=1)


def free_slot(state: SceneState, obj: str, plate: str) -> np.ndarray:
    """The free slot nearest to the object (xy); with none free, the one farthest from other blocks."""
    slots = plate_slots(state, plate)
    others = [state.objects[name].position[:2] for name in state.names("block") if name != obj]
    if others:
        clearance = np.min(np.linalg.norm(slots[:, None, :] - np.array(others)[None], axis=2), axis=1)
    else:
        clearance = np.full(len(slots), np.inf)
    free = clearance >= SLOT_CLEARANCE
    if not free.any():
        return slots[int(np.argmax(clearance))]
    distance = np.linalg.norm(slots - state.object(obj).position[:2], axis=1)
    return slots[int(np.argmin(np.where(free, distance, np.inf)))]


def resting_point(state: SceneState, obj: str, target: str) -> np.ndarray:
    """Where the object's centre goes to rest on the target: a free plate slot, or a block's top."""
    size = state.object(obj).size[2]
    base = state.object(target)
    if base.category == "plate":
        x, y = free_slot(state, obj, target)
        return np.array([x, y, TABLE_TOP_Z + size / 2])
    return np.array([base.position[0], base.position[1], base.top_z + size / 2])


def _pick_point(state: SceneState, obj: str) -> np.ndarray:
    target = state.object(obj)
    return np.array([target.position[0], target.position[1], TABLE_TOP_Z + PICK_HEIGHT + target.size[2] / 2])


def _picked(state: SceneState, obj: str) -> bool:
    return held(state, obj) and lifted(state, obj)


def _grip_point(state: SceneState, *_args: str) -> np.ndarray:
    return state.ee_position


def _object_centre(state: SceneState, obj: str, *_args: str) -> np.ndarray:
    return state.object(obj).position


BLOCK: tuple[Category, ...] = ("block",)
SKILLS: Mapping[str, Skill] = {
    skill.name: skill
    for skill in (
        Skill(
            "reach",
            (Param("obj", ("block", "plate")),),
            hover_point,
            above,
            _grip_point,
            "move the gripper above obj",
        ),
        Skill("pick", (Param("obj", BLOCK),), _pick_point, _picked, _object_centre, "grasp obj and lift it"),
        Skill(
            "place",
            (Param("obj", BLOCK), Param("target", ("plate", "block"))),
            resting_point,
            on,
            _object_centre,
            "put the held obj down on target",
        ),
        Skill(
            "push",
            (Param("obj", BLOCK), Param("plate", ("plate",))),
            resting_point,
            on,
            _object_centre,
            "push obj along the table onto plate without grasping it",
        ),
    )
}
"""The skill vocabulary, keyed by exact name."""


def check_subgoal(subgoal: Subgoal, state: SceneState) -> Skill:
    """Validate a subgoal against the vocabulary and the scene; return its skill.

    Raises UnknownSkillError, ArityError, UnknownObjectError or ArgumentTypeError (all SubgoalError),
    each saying what was wrong and what is valid.
    """
    skill = SKILLS.get(subgoal.skill)
    if skill is None:
        raise UnknownSkillError(subgoal.skill, SKILLS)
    if len(subgoal.args) != len(skill.params):
        raise ArityError(
            f"{subgoal}: {skill.name} takes {len(skill.params)} argument(s), got {len(subgoal.args)}; "
            f"usage: {skill.signature}"
        )
    for param, arg in zip(skill.params, subgoal.args, strict=True):
        if not isinstance(arg, str):
            raise ArgumentTypeError(f"{subgoal}: argument {param.name} must be an object name, got {arg!r}")
        category = state.object(arg).category
        if category not in param.categories:
            valid = [name for kind in param.categories for name in state.names(kind)]
            raise ArgumentTypeError(
                f"{subgoal}: argument {param.name} of {skill.signature} must be a "
                f"{'|'.join(param.categories)}, got the {category} {arg!r}; valid: {', '.join(valid)}"
            )
    if len(set(subgoal.args)) != len(subgoal.args):
        raise ArgumentTypeError(f"{subgoal}: an object cannot be its own target; usage: {skill.signature}")
    return skill


def ground(subgoal: Subgoal, state: SceneState) -> np.ndarray:
    """The subgoal's goal vector (float64, shape (3,)) in the current scene."""
    return np.asarray(check_subgoal(subgoal, state).ground(state, *subgoal.args), dtype=np.float64)


def subgoal_succeeded(subgoal: Subgoal, state: SceneState) -> bool:
    """Whether the subgoal holds in the current scene."""
    return bool(check_subgoal(subgoal, state).success(state, *subgoal.args))


def goal_distance(subgoal: Subgoal, state: SceneState) -> float:
    """Metres between what the skill moves (grip point or object) and its goal vector: progress feedback."""
    skill = check_subgoal(subgoal, state)
    achieved = skill.achieved(state, *subgoal.args)
    return float(np.linalg.norm(achieved - skill.ground(state, *subgoal.args)))
