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
grounding turns names into positions, and a small model reads orders better than numbers.

Because the text is symbolic, the scene a subgoal leaves when it succeeds as intended can be written
without simulating it (`predict_observation`): the moved block's support changes, the gripper's load with
it, and the block leaves (it never joins: no skill puts a block on the table) the orders of the blocks on
the table, whose other blocks keep their order. Both texts come from one `Scene`, so they cannot drift."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from policies.planning.domain import SkillParam, SkillSpec
from policies.planning.planner import StepRecord
from policies.tabletop.goals import PlannerGoal, parse_goal
from sim.tabletop import SKILLS, SceneState, SubgoalError, check_subgoal
from sim.tabletop.predicates import held, on
from sim.tabletop.skills import Skill, Subgoal

HELD = "held by the gripper"
ON_TABLE = "on the table"


def _spec(skill: Skill) -> SkillSpec:
    params = tuple(SkillParam(p.name, "|".join(p.categories)) for p in skill.params)
    return SkillSpec(skill.name, params, skill.description)


def _support(state: SceneState, name: str) -> str:
    """What an object rests on, in words: 'on the table', 'on left_plate', 'held by the gripper'."""
    if held(state, name):
        return HELD
    for other in state.objects:
        if other != name and on(state, name, other):
            return f"on {other}"
    return ON_TABLE


def _held_block(state: SceneState) -> str | None:
    return next((name for name in state.names("block") if held(state, name)), None)


def _orders(state: SceneState, blocks: Sequence[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """The blocks from the robot's left (+y) to its right, and by distance to each plate, nearest first."""
    xy = {name: state.object(name).position[:2] for name in blocks}
    orders = [("left to right", tuple(sorted(blocks, key=lambda n: -xy[n][1])))]
    for plate in state.names("plate"):
        centre = state.object(plate).position[:2]
        nearest = sorted(blocks, key=lambda n: float(np.linalg.norm(xy[n] - centre)))
        orders.append((f"nearest to farthest from {plate}", tuple(nearest)))
    return tuple(orders)


@dataclass(frozen=True)
class Scene:
    """What the prompt shows of a scene, symbolically: each object's category and what it rests on ('' for
    a plate), and the blocks on the table in each order an instruction may refer to."""

    objects: tuple[tuple[str, str, str], ...]  # (name, category, support), in scene order
    orders: tuple[tuple[str, tuple[str, ...]], ...]  # (e.g. 'left to right', the blocks on the table so)

    @classmethod
    def of(cls, state: SceneState) -> Scene:
        objects = tuple(
            (name, obj.category, "" if obj.category == "plate" else _support(state, name))
            for name, obj in state.objects.items()
        )
        return cls(objects, _orders(state, [name for name, _, support in objects if support == ON_TABLE]))

    @property
    def holding(self) -> str | None:
        return next((name for name, _, support in self.objects if support == HELD), None)

    def moved(self, block: str, support: str) -> Scene:
        """The scene with `block` resting on `support` instead, every other object where it was."""
        return replace(
            self,
            objects=tuple((n, c, support if n == block else s) for n, c, s in self.objects),
            orders=tuple((way, tuple(b for b in blocks if b != block)) for way, blocks in self.orders),
        )

    def after(self, subgoal: Subgoal) -> Scene | None:
        """The scene `subgoal` leaves if it succeeds as intended (None for a skill this does not know)."""
        if subgoal.skill == "reach":
            return self
        if subgoal.skill == "pick":
            return self.moved(subgoal.args[0], HELD)
        if subgoal.skill in ("place", "push"):
            return self.moved(subgoal.args[0], f"on {subgoal.args[1]}")
        return None

    def render(self) -> str:
        lines = [f"- {n} ({c}){': ' + s if s else ''}" for n, c, s in self.objects]
        holding = self.holding
        lines.append(f"- gripper: {'holding ' + holding if holding else 'empty'}")
        lines.extend(f"- blocks on the table from {way}: {', '.join(b)}" for way, b in self.orders if b)
        return "\n".join(lines)


class TabletopDomain:
    """Skills from `sim.tabletop.SKILLS`; objects and their categories from the SceneState."""

    name = "tabletop"
    prompt = Path(__file__).with_name("prompts") / "tabletop"

    def skills(self) -> Sequence[SkillSpec]:
        return tuple(_spec(skill) for skill in SKILLS.values())

    def render_observation(self, observation: SceneState) -> str:
        return Scene.of(observation).render()

    def predict_observation(self, observation: SceneState, subgoal: Subgoal) -> str | None:
        """The scene text after `subgoal` succeeds as intended, from the symbolic scene (module docstring)."""
        after = Scene.of(observation).after(subgoal)
        return None if after is None else after.render()

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

    def parse_goal(self, text: str, observation: SceneState) -> PlannerGoal:
        return parse_goal(text, observation)

    def render_goal(self, goal: PlannerGoal, observation: SceneState) -> str:
        return goal.render(observation)
