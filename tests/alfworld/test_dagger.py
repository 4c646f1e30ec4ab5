"""DAgger's data collection on ALFWorld: the learner plays, the searcher labels every state the learner
reaches, including the one where the learner gives up, and `hgpo alfworld demos --learner llm` keeps
those records from games the learner lost."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from hgpo.alfworld import demos_main
from policies.alfworld.domain import AlfworldDomain, AlfworldView
from policies.alfworld.episodes import run_episode
from policies.alfworld.planners import search_order_only
from policies.planning import PlanningContext, StepRecord
from policies.planning.dagger import ExpertLabelledPlanner
from policies.planning.domain import Subgoal, valid_now
from policies.worlds import make_planner
from sim.alfworld import AlfworldTextEnv, discover_games, parse_subgoal


class BackwardsWalker:
    """A learner that walks the room's receptacles from the last the game lists, then stops: it strays from
    the searcher (which walks them in the room's order) at once and quits with the task undone."""

    name = "backwards walker"
    last_trace = None

    def __init__(self, walks: int) -> None:
        self.walks = walks

    def next_subgoal(self, context: PlanningContext[AlfworldView]) -> Subgoal | None:
        if len(context.history) == self.walks:
            return None
        valid = valid_now(AlfworldDomain(), context.state, context.instruction, context.history)
        return [s for s in valid if s.skill == "go_to"][-1]


@pytest.fixture(scope="module")
def expert_env() -> Iterator[AlfworldTextEnv]:
    env = AlfworldTextEnv(max_steps=50, expert=True)
    yield env
    env.close()


def test_the_learner_plays_and_the_searcher_labels_every_state_it_reaches(
    game_set: Path, expert_env: AlfworldTextEnv
) -> None:
    labels: list[tuple[AlfworldView, tuple[StepRecord, ...], Subgoal]] = []
    searcher = make_planner("searcher", domain="alfworld")
    player = ExpertLabelledPlanner(
        BackwardsWalker(walks=2),
        searcher,
        lambda _task, view, history, label, _choice: labels.append((view, history, label)),
    )
    game = discover_games(game_set)[0]
    result = run_episode(expert_env, game, player, with_expert_plan=True)

    assert not result.won and result.message == "planner said done but the task is not achieved"
    walked = [step.subgoal for step in result.history]
    assert len(walked) == 2 and all(s.skill == "go_to" for s in walked)
    assert [history for _, history, _ in labels] == [(), tuple(result.history[:1]), tuple(result.history)]
    for view, history, label in labels:  # what the searcher itself says at the state the learner reached
        assert label == searcher.next_subgoal(PlanningContext(result.task, view, history))
        assert label in valid_now(AlfworldDomain(), view, result.task, history)
    assert labels[0][2] != walked[0]  # the learner strayed, and the label says where the searcher would go


def test_states_where_learner_and_expert_only_search_in_a_different_order_can_be_left_out(
    game_set: Path, expert_env: AlfworldTextEnv
) -> None:
    game = discover_games(game_set)[0]
    searcher = make_planner("searcher", domain="alfworld")

    def labels(drop: bool) -> tuple[list[tuple[int, Subgoal]], list[StepRecord], int]:
        kept: list[tuple[int, Subgoal]] = []
        player = ExpertLabelledPlanner(
            BackwardsWalker(walks=2),
            searcher,
            lambda _task, _view, history, label, _choice: kept.append((len(history), label)),
            skip=search_order_only if drop else None,
        )
        history = run_episode(expert_env, game, player, with_expert_plan=True).history
        return kept, history, player.skipped

    everything, walked, none_dropped = labels(drop=False)
    kept, _, dropped = labels(drop=True)
    assert none_dropped == 0 and dropped == len(everything) - len(kept)
    # the learner's walks from the far end against the searcher's from the near end, hand empty: dropped;
    # the state where the learner stops (no subgoal to compare) is kept
    choices = [step.subgoal for step in walked] + [None]
    expected = [
        (n, label)
        for (n, label), choice in zip(everything, choices, strict=True)
        if not (choice is not None and label.skill == choice.skill == "go_to" and label != choice)
    ]
    assert kept == expected
    assert everything[0] not in kept and kept[-1] == everything[-1] == (2, everything[-1][1])


def test_drop_search_order_needs_a_learner(game_set: Path, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_:
        demos_main(["--games", str(game_set), "--out", str(tmp_path / "d.jsonl"), "--drop-search-order"])
    assert exit_.value.code == 2
    assert not list(tmp_path.iterdir())


def test_demos_with_a_learner_keep_the_games_it_lost(game_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "dagger.jsonl"
    # SmolLM2 without an adapter: it wins nothing in 3 steps
    untrained = ["--learner", "llm", "--adapter", ""]
    games = ["--games", str(game_set), "--limit", "1", "--max-steps", "3"]
    assert demos_main([*games, "--out", str(out), *untrained]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert [len(r["history"]) for r in records] == [0, 1, 2]  # one per state the learner reached
    for record in records:
        parse_subgoal(record["expert_subgoal"])
        assert record["expert_subgoal"] in record["admissible_subgoals"]
    # what the learner chose at each state: the next state's last step
    assert [r["learner_subgoal"] for r in records[:-1]] == [r["history"][-1][0] for r in records[1:]]
    assert not out.with_name(out.name + ".partial").exists()


def test_a_learner_that_cannot_load_exits_2_writing_nothing(
    game_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "dagger.jsonl"
    learner = ["--learner", "llm", "--adapter", str(tmp_path / "missing")]
    assert demos_main(["--games", str(game_set), "--out", str(out), *learner]) == 2
    assert "has no adapter_config.json" in capsys.readouterr().err
    assert not list(tmp_path.glob("dagger.jsonl*"))
