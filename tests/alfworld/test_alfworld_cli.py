"""`hgpo alfworld eval` and `demos` on the generated games; the expert planner is the oracle."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from hgpo.alfworld import demos_main, eval_main, main
from sim.alfworld import TASK_TYPES, discover_games, parse_subgoal


@pytest.mark.parametrize("planner", ["expert", "searcher"])
def test_expert_solves_every_type(
    planner: str, any_grammar_game_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """In games of both grammars; the printout and the JSON say which grammar each game spoke and that
    nothing was refused."""
    out = tmp_path / "eval.json"
    assert eval_main(["--games", str(any_grammar_game_set), "--planner", planner, "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    games = discover_games(any_grammar_game_set)
    grammar = games[0].grammar
    nothing_refused = {"refused": 0, "not_admissible": 0, "nothing_happens": 0, "games_with_refusals": 0}
    all_won = {"games": len(TASK_TYPES), "won": len(TASK_TYPES)}
    assert record["grammars"] == {grammar: {**all_won, **nothing_refused}}
    assert {k: record[k] for k in nothing_refused} == nothing_refused
    keys = ("grammar", "refused", "not_admissible", "nothing_happens")
    assert {tuple(e[k] for k in keys) for e in record["episodes"]} == {(grammar, 0, 0, 0)}
    assert record["task_rules"] is True
    assert record["success_rate"] == 1.0 and record["games"] == len(TASK_TYPES)
    assert set(record["per_type"]) == set(TASK_TYPES)
    assert all(entry["success_rate"] == 1.0 for entry in record["per_type"].values())
    assert 3 <= record["mean_steps"] <= 50
    for episode in record["episodes"]:  # what was played, to read why a game was lost
        assert episode["task"] and len(episode["subgoals"]) == episode["steps"]
        assert all(parse_subgoal(step["subgoal"]) and step["message"] for step in episode["subgoals"])
    lines = capsys.readouterr().out.splitlines()
    refusals = ["refused", "not", "admissible", "nothing", "happens"]
    assert lines[0].split() == ["game", "type", "grammar", "won", "steps", *refusals]
    per_game = {line.split()[0]: line.split()[2:] for line in lines[2 : 2 + len(games)]}
    assert per_game == {
        game.name: [grammar, "yes", str(e["steps"]), "0", "0", "0"]
        for game, e in zip(games, record["episodes"], strict=True)
    }
    paper = lines.index(next(line for line in lines if line.startswith("planner ")))
    assert lines[paper].split() == ["planner", "Pick", "Clean", "Heat", "Cool", "Look", "Pick2", "All"]
    beside = lines.index(next(line for line in lines if line.startswith("grammar ")))
    assert beside > paper
    assert lines[beside].split() == ["grammar", "games", "won", *refusals, "games", "with", "refusals"]
    assert lines[beside + 2].split() == [grammar, "6", "6", "0", "0", "0", "0"]
    assert lines[beside + 3].split() == ["all", "6", "6", "0", "0", "0", "0"]


def test_no_task_rules_is_recorded_with_the_figures(game_set: Path, tmp_path: Path) -> None:
    """The LLM planner (SmolLM2 from make setup, no adapter) for one command of one game, rules off."""
    out = tmp_path / "eval.json"
    argv = ["--games", str(game_set), "--planner", "llm", "--adapter", "", "--limit", "1", "--max-steps", "1"]
    assert eval_main([*argv, "--no-task-rules", "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["task_rules"] is False and record["llm"]["task_rules"] is False and record["games"] == 1


def test_eval_plays_the_task_types_and_games_per_type_asked(game_set: Path, tmp_path: Path) -> None:
    """`--task-types` and `--per-type` pick a subset of a set (a figure's 20 games per type, or one type per
    process), in path order."""
    for copy in ("a", "b"):  # two games of each type
        shutil.copytree(game_set, tmp_path / "set" / copy)
    out = tmp_path / "eval.json"
    types = ["pick_heat_then_place_in_recep", "look_at_obj_in_light"]
    argv = ["--games", str(tmp_path / "set"), "--task-types", *types, "--per-type", "1", "--max-steps", "1"]
    assert eval_main([*argv, "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["subset"] == {"task_types": types, "per_type": 1, "limit": None}
    played = [episode["game"] for episode in record["episodes"]]
    assert played == [f"a/{g.name}" for g in discover_games(game_set) if g.task_type in types]


def test_demos_are_expert_decisions(game_set: Path, tmp_path: Path) -> None:
    out = tmp_path / "demos.jsonl"
    assert demos_main(["--games", str(game_set), "--out", str(out), "--limit", "1"]) == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len({r["game"] for r in records}) == 1
    for record in records:
        assert record["expert_subgoal"] in record["admissible_subgoals"]
        parse_subgoal(record["expert_subgoal"])
        system, user = (m["content"] for m in record["messages"])
        assert "go_to(" in system and record["task"] in user
    first = records[0]
    assert first["history"] == [] and "Your task is to" in first["observation"]
    assert records[1]["history"][0][0] == first["expert_subgoal"]


def test_bad_input_exits_2_naming_the_problem(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as code:
        eval_main(["--games", str(tmp_path / "none")])
    assert code.value.code == 2 and "make-games" in capsys.readouterr().err
    with pytest.raises(SystemExit) as code:
        eval_main(["--games", str(tmp_path), "--planner", "oracle"])
    assert code.value.code == 2 and "expert" in capsys.readouterr().err
    with pytest.raises(SystemExit) as code:
        eval_main(["--games", str(tmp_path), "--task-types", "pick_and_juggle"])
    assert code.value.code == 2 and "known: pick_and_place_simple" in capsys.readouterr().err
    assert main(["teleport"]) == 2
