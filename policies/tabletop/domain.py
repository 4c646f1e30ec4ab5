"""The MuJoCo tabletop as a planning domain: the skill vocabulary of `sim.tabletop.skills`, the scene as
text and every subgoal that is well typed and executable now.

Executable now means the skill's precondition on the gripper holds, as ALFWorld's admissible commands
are the executable ones: with an empty gripper, reach, pick and push (and done()); with a block held, only
placing that block. Without these rules the zero-shot SmolLM2-135M picked forever, and then, offered
done() with a block in the gripper, stopped there.

The scene text names each object, its category and what it rests on, and what the gripper holds: the
relations a plan depends on, and the progress of a goal made of them (which blocks are on which plate or
block already). Instructions may also name a block by where it is ("the block closest to the right plate",
"the leftmost block"), so the blocks on the table are listed in those orders too. Coordinates are left out:
grounding turns names into positions, and a small model reads orders better than numbers."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path

import numpy as np

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


def _orders(state: SceneState, blocks: Sequence[str]) -> list[str]:
    """The blocks from the robot's left (+y) to its right, and by distance to each plate, nearest first."""
    xy = {name: state.object(name).position[:2] for name in blocks}
    lines = [
        f"- blocks on the table from left to right: {', '.join(sorted(blocks, key=lambda n: -xy[n][1]))}"
    ]
    for plate in state.names("plate"):
        centre = state.object(plate).position[:2]
        nearest = sorted(blocks, key=lambda n: float(np.linalg.norm(xy[n] - centre)))
        lines.append(f"- blocks on the table from nearest to farthest from {plate}: {', '.join(nearest)}")
    return lines


class TabletopDomain:
    """Skills from `sim.tabletop.SKILLS`; objects and their categories from the SceneState."""

    name = "tabletop"
    prompt = Path(__file__).with_name("prompts") / "tabletop"

    def skills(self) -> Sequence[SkillSpec]:
        return tuple(_spec(skill) for skill in SKILLS.values())

    def render_observation(self, observation: SceneState) -> str:
        lines = []
        on_table = []
        for name, obj in observation.objects.items():
            support = "" if obj.category == "plate" else _support(observation, name)
            lines.append(f"- {name} ({obj.category}){': ' + support if support else ''}")
            if support == "on the table":
                on_table.append(name)
        holding = _held_block(observation)
        lines.append(f"- gripper: {'holding ' + holding if holding else 'empty'}")
        if on_table:
            lines.extend(_orders(observation, on_table))
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
