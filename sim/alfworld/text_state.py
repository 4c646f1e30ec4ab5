"""What an agent knows from ALFWorld's answers so far: the receptacles the room lists, where it went, where
it stands and where it saw each object. ALFWorld says each of these once, when it happens; the searcher
planner decides by them, and the LLM planner's prompt repeats the part its last k history lines lose.

The answers are read in the words of every known grammar (`grammar.GRAMMARS`): a walk's answer names the
receptacle in the sentence that describes it ("On the desk 1, you see ...", "The drawer 2 is closed."),
which both grammars write alike, since alfworld 0.2's arrival names a location ("You arrive at loc 5.")."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from sim.alfworld.grammar import GRAMMARS

_NAME = r"([\w ]+? \d+)"
# The walk's answer: where it arrived, then (in a game's answers) the receptacle's description.
_ARRIVE = re.compile(
    rf"You arrive at (?:the )?([^.]+)\.(?:\s*(?:On the {_NAME}, you see|The {_NAME} is (?:open|closed)\.))?"
)
_OPEN = re.compile(rf"You open the {_NAME}\.")
_SEEN = re.compile(r"you see (.+?)\.", re.IGNORECASE)
_CLOSED = re.compile(rf"The {_NAME} is closed\.")
_ANSWERS = ["You pick up the {o.name} from the {r.name}.", *(g.put_feedback for g in GRAMMARS.values())]
_MOVED = re.compile(
    "^(?:"
    + "|".join(re.escape(a.split(" {r.name}")[0]).replace(re.escape("{o.name}"), _NAME) for a in _ANSWERS)
    + ")"
)
_WORD = re.compile(r"[a-z]+")


def things(listing: str) -> list[str]:
    """'a bed 1, a drawer 2, and a desk 1' -> ['bed 1', 'drawer 2', 'desk 1']."""
    if listing.startswith("nothing"):
        return []
    items = re.split(r",\s*(?:and\s+)?|\s+and\s+", listing)
    return [re.sub(r"^(?:an?|the)\s+", "", item.strip()) for item in items if item.strip()]


def kind(name: str) -> str:
    """'mug 2' -> 'mug'."""
    return name.rsplit(" ", 1)[0]


@dataclass(frozen=True)
class SearchState:
    """What an agent knows from the room and the game's answers so far."""

    receptacles: list[str]  # in the order the room lists them
    visited: list[str]
    here: str | None
    closed_here: bool
    seen_at: dict[str, str]  # object -> receptacle where it was last seen, in the order first seen;
    # objects picked up or moved since are left out: they are in hand or where the agent put them
    visible_here: list[str]


def search_state(room: str, answers: Sequence[str]) -> SearchState:
    """The state after the room description `room` and the game's `answers` to the commands since."""
    listed = _SEEN.search(room.split("Your task is to:")[0])
    visited: list[str] = []
    seen_at: dict[str, str] = {}
    here: str | None = None
    visible: list[str] = []
    closed = False
    for text in answers:
        arrived, opened = _ARRIVE.search(text), _OPEN.search(text)
        if arrived:
            here = arrived.group(2) or arrived.group(3) or arrived.group(1)
            visible, closed = [], bool(_CLOSED.search(text))
            visited.append(here)
        if opened:
            here, closed = opened.group(1), False
        if (arrived or opened) and (seen := _SEEN.search(text)) and here is not None:
            visible = things(seen.group(1))
            seen_at.update((thing, here) for thing in visible)
        if moved := _MOVED.match(text):
            thing = next(filter(None, moved.groups()))
            seen_at.pop(thing, None)
            visible = [other for other in visible if other != thing]
    return SearchState(things(listed.group(1)) if listed else [], visited, here, closed, seen_at, visible)


def named_by(instruction: str, name: str) -> bool:
    """Whether the instruction names this object's kind ('mug 2' in 'heat some mug and put it in cabinet');
    whole words, so a knife is not a butterknife."""
    words = set(_WORD.findall(instruction.lower()))
    return all(word in words for word in kind(name).split())
