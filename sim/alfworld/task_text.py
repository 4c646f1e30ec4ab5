"""The task an ALFWorld instruction states, read with ALFWorld's own goal templates (the ones its games'
descriptions are filled from), so that a planner can tell a move the task needs from one it never does."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

from alfworld.gen import goal_library

from sim.alfworld.rooms import TASK_TYPES

# What each task type asks be done to its object before it is put down.
TREATMENTS = {
    "pick_clean_then_place_in_recep": "cleaned",
    "pick_heat_then_place_in_recep": "heated",
    "pick_cool_then_place_in_recep": "cooled",
}


@dataclass(frozen=True)
class TaskAsk:
    """What a task asks for, by kind ('mug', 'cabinet'), as its template names them."""

    obj: str
    recep: str | None  # where the object goes; None for a look task
    treatment: str | None  # 'cleaned', 'heated' or 'cooled'; None when the task asks none


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    slots = {"{obj}": r"(?P<obj>\w+)", "{recep}": r"(?P<recep>\w+)", "{toggle}": r"(?P<toggle>\w+)"}
    patterns = []
    for task_type in TASK_TYPES:
        for template in goal_library.gdict[task_type]["templates"]:
            regex = re.escape(template)
            for slot, group in slots.items():
                regex = regex.replace(re.escape(slot), group)
            patterns.append((task_type, re.compile(regex)))
    return tuple(patterns)


def parse_task(instruction: str) -> TaskAsk | None:
    """The task `instruction` states in one of ALFWorld's templates of its six task types ('put a clean mug
    in cabinet'), or None for any other words (a user's own), about which nothing is assumed."""
    text = instruction.strip().rstrip(".").lower()
    for task_type, pattern in _patterns():
        if found := pattern.fullmatch(text):
            return TaskAsk(found["obj"], found.groupdict().get("recep"), TREATMENTS.get(task_type))
    return None
