"""The text-environment contract: all that planners, skills, evaluation and the bridge node know about a
text household (the text counterpart of the batched environment contract in `sim/`).

One environment plays one game at a time:

- `reset(game)` loads the game file (a `game.tw-pddl` path) and returns the first observation, whose `text`
  is the room description followed by "Your task is to: ...".
- `step(command)` plays one command and returns the next observation. Any string is accepted: one that is
  not among `admissible_commands` changes nothing and answers "Nothing happens." (as ALFWorld does), but
  still costs a step. After `max_steps` steps, or once `won`, `done` is true and further steps raise
  `GameOverError`.
- `expert_plan()` is the planner expert's plan (Fast Downward on the game's PDDL) from the current state,
  empty when won; environments made without the expert raise `ExpertUnavailableError`.

Errors a caller can act on: `GameFileError` (a game that is missing or cannot be read, named by its path).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Protocol


class GameFileError(RuntimeError):
    """A game's file is missing or unreadable; the message names the file and says what to do."""


class GameOverError(RuntimeError):
    """A step after the episode ended (won, or out of steps): reset first."""


class ExpertUnavailableError(RuntimeError):
    """The environment was made without the planner expert."""


@dataclass(frozen=True)
class TextObservation:
    text: str  # the feedback of the last command; after reset, the room and the task
    task: str  # the task sentence, e.g. "put a clean mug in cabinet"
    admissible_commands: tuple[str, ...]  # sorted, as ALFWorld lists them
    won: bool
    done: bool  # won, or the step budget is spent
    steps: int  # commands played since reset


class TextEnv(Protocol):
    max_steps: int

    def reset(self, game: Path) -> TextObservation: ...

    def step(self, command: str) -> TextObservation: ...

    def expert_plan(self) -> tuple[str, ...]: ...

    def close(self) -> None: ...
