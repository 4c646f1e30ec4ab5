"""The command grammars of ALFWorld's game files: the words a game's commands and answers use.

Each `game.tw-pddl` carries its own grammar, and the official files come in two. As released for alfworld
0.2.x (the files ReAct, Reflexion and ExpeL evaluate on) a put is `put X in/on Y`, answered "You put the X
in/on the Y.", and a walk is answered with the location ("You arrive at loc 5."); alfworld 0.4.x's files say
`move X to Y`, "You move the X to the Y." and name the receptacle on arrival. Everything else the text skills
use is worded alike in both. A game is read for these three sentences, and one whose grammar is neither is
refused with an error naming its file, rather than played with commands it never admits.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sim.alfworld.contract import GameFileError


@dataclass(frozen=True)
class CommandGrammar:
    """The words one grammar gives the put and the walk, as its `.twl2` text writes them."""

    name: str
    put: str  # the put command's template, in the grammar's slots ({o} the object, {r} the receptacle)
    put_feedback: str  # the game's answer to a put
    arrival: str  # the first sentence of the game's answer to a walk

    def skill_template(self) -> str:
        """The put command with the text skills' parameter names, e.g. 'put {obj} in/on {recep}'."""
        return self.put.replace("{o}", "{obj}").replace("{r}", "{recep}")


GRAMMARS: dict[str, CommandGrammar] = {
    grammar.name: grammar
    for grammar in (
        CommandGrammar(
            "alfworld-0.4",
            "move {o} to {r}",
            "You move the {o.name} to the {r.name}.",
            "You arrive at {r.name}.",
        ),
        CommandGrammar(
            "alfworld-0.2",
            "put {o} in/on {r}",
            "You put the {o.name} in/on the {r.name}.",
            "You arrive at {lend.name}.",
        ),
    )
}
"""The grammars the text skills know, by name; the first is the one alfworld 0.4 ships (`alfred.twl2`)."""

_PUT = re.compile(r'action PutObject\s*\{\s*template\s*::\s*"([^"]*)"')
_RHS = r'"{rule}"\s*:\s*\[\s*\{{\s*"rhs"\s*:\s*"([^"#]*?)\s*(?:#[^"]*)?"'
_PUT_FEEDBACK = re.compile(_RHS.format(rule=r"PutObject\.feedback"))
_ARRIVAL = re.compile(_RHS.format(rule=r"GotoLocation\.feedback"))


def grammar_words(grammar_text: str) -> tuple[str | None, str | None, str | None]:
    """The put template, the put's answer and the arrival sentence a grammar text writes (None: absent)."""
    found = (pattern.search(grammar_text) for pattern in (_PUT, _PUT_FEEDBACK, _ARRIVAL))
    put, feedback, arrival = (match.group(1) if match else None for match in found)
    return put, feedback, arrival


def grammar_of(grammar_text: str, game_file: Path) -> CommandGrammar:
    """The known grammar `grammar_text` (the `grammar` of `game_file`) is written in; a GameFileError naming
    the file, the words it found and the known grammars' otherwise."""
    words = grammar_words(grammar_text)
    for grammar in GRAMMARS.values():
        if words == (grammar.put, grammar.put_feedback, grammar.arrival):
            return grammar
    put, feedback, arrival = words
    known = "; ".join(f"{g.name}: {g.put!r}, {g.put_feedback!r}, {g.arrival!r}" for g in GRAMMARS.values())
    raise GameFileError(
        f"game file {game_file} has a grammar the text skills do not know (put command {put!r}, its answer "
        f"{feedback!r}, arrival {arrival!r}); known grammars: {known}. Regenerate the game, or add its words "
        "to GRAMMARS in sim/alfworld/grammar.py"
    )


def rewrite(grammar_text: str, to: CommandGrammar, game_file: Path) -> str:
    """`grammar_text`, written in a known grammar, reworded into `to` (how a game of the other grammar is
    authored: the official 0.4 files are the 0.2 ones with exactly these words replaced)."""
    source = grammar_of(grammar_text, game_file)
    for old, new in zip(
        (source.put, source.put_feedback, source.arrival), (to.put, to.put_feedback, to.arrival), strict=True
    ):
        grammar_text = grammar_text.replace(old, new)
    return grammar_text


CANONICAL = GRAMMARS["alfworld-0.4"]
"""The words the project's generated games, demonstrations and shipped adapters use."""
_LOC_ARRIVAL = re.compile(  # followed by the description of where it arrived, which names it
    r"You arrive at loc \d+\."
    r"(?=\s*(?:On the (?P<on>[\w ]+? \d+), you see|The (?P<at>[\w ]+? \d+) is (?:open|closed)\.))"
)


def _answer_pattern(template: str) -> re.Pattern[str]:
    regex = re.escape(template)
    for slot, group in (("{o.name}", "o"), ("{r.name}", "r")):
        regex = regex.replace(re.escape(slot), rf"(?P<{group}>[\w ]+? \d+)")
    return re.compile(regex)


_PUT_ANSWERS = [
    _answer_pattern(g.put_feedback) for g in GRAMMARS.values() if g.put_feedback != CANONICAL.put_feedback
]


def canonical_answer(text: str) -> str:
    """A game's answer in the canonical grammar's words, so a planner reads the same whichever grammar the
    game speaks: 0.2's put answer reworded, and its arrival at "loc N" named by the receptacle the answer
    goes on to describe (as 0.4's arrival names it). Text in the canonical words is returned unchanged."""
    text = _LOC_ARRIVAL.sub(lambda m: f"You arrive at {m.group('on') or m.group('at')}.", text)
    for pattern in _PUT_ANSWERS:
        text = pattern.sub(
            lambda m: CANONICAL.put_feedback.replace("{o.name}", m["o"]).replace("{r.name}", m["r"]), text
        )
    return text
