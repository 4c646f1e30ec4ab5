"""What the LLM planner needs from a world: its skill vocabulary, its observation as text, and the finite set
of subgoals that are valid right now.

A world becomes plannable by an LLM by implementing `PlanningDomain` for its observation type in its own
package (policies/tabletop/, policies/alfworld/) and registering it as a `World`
(policies/planning/registry.py) in policies/worlds.py. The planner never looks inside an observation:

- `skills()`: the vocabulary, each skill with its typed parameters; shown to the model in the prompt.
- `render_observation(obs)`: the observation as text for the prompt (a scene listing, a text game's
  last observation, ...).
- `predict_observation(observation, subgoal)`: the observation text (as `render_observation` writes it) that
  `subgoal` leaves if it succeeds as intended, or None where the world cannot say (tabletop: written from
  its symbolic scene; ALFWorld: None, its next observation is the game's own text). The LLM planner
  prefills the next prompt from it while the subgoal executes (`LLMPlanner.anticipate`); a wrong
  prediction costs only that reuse, never an answer.
- `render_progress(instruction, history)`: what the whole history implies that the observation does not
  show and the last k history lines may no longer (ALFWorld: the object held and what was done to it, and
  where the objects the instruction names were seen; tabletop: nothing, its scene shows the gripper).
  The `$progress` placeholder of the user template.
- `valid_subgoals(obs)`: every subgoal that is valid in this observation (tabletop: each skill applied to
  each combination of scene objects whose categories fit its parameters; ALFWorld: the admissible subgoals
  its bridge lists). Constrained decoding lets the model produce exactly one of these or `done()`; an
  unconstrained model's output is checked against them.
- `finish_allowed(obs)`: whether `done()` is among the valid answers now (tabletop: not with a block
  in the gripper; a domain without such a rule returns True).
- `explain_invalid(subgoal, obs)`: why a subgoal that is not in that set is invalid, in words the model
  can act on (unknown object, wrong argument type, ... and what is valid instead).
- `futile(subgoal, instruction, history)`: why a valid subgoal cannot bring the task closer (ALFWorld:
  going back to a receptacle seen since the last change, undoing a put the task asks for, taking an object
  it does not name), or None. `valid_now` drops these from the valid set, so a model that sees only the
  last k steps cannot walk in circles or wander off the task.
- `prompt`: the path stem of the world's prompt templates, beside its domain (`<prompt>.system.txt`,
  `<prompt>.user.txt`, e.g. policies/tabletop/prompts/tabletop), so each world words its role and rules
  itself.

Subgoals are `Subgoal(skill, args)`: text form `skill(arg, ...)`, one line; a skill is an identifier and an
argument is made of ASCII letters, digits, `_`, `-`, `.` and inner spaces (`goto(countertop 1)` is fine).
`format_subgoal`/`parse_subgoal` in policies/planning/parsing.py convert between the two and are the only
place that knows the syntax; `is_well_formed` there checks a domain's subgoals against it.

Using the planner with a domain (any backend, in-process or in a node):

    planner = make_planner("llm", LLMConfig(), domain="tabletop")  # policies.worlds
    outcome = run_closed_loop(planner, instruction, observe, execute, task=task, log=DecisionLog(path))

`observe()` returns the domain's observation (it becomes `PlanningContext.state`), `execute(subgoal)` returns
a `StepRecord`, and `task` (optional) is anything with `success(observation) -> bool`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, runtime_checkable

from policies.planning.planner import StepRecord
from sim.subgoal import Subgoal

ObsT = TypeVar("ObsT")
ObsT_contra = TypeVar("ObsT_contra", contravariant=True)


@dataclass(frozen=True)
class SkillParam:
    """A skill parameter: its name and, as text, the kinds of object it accepts (e.g. 'block|plate')."""

    name: str
    type: str

    def __str__(self) -> str:
        return f"{self.name}: {self.type}"


@dataclass(frozen=True)
class SkillSpec:
    """A skill as the planner sees it: name, typed parameters and what it does, in one line."""

    name: str
    params: tuple[SkillParam, ...]
    description: str

    @property
    def signature(self) -> str:
        """e.g. 'place(obj: block, target: plate|block)'."""
        return f"{self.name}({', '.join(map(str, self.params))})"


class PlanningDomain(Protocol[ObsT_contra]):
    """A world as the LLM planner sees it (see the module docstring for the contract)."""

    name: str
    prompt: Path

    def skills(self) -> Sequence[SkillSpec]:
        """The skill vocabulary, in the order the prompt lists it."""
        ...

    def render_observation(self, observation: ObsT_contra) -> str:
        """The observation as prompt text (may span lines)."""
        ...

    def predict_observation(self, observation: ObsT_contra, subgoal: Subgoal) -> str | None:
        """The observation text after `subgoal` succeeds as intended, or None where it cannot be known."""
        ...

    def render_progress(self, instruction: str, history: Sequence[StepRecord]) -> str:
        """What the history implies now, as prompt text ('' when the observation shows it all)."""
        ...

    def valid_subgoals(self, observation: ObsT_contra) -> Sequence[Subgoal]:
        """Every subgoal valid in this observation; finite, without duplicates, never including done()."""
        ...

    def finish_allowed(self, observation: ObsT_contra) -> bool:
        """Whether the model may answer done() in this observation."""
        ...

    def explain_invalid(self, subgoal: Subgoal, observation: ObsT_contra) -> str:
        """Why `subgoal` (not among `valid_subgoals`) is invalid, and what is valid instead."""
        ...

    def futile(self, subgoal: Subgoal, instruction: str, history: Sequence[StepRecord]) -> str | None:
        """Why `subgoal` cannot bring `instruction` closer after `history` (it repeats or undoes what was
        done, or does what the task never needs), or None when it may help."""
        ...


@runtime_checkable
class GoalDomain(Protocol[ObsT_contra]):
    """A domain whose planner may read the instruction once, as a goal written in the scene's own terms, and
    then plan every decision from that goal's progress (`llm.goal_parse`; tabletop)."""

    def parse_goal(self, text: str, observation: ObsT_contra) -> Any:
        """The goal a model wrote; ValueError saying what is wrong, in words the model can act on."""
        ...

    def render_goal(self, goal: Any, observation: ObsT_contra) -> str:
        """The goal with its progress in this observation, as prompt text (the `$goal` placeholder)."""
        ...


def valid_now(
    domain: PlanningDomain[ObsT],
    observation: ObsT,
    instruction: str,
    history: Sequence[StepRecord],
    task_rules: bool = True,
) -> list[Subgoal]:
    """The domain's valid subgoals less the futile ones; all of them when every one is futile (the
    model must still be able to answer), or without `task_rules` (to measure what the rules add)."""
    valid = list(domain.valid_subgoals(observation))
    if not task_rules:
        return valid
    useful = [subgoal for subgoal in valid if domain.futile(subgoal, instruction, history) is None]
    return useful or valid


__all__ = ["GoalDomain", "ObsT", "PlanningDomain", "SkillParam", "SkillSpec", "Subgoal", "valid_now"]
