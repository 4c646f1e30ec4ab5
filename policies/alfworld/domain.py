"""ALFWorld's text households as a planning domain: the text skill vocabulary of `sim.alfworld.skills`,
the room and the game's last answer as the observation, and the admissible subgoals as the valid set."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from policies.planning.domain import SkillParam, SkillSpec, Subgoal
from policies.planning.planner import StepRecord
from sim.alfworld import TEXT_SKILLS, TextSkillError, admissible_subgoals, command_for
from sim.alfworld.grammar import canonical_answer
from sim.alfworld.task_text import TaskAsk, parse_task
from sim.alfworld.text_state import kind, named_by, search_state

# What each parameter of the text skills names, for the prompt.
PARAM_TYPES = {"recep": "receptacle", "obj": "object", "target": "object|receptacle"}
# Skills that change nothing in the room: a go_to after them sees what it saw before.
LOOKING = frozenset({"go_to", "examine"})
# Skills that change only what is seen where the robot stands: a go_to elsewhere after them sees the same.
OPENING = frozenset({"open", "close"})
# Each skill that undoes the other's change when given the same arguments.
UNDOES = {"take": "put", "put": "take", "open": "close", "close": "open"}
# What a text skill done to the held object leaves it, for the progress line.
TREATED = {"heat": "heated", "cool": "cooled", "clean": "cleaned"}


@dataclass(frozen=True)
class AlfworldView:
    """What the ALFWorld planner sees: the room as first described, the game's last answer and the
    commands the game admits now (the bridge's TextObservation carries all three), with the game's state
    (won, over, commands played) for the loop and, when the world runs it, ALFWorld's planner expert's plan
    from here for the expert planner (None: not offered)."""

    room: str
    last: str
    admissible_commands: tuple[str, ...]
    won: bool = False
    done: bool = False
    steps: int = 0
    expert_plan: tuple[str, ...] | None = None


def _without_task(text: str) -> str:
    return text.split("Your task is to:")[0].replace("-= Welcome to TextWorld, ALFRED! =-", "").strip()


class AlfworldDomain:
    name = "alfworld"
    prompt = Path(__file__).with_name("prompts") / "alfworld"

    def skills(self) -> Sequence[SkillSpec]:
        return tuple(
            SkillSpec(s.name, tuple(SkillParam(p, PARAM_TYPES[p]) for p in s.params), s.description)
            for s in TEXT_SKILLS.values()
        )

    def render_observation(self, observation: AlfworldView) -> str:
        """The room as first described and the game's last answer (the task is the prompt's instruction),
        in the canonical grammar's words: a game of alfworld 0.2's grammar reads as the one of 0.4's the
        adapters were trained on."""
        room, last = _without_task(observation.room), _without_task(canonical_answer(observation.last))
        return room if last == room else f"{room}\nLast: {last}"

    def predict_observation(self, observation: AlfworldView, subgoal: Subgoal) -> str | None:
        return None  # the next observation is the game's own text: unknown until the game answers

    def render_progress(self, instruction: str, history: Sequence[StepRecord]) -> str:
        """The object in hand and what was done to it, and where the objects the task names were seen (not
        those moved since). ALFWorld's text says each only once, when it happens: a small model that has
        lost the take from the last k lines cools the wrong thing or wanders, and one that has lost a
        sighting cannot learn the searcher's walk straight back to it (stage 5 walked on past mugs it had
        seen; trained with this line, the shipped adapter wins 63/72 fresh games against 59/72)."""
        held, treated = holding(history)
        held_line = "Holding: nothing" if held is None else f"Holding: {held}"
        if treated:
            held_line += f" ({', '.join(treated)})"
        sightings = search_state("", [record.message for record in history]).seen_at.items()
        seen = [f"{obj} at {at}" for obj, at in sightings if obj != held and named_by(instruction, obj)]
        return f"{held_line}\nSeen: {', '.join(seen) or 'nothing the task names yet'}"

    def valid_subgoals(self, observation: AlfworldView) -> Sequence[Subgoal]:
        return tuple(admissible_subgoals(observation.admissible_commands))

    def finish_allowed(self, observation: AlfworldView) -> bool:
        """done() only once the game is won: ALFWorld ends a won game itself and has no command for giving
        up, so before that done() could only forfeit the steps left. No demonstration ever answers it (0 of
        the searcher's 5,145 decisions), yet the shipped adapter said it in two games it was losing (after 22
        and 44 steps)."""
        return observation.won

    def explain_invalid(self, subgoal: Subgoal, observation: AlfworldView) -> str:
        try:
            command_for(subgoal, observation.admissible_commands)
        except TextSkillError as err:
            return str(err)
        return f"{subgoal} is not a valid subgoal now"

    def futile(self, subgoal: Subgoal, instruction: str, history: Sequence[StepRecord]) -> str | None:
        """Going back to a receptacle gone to since the last change (the room is as it was then; opening or
        closing a receptacle changes what is seen there only, so it does not count), undoing
        the last change (putting an object back where it was just taken from, taking back what was just put,
        closing what was just opened), repeating it (switching the lamp again), examining what was examined
        since the last change (opening it is one: it shows what is inside), heating, cooling or cleaning the
        held object a second time, or a take or put the task cannot need (`off_task`).
        Seeing only the last k steps, the shipped adapters lost most of their evaluation games in such
        moves until the budget ran out; the searcher they imitate makes none of them (0 of its 5,145
        decisions in the training demonstrations: 2,822 go_to, 2,115 take, put, open and close, 52 toggle
        and 156 heat, cool and clean)."""
        if (why := off_task(subgoal, instruction, history)) is not None:
            return why
        last = next((r for r in reversed(history) if r.success and r.subgoal.skill not in LOOKING), None)
        if subgoal.skill in TREATED:
            held, treated = holding(history)
            if held == subgoal.args[0] and TREATED[subgoal.skill] in treated:
                return (
                    f"{subgoal}: {held} is {TREATED[subgoal.skill]} already; do the next step of the task, "
                    "such as putting it where the task says"
                )
        if last is not None and subgoal == last.subgoal:
            return f"{subgoal} was your last change already; do the next step of the task instead"
        if subgoal.skill == "go_to":
            if _since_last_change(subgoal, history, LOOKING | OPENING):
                return (
                    f"{subgoal}: you went there after your last change and nothing there has changed "
                    "since; go somewhere you have not looked yet, or act where you are"
                )
            return None
        if subgoal.skill == "examine" and _since_last_change(subgoal, history, LOOKING):
            return (
                f"{subgoal}: you examined it after your last change and it has not changed since; "
                "do the next step of the task instead"
            )
        if (
            last is not None
            and UNDOES.get(subgoal.skill) == last.subgoal.skill
            and subgoal.args == last.subgoal.args
        ):
            return (
                f"{subgoal} would undo your last change, {last.subgoal}; do the next step of the task instead"
            )
        return None


def _since_last_change(subgoal: Subgoal, history: Sequence[StepRecord], unchanging: frozenset[str]) -> bool:
    """Whether `subgoal` was played after the last successful subgoal whose skill is not `unchanging`."""
    for record in reversed(history):
        if record.success and record.subgoal.skill not in unchanging:
            return False
        if record.subgoal == subgoal:
            return True
    return False


def off_task(subgoal: Subgoal, instruction: str, history: Sequence[StepRecord]) -> str | None:
    """Why a take or put cannot serve the task `instruction` states in ALFWorld's words (`parse_task`; a
    user's own words leave every move open): each of its six tasks takes only objects of the kind it names
    and puts them only in a receptacle of the kind it names (a pick-two task both in the same one), and an
    object put there as asked (given the treatment the task asks) stays. The searcher makes none of these
    moves (0 of its 364 takes and 312 puts); 16 of the 20 fresh games stage 6 lost without these rules had
    them: a pan put in the sinkbasin for the countertop, potatoes, spoons and kettles carried about, two
    knives put in two drawers, and, once the first put had left the last k steps, a pick-two task's first
    pan, pot, CD or candle taken back. An object put down before its treatment may be taken back: putting
    a spatula away uncleaned, then fetching and cleaning it, is how stage 6 won a clean game."""
    ask = parse_task(instruction)
    if ask is None or subgoal.skill not in ("take", "put"):
        return None
    obj, recep = subgoal.args
    if kind(obj) != ask.obj:
        return f"{subgoal}: the task does not ask for any {kind(obj)}; find the {ask.obj} it names"
    placed = done_as_asked(ask, history)
    if subgoal.skill == "take":
        if placed.get(obj) == recep:
            return (
                f"{subgoal} would undo your progress: {obj} is in {recep} as the task asks; do the next "
                "step of the task, such as finding the next object it names"
            )
        return None
    if ask.recep is None:
        return f"{subgoal}: the task asks you to look at {obj} under the lamp, not to put it down"
    if kind(recep) != ask.recep:
        return f"{subgoal}: the task asks for {obj} in a {ask.recep}, not a {kind(recep)}"
    first = next((at for other, at in placed.items() if other != obj and at != recep), None)
    if first is not None:
        return f"{subgoal}: the task wants both in one place and the first is in {first}; put {obj} there too"
    return None


def done_as_asked(ask: TaskAsk, history: Sequence[StepRecord]) -> dict[str, str]:
    """Where each object lies that `history` put down as `ask` asks (an object and a receptacle of its
    kinds, given its treatment) and did not take again."""
    where: dict[str, str] = {}
    for i, record in enumerate(history):
        if not record.success or record.subgoal.skill not in ("put", "take"):
            continue
        obj = record.subgoal.args[0]
        if record.subgoal.skill == "take":
            where.pop(obj, None)
        elif (kind(obj), kind(record.subgoal.args[1])) == (ask.obj, ask.recep) and (
            ask.treatment is None or ask.treatment in holding(history[:i])[1]
        ):
            where[obj] = record.subgoal.args[1]
    return where


def holding(history: Sequence[StepRecord]) -> tuple[str | None, list[str]]:
    """The object in hand after `history` and what was done to it since it was taken (heated, ...)."""
    held: str | None = None
    treated: list[str] = []
    for record in history:
        if not record.success:
            continue
        skill = record.subgoal.skill
        if skill == "take":
            held, treated = record.subgoal.args[0], []
        elif skill == "put":
            held, treated = None, []
        elif skill in TREATED and held is not None:
            treated.append(TREATED[skill])
    return held, treated
