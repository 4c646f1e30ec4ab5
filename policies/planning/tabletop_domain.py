"""The MuJoCo tabletop as a planning domain: the skill vocabulary of `sim.tabletop.skills`, the scene as
text and every subgoal that is well typed and executable now.

Executable now means the skill's precondition on the gripper holds, as ALFWorld's admissible commands
are the executable ones: with an empty gripper, reach, pick and push (and done()); with a block held, only
placing that block. Without these rules the zero-shot SmolLM2-135M picked forever, and then, offered
done() with a block in the gripper, stopped there.

The scene text names each object, its category and what it rests on, and what the gripper holds: the
relations a plan depends on. Coordinates are left out: grounding turns names into positions, and a small
model reads a shorter prompt faster and better."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from policies.planning.domain import SkillParam, SkillSpec
from policies.planning.planner import StepRecord
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


def _held_block(state: SceneState) -> str | None:
    return next((name for name in state.names("block") if held(state, name)), None)


class TabletopDomain:
    """Skills from `sim.tabletop.SKILLS`; objects and their categories from the SceneState."""

    name = "tabletop"
    prompt = "tabletop"

    def skills(self) -> Sequence[SkillSpec]:
        return tuple(_spec(skill) for skill in SKILLS.values())

    def render_observation(self, observation: SceneState) -> str:
        lines = []
        for name, obj in observation.objects.items():
            where = "" if obj.category == "plate" else f": {_support(observation, name)}"
            lines.append(f"- {name} ({obj.category}){where}")
        holding = _held_block(observation)
        lines.append(f"- gripper: {'holding ' + holding if holding else 'empty'}")
        return "\n".join(lines)

    def render_progress(self, instruction: str, history: Sequence[StepRecord]) -> str:
        return ""  # the scene lists where every block is and what the gripper holds

    def valid_subgoals(self, observation: SceneState) -> Sequence[Subgoal]:
        """Each skill applied to each tuple of distinct scene objects whose categories fit its parameters,
        where the skill's gripper precondition holds."""
        subgoals = []
        holding = _held_block(observation)
        for skill in SKILLS.values():
            if (skill.name == "place") != (holding is not None):
                continue
            choices = [
                [name for kind in param.categories for name in observation.names(kind)]
                for param in skill.params
            ]
            for args in itertools.product(*choices):
                if len(set(args)) == len(args) and (holding is None or args[0] == holding):
                    subgoals.append(Subgoal(skill.name, args))
        return tuple(subgoals)

    def finish_allowed(self, observation: SceneState) -> bool:
        return _held_block(observation) is None

    def explain_invalid(self, subgoal: Subgoal, observation: SceneState) -> str:
        try:
            check_subgoal(subgoal, observation)
        except SubgoalError as err:
            return str(err)
        holding = _held_block(observation)
        if holding is not None:
            return f"{subgoal}: the gripper holds {holding}; place it first, e.g. place({holding}, <target>)"
        if subgoal.skill == "place":
            return f"{subgoal}: the gripper holds nothing; pick {subgoal.args[0]} first"
        return f"{subgoal} is not a valid subgoal in this scene"

    def futile(self, subgoal: Subgoal, instruction: str, history: Sequence[StepRecord]) -> str | None:
        return None  # the scene shows everything a subgoal changes; a repeat is the loop guard's to catch
