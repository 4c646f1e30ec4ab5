"""ALFWorld games through the project's one closed loop (`run_closed_loop`) with the planners of the
`alfworld` domain from the shared registry: the expert wins, the game's budget ends a game, the expert
without its plan says what to do, and the LLM planner only ever plays admissible subgoals."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from policies.alfworld.domain import AlfworldView
from policies.alfworld.episodes import run_episode
from policies.planning import LLMConfig, LoopConfig, PlanningContext
from policies.planning.domain import Subgoal
from policies.worlds import make_planner
from sim.alfworld import GRAMMARS, AlfworldTextEnv, admissible_subgoals, discover_games


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
    assert result.won and result.refused == 1 and not result.history[0].success
    assert result.grammar == game.grammar and result.grammar in GRAMMARS
