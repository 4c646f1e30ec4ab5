"""ALFWorld games through the project's one closed loop (`run_closed_loop`) with the planners of the
`alfworld` domain from the shared registry: the expert wins, the game's budget ends a game, the expert
without its plan says what to do, and the LLM planner only ever plays admissible subgoals."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from policies.alfworld.domain import AlfworldView
from policies.alfworld.episodes import run_episode
from policies.planning import LLMConfig, LoopConfig, PlanningContext
from policies.planning.domain import Subgoal
from policies.worlds import make_planner
from sim.alfworld import GRAMMARS, AlfworldTextEnv, TextObservation, admissible_subgoals, discover_games


@pytest.fixture(scope="module")
def expert_env() -> Iterator[AlfworldTextEnv]:
    env = AlfworldTextEnv(max_steps=50, expert=True)
    yield env
    env.close()


def test_expert_wins_through_the_closed_loop(game_set: Path, expert_env: AlfworldTextEnv) -> None:
    game = discover_games(game_set)[0]
    result = run_episode(expert_env, game, make_planner("expert", domain="alfworld"), with_expert_plan=True)
    assert result.won and result.message.startswith("task done after"), result.message
    assert result.steps == len(result.history) >= 2 and all(step.success for step in result.history)


def test_game_budget_ends_the_game(game_set: Path, expert_env: AlfworldTextEnv) -> None:
    game = discover_games(game_set)[0]
    expert_env.max_steps = 2
    try:
        result = run_episode(expert_env, game, make_planner("expert", domain="alfworld"), True)
    finally:
        expert_env.max_steps = 50
    assert not result.won and result.steps == 2
    assert result.message == "step budget spent (2 commands) after 2 subgoals"


def test_expert_without_its_plan_says_what_to_do(game_set: Path, text_env: AlfworldTextEnv) -> None:
    game = discover_games(game_set)[0]
    result = run_episode(text_env, game, make_planner("expert", domain="alfworld"), with_expert_plan=False)
    assert not result.won and result.steps == 0 and "expert enabled" in result.message


def test_unknown_names_list_the_known_ones() -> None:
    with pytest.raises(ValueError, match="known: expert, llm"):
        make_planner("oracle", domain="alfworld")
    with pytest.raises(ValueError, match="known: alfworld, tabletop"):
        make_planner("expert", domain="kitchen")


def test_llm_planner_plays_only_admissible_subgoals(game_set: Path, text_env: AlfworldTextEnv) -> None:
    planner = make_planner("llm", LLMConfig(), domain="alfworld")  # SmolLM2, constrained, from make setup
    game = discover_games(game_set)[1]
    first = text_env.reset(game.path)
    admissible = {str(s) for s in admissible_subgoals(first.admissible_commands)}
    config = LoopConfig(max_subgoals=2)
    result = run_episode(text_env, game, planner, with_expert_plan=False, config=config)
    assert result.history, result.message
    assert str(result.history[0].subgoal) in admissible
    assert all(step.success for step in result.history), [s.message for s in result.history]


class _AsksTheImpossibleFirst:
    """The expert, but its first subgoal names nothing the game has: a planner's mistake the game refuses."""

    name = "expert after a slip"
    last_trace = None

    def __init__(self) -> None:
        self.expert, self.slipped = make_planner("expert", domain="alfworld"), False

    def next_subgoal(self, context: PlanningContext[AlfworldView]) -> Subgoal | None:
        if not self.slipped:
            self.slipped = True
            return Subgoal("examine", ("unicorn 1",))
        return self.expert.next_subgoal(context)


def test_refused_subgoals_are_counted_with_the_games_grammar(
    any_grammar_game_set: Path, expert_env: AlfworldTextEnv
) -> None:
    game = discover_games(any_grammar_game_set)[0]
    result = run_episode(expert_env, game, _AsksTheImpossibleFirst(), with_expert_plan=True)
    assert result.won and not result.history[0].success
    assert (result.refused, result.not_admissible, result.nothing_happens) == (1, 1, 0)
    assert result.grammar == game.grammar and result.grammar in GRAMMARS


class _AdmitsAnotherGrammarsPut:
    """The real game, whose admissible commands also list the put in the other known grammar's words: a game
    file that advertises a command its grammar does not parse (what a wrong `admissible_commands` would do).
    The command reaches the game, which answers "Nothing happens."."""

    def __init__(self, env: AlfworldTextEnv) -> None:
        self.env, self.max_steps = env, env.max_steps

    def _with_other_put(self, observation: TextObservation) -> TextObservation:
        other = next(g for g in GRAMMARS.values() if g != self.env.grammar)
        extra = other.skill_template().format(obj="unicorn 1", recep="desk 1")
        return replace(observation, admissible_commands=(*observation.admissible_commands, extra))

    def reset(self, game: Path) -> TextObservation:
        return self._with_other_put(self.env.reset(game))

    def step(self, command: str) -> TextObservation:
        return self._with_other_put(self.env.step(command))

    def expert_plan(self) -> tuple[str, ...]:
        return self.env.expert_plan()

    def close(self) -> None:
        self.env.close()


class _PutsTheUnicornFirst(_AsksTheImpossibleFirst):
    def next_subgoal(self, context: PlanningContext[AlfworldView]) -> Subgoal | None:
        if not self.slipped:
            self.slipped = True
            return Subgoal("put", ("unicorn 1", "desk 1"))
        return self.expert.next_subgoal(context)


def test_commands_the_game_answers_nothing_happens_are_counted_apart(
    any_grammar_game_set: Path, expert_env: AlfworldTextEnv
) -> None:
    """A refused subgoal that was never played (no admissible command) and one the game played and refused
    ("Nothing happens.") are told apart, so `eval` shows which of the two a game did."""
    game = discover_games(any_grammar_game_set)[0]
    result = run_episode(_AdmitsAnotherGrammarsPut(expert_env), game, _PutsTheUnicornFirst(), True)
    first = result.history[0]
    assert result.won and not first.success and first.message.startswith("Nothing happens.")
    assert (result.refused, result.not_admissible, result.nothing_happens) == (1, 0, 1)
