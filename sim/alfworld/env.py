"""ALFWorld's TextWorld environment behind the text-env contract.

Built from the same pieces `AlfredTWEnv.init_env` assembles (PDDL environment, ALFRED demangler, game-file
info), one game at a time, synchronously. The planner expert is the oracle here (the hand-coded one wanders
when stuck): ALFWorld's `AlfredExpert` asks Fast Downward for a new plan after every command, up to half a
minute a command on a pick-two problem in a big kitchen. A command that is the plan's first is deterministic
PDDL, so the rest of the plan still reaches the goal from where it leads: the env keeps that rest. It keeps
the whole plan after a detour the plan cannot notice (`plan_survives`: a walk, or opening or closing a
receptacle the plan never names, while the plan starts with a walk), as a searching planner makes them at
every step, and asks the planner again only after any other command off the plan.

Environments may play in threads (the planner's batched rollouts): every call into TextWorld holds one
process-wide lock, because its PDDL and grammar parsers (tatsu) keep parse state shared between
environments, and two loads at once fail with "pop from empty list". Commands take milliseconds beside a
planner's decision, so serializing them costs little.
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import textworld
from alfworld.agents.environment.alfred_tw_env import AlfredDemangler, AlfredInfos
from textworld.envs import PddlEnv

from sim.alfworld.contract import (
    ExpertUnavailableError,
    GameFileError,
    GameOverError,
    TextObservation,
)
from sim.alfworld.grammar import CommandGrammar, grammar_of

_TASK = re.compile(r"Your task is to: (.*?)\.?\s*$", re.DOTALL)
_UNNOTICED = re.compile(r"^(?:go to .+|(?:open|close) (?P<receptacle>.+))$")
GAME_KEYS = ("pddl_domain", "grammar", "pddl_problem")
_TEXTWORLD = threading.Lock()


def read_game_file(path: Path) -> dict[str, Any]:
    """The JSON of a `game.tw-pddl`, or a GameFileError naming the file and what is wrong with it."""
    if not path.is_file():
        raise GameFileError(f"game file {path} does not exist: check the path, or regenerate the game set")
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as err:
        raise GameFileError(
            f"game file {path} is not readable JSON ({err}): regenerate or re-download it"
        ) from err
    missing = [key for key in GAME_KEYS if not isinstance(data, dict) or key not in data]
    if missing:
        raise GameFileError(f"game file {path} lacks {', '.join(missing)}: it is not an ALFWorld game")
    return data


def game_grammar(path: Path, data: dict[str, Any]) -> CommandGrammar:
    """The command grammar of the game `data` read from `path`; a GameFileError naming the file when it is
    none the text skills know."""
    return grammar_of(data["grammar"] if isinstance(data["grammar"], str) else "", path)


def plan_survives(plan: tuple[str, ...], command: str) -> bool:
    """Whether `plan` still reaches the goal after `command`, a command off it. A plan that starts with a
    walk does not read where the agent stands; in ALFWorld's PDDL a walk changes only that, and opening or
    closing a receptacle changes only whether it is open, which a plan that never names it does not read."""
    detour = _UNNOTICED.match(command)
    if not plan or not plan[0].startswith("go to ") or detour is None:
        return False
    receptacle = detour.group("receptacle")
    named = re.compile(rf"(?<!\S){re.escape(receptacle)}(?!\S)") if receptacle else None
    return named is None or not any(named.search(step) for step in plan)


class AlfworldTextEnv:
    """One ALFWorld game at a time; `expert=True` keeps the planner expert's plan (it plans again after a
    command off the plan that the plan could notice, 0.1 s to tens of seconds, so leave it off when nobody
    asks for the plan)."""

    def __init__(self, max_steps: int = 50, expert: bool = False) -> None:
        if max_steps < 1:
            raise ValueError(f"max_steps must be at least 1, got {max_steps}")
        self.max_steps = max_steps
        self.expert = expert
        infos = textworld.EnvInfos(
            won=True, admissible_commands=True, policy_commands=expert, extras=["gamefile"]
        )
        self._env: Any = AlfredInfos(AlfredDemangler(PddlEnv(infos), shuffle=False))
        self._plan: tuple[str, ...] = ()
        self._state: Any = None
        self._task = ""
        self._steps = 0
        self.game: Path | None = None
        self.grammar: CommandGrammar | None = None  # the game's, once reset

    def reset(self, game: Path) -> TextObservation:
        game = Path(game)
        # A clear error for a missing or corrupt file, or one of an unknown grammar, before TextWorld's own.
        grammar = game_grammar(game, read_game_file(game))
        try:
            with _TEXTWORLD:
                self._env.load(str(game))
                self._env.request_infos.policy_commands = self.expert  # a plan from the start
                self._state = self._env.reset()
        except Exception as err:  # TextWorld and Fast Downward raise many types on a bad problem
            raise GameFileError(
                f"game file {game} does not load in ALFWorld: {type(err).__name__}: {err}"
            ) from err
        self.game, self.grammar = game, grammar
        self._steps = 0
        self._plan = self._planned()
        match = _TASK.search(self._state["feedback"])
        self._task = match.group(1).strip() if match else ""
        return self._observation()

    def step(self, command: str) -> TextObservation:
        if self._state is None:
            raise GameOverError("no game loaded: reset with a game file first")
        if self._done():
            raise GameOverError(f"the episode of {self.game} is over: reset to play again")
        on_plan = self.expert and self._plan[:1] == (command,)
        kept = on_plan or (self.expert and plan_survives(self._plan, command))
        with _TEXTWORLD:
            self._env.request_infos.policy_commands = self.expert and not kept
            self._state, _, _ = self._env.step(command)
        self._steps += 1
        if on_plan:
            self._plan = self._plan[1:]
        elif not kept:
            self._plan = self._planned()
        return self._observation()

    def expert_plan(self) -> tuple[str, ...]:
        if not self.expert:
            raise ExpertUnavailableError("this environment was made without the planner expert (expert=True)")
        if self._state is None:
            raise GameOverError("no game loaded: reset with a game file first")
        return self._plan

    def _planned(self) -> tuple[str, ...]:
        """The plan Fast Downward found for the state just reached (when the expert is on)."""
        return tuple(self._state.get("policy_commands") or ()) if self.expert else ()

    def close(self) -> None:
        with _TEXTWORLD:
            self._env.close()

    def _done(self) -> bool:
        return bool(self._state["won"]) or self._steps >= self.max_steps

    def _observation(self) -> TextObservation:
        return TextObservation(
            text=str(self._state["feedback"]).strip(),
            task=self._task,
            admissible_commands=tuple(self._state["admissible_commands"]),
            won=bool(self._state["won"]),
            done=self._done(),
            steps=self._steps,
        )
