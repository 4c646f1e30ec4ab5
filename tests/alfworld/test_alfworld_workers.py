"""`hgpo alfworld eval --workers`: the same JSON as one process, games sharded over Ray workers; a planner
that cannot load in the workers is reported as in one process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hgpo.alfworld import demos_main, eval_main
from hgpo.bench.workers import without_timing


def test_two_workers_write_the_json_of_one_process(ray_session: None, game_set: Path, tmp_path: Path) -> None:
    records = {}
    for name, extra in (("one", []), ("two", ["--workers", "2"])):
        out = tmp_path / f"{name}.json"
        assert eval_main(["--games", str(game_set), "--planner", "searcher", "--json", str(out), *extra]) == 0
        records[name] = without_timing(json.loads(out.read_text()))
    assert records["one"] == records["two"]
    assert records["one"]["games"] == 6 and len(records["one"]["episodes"]) == 6


def test_a_model_that_cannot_load_in_the_workers_exits_2(
    ray_session: None, game_set: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = [
        "--games",
        str(game_set),
        "--planner",
        "llm",
        "--model",
        str(tmp_path / "no-model"),
        "--workers",
        "2",
    ]
    assert eval_main(argv) == 2
    assert "planner 'llm' cannot start" in capsys.readouterr().err


def test_demos_on_two_workers_are_the_records_of_one_process(
    ray_session: None, game_set: Path, tmp_path: Path
) -> None:
    outs = [tmp_path / "one.jsonl", tmp_path / "two.jsonl"]
    argv = ["--games", str(game_set), "--limit", "3"]
    assert demos_main([*argv, "--out", str(outs[0])]) == 0
    assert demos_main([*argv, "--out", str(outs[1]), "--workers", "2"]) == 0
    assert outs[0].read_text() == outs[1].read_text()
    assert len({json.loads(line)["game"] for line in outs[0].read_text().splitlines()}) == 3


def test_bench_workers_times_both_runs_and_finds_them_identical(game_set: Path, tmp_path: Path) -> None:
    """`hgpo bench workers` as the lead runs it (there on 48 games with the LLM planner): each run a fresh
    command, the in-process one first."""
    from hgpo.bench.workers import main as bench_workers

    out = tmp_path / "workers.json"
    argv = ["--parts", "alfworld", "--games", str(game_set), "--planner", "searcher", "--workers", "0", "2"]
    assert bench_workers([*argv, "--json", str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["benchmark"] == "workers" and record["config"]["workers"] == [0, 2]
    results = record["results"]["alfworld_eval"]
    assert results["identical_results"] is True and results["games"] == 6
    assert [run["workers"] for run in results["runs"]] == [0, 2]
    assert all(run["wall_s"] > 0 and run["won"] == 6 for run in results["runs"])
