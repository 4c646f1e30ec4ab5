"""ALFWorld text households without ROS: game generation, the text-env contract and its ALFWorld
implementation, and the text skill library.

`import alfworld` sets `ALFWORLD_DATA` to `~/.cache/alfworld` (creating it) when it is unset, so the user's
own setting is read here first, before anything imports alfworld: `OFFICIAL_DATA` is that setting or None.
"""

from __future__ import annotations

import os
from pathlib import Path

OFFICIAL_DATA: Path | None = Path(os.environ["ALFWORLD_DATA"]) if os.environ.get("ALFWORLD_DATA") else None


def official_split(split: str = "valid_unseen") -> Path | None:
    """A split of the official data set when ALFWORLD_DATA points at it (valid_unseen is the standard
    evaluation split: 134 games of the six task types)."""
    return None if OFFICIAL_DATA is None else OFFICIAL_DATA / "json_2.1.1" / split


from sim.alfworld.contract import (  # noqa: E402
    ExpertUnavailableError,
    GameFileError,
    GameOverError,
    TextEnv,
    TextObservation,
)
from sim.alfworld.env import AlfworldTextEnv, read_game_file  # noqa: E402
from sim.alfworld.games import SPLITS, GameEntry, discover_games, make_games  # noqa: E402
from sim.alfworld.grammar import GRAMMARS, CommandGrammar  # noqa: E402
from sim.alfworld.rooms import TASK_TYPE_LABELS, TASK_TYPES  # noqa: E402
from sim.alfworld.skills import (  # noqa: E402
    TEXT_SKILLS,
    SkillOutcome,
    TextSkillError,
    admissible_subgoals,
    command_for,
    execute_subgoal,
    parse_subgoal,
    subgoal_for_command,
)

__all__ = [
    "GRAMMARS",
    "OFFICIAL_DATA",
    "SPLITS",
    "TASK_TYPES",
    "TASK_TYPE_LABELS",
    "TEXT_SKILLS",
    "AlfworldTextEnv",
    "CommandGrammar",
    "ExpertUnavailableError",
    "GameEntry",
    "GameFileError",
    "GameOverError",
    "SkillOutcome",
    "TextEnv",
    "TextObservation",
    "TextSkillError",
    "admissible_subgoals",
    "command_for",
    "discover_games",
    "execute_subgoal",
    "make_games",
    "official_split",
    "parse_subgoal",
    "read_game_file",
    "subgoal_for_command",
]
