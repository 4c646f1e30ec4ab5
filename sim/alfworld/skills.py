"""Text skills: the subgoal vocabulary of ALFWorld households and its mapping onto admissible commands.

The text counterpart of the goal-conditioned controller: a subgoal such as `take(mug 1, desk 1)` becomes the
command "take mug 1 from desk 1" when the game admits it, is played, and its success is read from the
game's feedback. A skill's words are the game's own: `put(mug 1, desk 1)` is "move mug 1 to desk 1" in a game
of alfworld 0.4's grammar and "put mug 1 in/on desk 1" in one of 0.2's (`grammar.GRAMMARS`), whichever the
game admits; the env refuses a game of any other grammar at reset. The planner's vocabulary for this domain
is `TEXT_SKILLS`; the finite set of valid subgoals at a moment is
`admissible_subgoals(observation.admissible_commands)`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from sim.alfworld.contract import TextEnv, TextObservation
from sim.alfworld.grammar import GRAMMARS
from sim.subgoal import Subgoal

NOTHING_HAPPENS = "Nothing happens."


class TextSkillError(ValueError):
    """A subgoal that cannot become a command now: unknown skill, wrong arguments, or not admissible."""


@dataclass(frozen=True)
class TextSkill:
    name: str
    params: tuple[str, ...]
    templates: tuple[str, ...]  # ALFWorld's command with {param} slots, in each known grammar's words
    description: str  # for prompts and --help

    def commands(self, args: tuple[str, ...]) -> tuple[str, ...]:
        """The command in each known grammar's words (a game admits one of them)."""
        values = dict(zip(self.params, args, strict=True))
        return tuple(template.format(**values) for template in self.templates)

    def patterns(self) -> tuple[re.Pattern[str], ...]:
        compiled = []
        for template in self.templates:
            regex = re.escape(template)
            for param in self.params:
                regex = regex.replace(re.escape(f"{{{param}}}"), f"(?P<{param}>.+?)")
            compiled.append(re.compile(f"^{regex}$"))
        return tuple(compiled)


TEXT_SKILLS: dict[str, TextSkill] = {
    skill.name: skill
    for skill in (
        TextSkill("go_to", ("recep",), ("go to {recep}",), "walk to a receptacle and look at it"),
        TextSkill("open", ("recep",), ("open {recep}",), "open a closed receptacle"),
        TextSkill("close", ("recep",), ("close {recep}",), "close an open receptacle"),
        TextSkill(
            "take", ("obj", "recep"), ("take {obj} from {recep}",), "pick an object up from a receptacle"
        ),
        TextSkill(
            "put",
            ("obj", "recep"),
            tuple(dict.fromkeys(g.skill_template() for g in GRAMMARS.values())),
            "put the held object in or on a receptacle",
        ),
        TextSkill(
            "heat", ("obj", "recep"), ("heat {obj} with {recep}",), "heat the held object with a microwave"
        ),
        TextSkill(
            "cool", ("obj", "recep"), ("cool {obj} with {recep}",), "cool the held object with a fridge"
        ),
        TextSkill(
            "clean", ("obj", "recep"), ("clean {obj} with {recep}",), "clean the held object in a sink"
        ),
        TextSkill("toggle", ("obj",), ("use {obj}",), "switch a lamp or another device on or off"),
        TextSkill("examine", ("target",), ("examine {target}",), "look closely at an object or receptacle"),
    )
}
_PATTERNS = [(skill, pattern) for skill in TEXT_SKILLS.values() for pattern in skill.patterns()]
_SUBGOAL = re.compile(r"^\s*([a-z_]+)\s*\((.*)\)\s*$")


def parse_subgoal(text: str) -> Subgoal:
    """'take(mug 1, desk 1)' -> Subgoal; a TextSkillError that says what is wrong otherwise."""
    match = _SUBGOAL.match(text)
    if not match:
        raise TextSkillError(f"{text!r} is not a subgoal: write skill(arg, ...), e.g. go_to(cabinet 1)")
    args = tuple(a.strip() for a in match.group(2).split(",")) if match.group(2).strip() else ()
    if any(c in arg for arg in args for c in "()"):
        raise TextSkillError(
            f"{text!r}: unbalanced parentheses; write skill(arg, ...), e.g. go_to(cabinet 1)"
        )
    subgoal = Subgoal(match.group(1), args)
    _skill(subgoal)
    return subgoal


def _skill(subgoal: Subgoal) -> TextSkill:
    skill = TEXT_SKILLS.get(subgoal.skill)
    if skill is None:
        raise TextSkillError(f"unknown skill {subgoal.skill!r}; known: {', '.join(TEXT_SKILLS)}")
    if len(subgoal.args) != len(skill.params) or not all(a.strip() for a in subgoal.args):
        raise TextSkillError(
            f"{subgoal}: {skill.name} takes {len(skill.params)} non-empty argument(s) "
            f"({', '.join(skill.params)}), got {len(subgoal.args)}"
        )
    return skill


def subgoal_for_command(command: str) -> Subgoal | None:
    """The subgoal a command carries out, or None for commands outside the vocabulary (look, inventory)."""
    for skill, pattern in _PATTERNS:
        match = pattern.match(command.strip())
        if match:
            return Subgoal(skill.name, tuple(match.group(p) for p in skill.params))
    return None


def admissible_subgoals(commands: tuple[str, ...] | list[str]) -> list[Subgoal]:
    """The valid subgoals now, in the game's command order: the finite set a planner may choose from."""
    return [s for s in map(subgoal_for_command, commands) if s is not None]


def command_for(subgoal: Subgoal, admissible: tuple[str, ...] | list[str]) -> str:
    """The admissible command that carries out `subgoal`; TextSkillError (never a game step) otherwise."""
    commands = _skill(subgoal).commands(subgoal.args)
    command = next((c for c in commands if c in admissible), None)
    if command is None:
        same_skill = [str(s) for s in admissible_subgoals(admissible) if s.skill == subgoal.skill]
        hint = (
            f"admissible {subgoal.skill} subgoals now: {', '.join(same_skill)}"
            if same_skill
            else (f"no {subgoal.skill} subgoal is admissible now")
        )
        words = " or ".join(map(repr, commands))
        raise TextSkillError(f"{subgoal} is not admissible here ({words}); {hint}")
    return command


@dataclass(frozen=True)
class SkillOutcome:
    success: bool
    message: str
    observation: TextObservation | None  # after the command; None when nothing was played
    command: str = ""  # the command played, "" when none was


def execute_subgoal(env: TextEnv, observation: TextObservation, subgoal: Subgoal) -> SkillOutcome:
    """Play `subgoal` in `env`, whose current observation is `observation`; success is read from the
    game's answer. Never raises for a bad subgoal: that is a failed outcome without a game step."""
    if observation.done:
        return SkillOutcome(False, "the episode is over: reset to a game first", None)
    try:
        command = command_for(subgoal, observation.admissible_commands)
    except TextSkillError as err:
        return SkillOutcome(False, str(err), None)
    after = env.step(command)
    success = not after.text.startswith(NOTHING_HAPPENS)
    return SkillOutcome(success, after.text, after, command)
