"""`hgpo alfworld eval --workers`: the same JSON as one process, games sharded over Ray workers; a planner
that cannot load in the workers is reported as in one process."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hgpo.alfworld import eval_main
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
