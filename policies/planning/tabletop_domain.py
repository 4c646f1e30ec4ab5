"""The MuJoCo tabletop as a planning domain: the skill vocabulary of `sim.tabletop.skills`, the scene as
text (objects, what rests on what, what the gripper holds) and every well-typed subgoal in the scene."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from policies.planning.domain import SkillParam, SkillSpec
from sim.tabletop import SKILLS, SceneState, SubgoalError, check_subgoal
from sim.tabletop.predicates import held, on
from sim.tabletop.skills import Skill, Subgoal


def _spec(skill: Skill) -> SkillSpec:
    params = tuple(SkillParam(p.name, "|".join(p.categories)) for p in skill.params)
    return SkillSpec(skill.name, params, skill.description)


def _support(state: SceneState, name: str) -> str:
    """What an object rests on, in words: 'on the table', 'on left_plate', 'held by the gripper'."""
    if held(state, name):
        return "held by the gripper"
    for other in state.objects:
        if other != name and on(state, name, other):
            return f"on {other}"
    return "on the table"


class TabletopDomain:
    """Skills from `sim.tabletop.SKILLS`; objects and their categories from the SceneState."""

    name = "tabletop"
    prompt = "tabletop"

    def skills(self) -> Sequence[SkillSpec]:
        return tuple(_spec(skill) for skill in SKILLS.values())

    def render_observation(self, observation: SceneState) -> str:
        lines = []
        for name, obj in observation.objects.items():
            x, y, z = (round(float(v), 2) for v in obj.position)
            where = "" if obj.category == "plate" else f", {_support(observation, name)}"
            lines.append(f"- {name} ({obj.category}) at x={x:.2f} y={y:.2f} z={z:.2f}{where}")
        holding = [name for name in observation.names("block") if held(observation, name)]
        lines.append(f"- gripper: {'holding ' + holding[0] if holding else 'empty'}")
        return "\n".join(lines)

    def valid_subgoals(self, observation: SceneState) -> Sequence[Subgoal]:
        """Each skill applied to each tuple of distinct scene objects whose categories fit its parameters."""
        subgoals = []
        for skill in SKILLS.values():
            choices = [
                [name for kind in param.categories for name in observation.names(kind)]
                for param in skill.params
            ]
            for args in itertools.product(*choices):
                if len(set(args)) == len(args):
                    subgoals.append(Subgoal(skill.name, args))
        return tuple(subgoals)

    def explain_invalid(self, subgoal: Subgoal, observation: SceneState) -> str:
        try:
            check_subgoal(subgoal, observation)
        except SubgoalError as err:
            return str(err)
        return f"{subgoal} is not a valid subgoal in this scene"
