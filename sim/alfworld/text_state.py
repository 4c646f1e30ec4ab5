"""What an agent knows from ALFWorld's answers so far: the receptacles the room lists, where it went, where
it stands and where it saw each object. ALFWorld says each of these once, when it happens; the searcher
planner decides by them, and the LLM planner's prompt repeats the part its last k history lines lose."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

_ARRIVE = re.compile(r"You arrive at (?:the )?([\w ]+? \d+)\.")
_OPEN = re.compile(r"You open the ([\w ]+? \d+)\.")
_SEEN = re.compile(r"you see (.+?)\.", re.IGNORECASE)
_CLOSED = re.compile(r"The ([\w ]+? \d+) is closed\.")
_MOVED = re.compile(r"^You (?:pick up|move) the ([\w ]+? \d+) (?:from|to) the")
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
            here, visible, closed = arrived.group(1), [], bool(_CLOSED.search(text))
            visited.append(here)
        if opened:
            here, closed = opened.group(1), False
        if (arrived or opened) and (seen := _SEEN.search(text)) and here is not None:
            visible = things(seen.group(1))
            seen_at.update((thing, here) for thing in visible)
        if moved := _MOVED.match(text):
            seen_at.pop(moved.group(1), None)
            visible = [thing for thing in visible if thing != moved.group(1)]
    return SearchState(things(listed.group(1)) if listed else [], visited, here, closed, seen_at, visible)


def named_by(instruction: str, name: str) -> bool:
    """Whether the instruction names this object's kind ('mug 2' in 'heat some mug and put it in cabinet');
    whole words, so a knife is not a butterknife."""
    words = set(_WORD.findall(instruction.lower()))
    return all(word in words for word in kind(name).split())
