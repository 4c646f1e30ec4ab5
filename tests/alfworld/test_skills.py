"""Text skills: every skill maps onto admissible commands and back; bad subgoals fail clearly, never crash."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sim.alfworld import (
    GRAMMARS,
    TEXT_SKILLS,
    AlfworldTextEnv,
    TextSkillError,
    admissible_subgoals,
    command_for,
    discover_games,
    execute_subgoal,
    parse_subgoal,
    subgoal_for_command,
)
from sim.subgoal import Subgoal


def test_every_skill_maps_to_admissible_commands(
    any_grammar_game_set: Path, text_env: AlfworldTextEnv
) -> None:
    """Along the walkthroughs of all six task types, in each grammar, every admissible command in the
    vocabulary becomes a subgoal that maps back to exactly that command, and every skill shows up: put(obj,
    recep) is `move obj to recep` in alfworld 0.4's games and `put obj in/on recep` in 0.2's."""
    env, seen, puts = text_env, set(), []
    for game in discover_games(any_grammar_game_set):
        grammar = GRAMMARS[game.grammar]
        observation = env.reset(game.path)
        assert env.grammar == grammar
        for command in json.loads(game.path.read_text())["walkthrough"]:
            for subgoal in admissible_subgoals(observation.admissible_commands):
                assert (
                    command_for(subgoal, observation.admissible_commands) in observation.admissible_commands
                )
                assert parse_subgoal(str(subgoal)) == subgoal
                seen.add(subgoal.skill)
            expert = subgoal_for_command(command)
            assert expert is not None, command
            outcome = execute_subgoal(env, observation, expert)
            assert outcome.success and outcome.command == command, outcome.message
            if expert.skill == "put":
                puts.append(command)
                answer = grammar.put_feedback.replace("{o.name}", expert.args[0])
                assert outcome.message == answer.replace("{r.name}", expert.args[1])
            assert outcome.observation is not None
            observation = outcome.observation
        assert observation.won, game.name
    assert seen == set(TEXT_SKILLS)
    assert puts and all(put.startswith(grammar.put.split()[0] + " ") for put in puts), puts


@pytest.mark.parametrize(
    "text",
    [
        "",
        "go_to",
        "go_to(",
        "go to cabinet 1",
        "fly(kitchen)",
        "take(mug 1)",
        "take(, )",
        "GO_TO(x)",
        "put(a, b, c)",
        "go_to(cabinet 1))",
        "toggle()",
    ],
)
def test_malformed_subgoals_raise_a_clear_error(text: str) -> None:
    with pytest.raises(TextSkillError) as err:
        parse_subgoal(text)
    assert str(err.value)


@pytest.mark.parametrize(
    "subgoal",
    [
        Subgoal("go_to", ("cabinet 99",)),
        Subgoal("take", ("unicorn 1", "sofa 1")),
        Subgoal("fly", ("kitchen",)),
        Subgoal("heat", ("mug 1",)),
        Subgoal("put", ("", "")),
        Subgoal("examine", ("'; drop table --",)),
        Subgoal("go_to", ("cabinet 1\nlook",)),
    ],
)
def test_inadmissible_subgoals_fail_without_a_step(
    game_set: Path, text_env: AlfworldTextEnv, subgoal: Subgoal
) -> None:
    env = text_env
    game = discover_games(game_set)[0]
    observation = env.reset(game.path)
    outcome = execute_subgoal(env, observation, subgoal)
    assert not outcome.success and outcome.observation is None and not outcome.command
    assert subgoal.skill in outcome.message
    assert env.step("look").steps == 1  # nothing was played before


def test_refusal_lists_the_admissible_alternatives(game_set: Path, text_env: AlfworldTextEnv) -> None:
    observation = text_env.reset(discover_games(game_set)[0].path)
    with pytest.raises(TextSkillError, match=r"admissible go_to subgoals now: go_to\("):
        command_for(Subgoal("go_to", ("attic 1",)), observation.admissible_commands)


def test_subgoal_text_round_trip() -> None:
    subgoal = Subgoal("take", ("mug 1", "desk 1"))
    assert str(subgoal) == "take(mug 1, desk 1)"
    assert parse_subgoal(" take( mug 1 ,desk 1 ) ") == subgoal
    assert subgoal_for_command("take mug 1 from desk 1") == subgoal
    assert subgoal_for_command("look") is None and subgoal_for_command("inventory") is None
