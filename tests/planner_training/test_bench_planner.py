"""`hgpo bench planner` measures greedy decisions with each constrained decoder (where the time went),
rollouts one at a time against batched ones with each decoder, and updates with and without the shared
prompt prefix, in one run, and records them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hgpo.bench.planner import main


def test_bench_planner_compares_decoders_batched_rollouts_and_shared_prefix_updates(
    tiny_planner_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "planner.json"
    args = ["--model", str(tiny_planner_dir), "--adapter", "", "--tasks", "reach", "--group-size", "3"]
    assert (
        main([*args, "--batches", "1", "3", "--minibatch", "2", "--dtypes", "float32", "--json", str(out)])
        == 0
    )
    results = json.loads(out.read_text())["results"]
    cases = [(r["decoding"], r["batch"]) for r in results["rollouts"]]
    assert cases == [("plain", 1), ("plain", 3), ("jump_forward", 1), ("jump_forward", 3)]
    plain, jump = results["decisions"]
    assert (plain["decoding"], jump["decoding"]) == ("plain", "jump_forward")
    assert jump["decisions"] == plain["decisions"] == jump["same_answers"] >= 3  # same greedy answers
    assert jump["forwards_mean"] < plain["forwards_mean"]  # no pass for a token the trie forces
    assert plain["prefill_ms_mean"] > 0 and jump["prompt_tokens_mean"] > jump["reused_tokens_mean"] > 0
    assert all(
        r["episodes"] == 3 and r["decisions"] >= 3 and r["episodes_per_s"] > 0 for r in results["rollouts"]
    )
    updates = {u["shared_prefix"]: u for u in results["updates"]}
    assert updates.keys() == {False, True} and updates[True]["tokens"] == updates[False]["tokens"] > 0
    printed = capsys.readouterr().out
    assert "generated tokens/s" in printed and "prefill" in printed


def test_bench_planner_compares_number_formats(
    tiny_planner_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each number format gets its own weights, rollouts and updates; the first format is the reference of
    same_answers (the tiny model's answers are near-random, so bfloat16 may disagree: only counted)."""
    out = tmp_path / "planner.json"
    args = ["--model", str(tiny_planner_dir), "--adapter", "", "--tasks", "reach", "--group-size", "2"]
    cases = ["--batches", "1", "--decodings", "jump_forward", "--dtypes", "float32", "bfloat16"]
    assert main([*args, *cases, "--minibatch", "2", "--json", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    full, half = results["decisions"]
    assert (full["weights"], half["weights"]) == ("float32", "bfloat16")
    assert full["same_answers"] == full["decisions"] >= half["same_answers"] >= 0
    assert [r["dtype"] for r in results["rollouts"]] == ["float32", "bfloat16"]
    assert [(u["dtype"], u["shared_prefix"]) for u in results["updates"]] == [
        ("float32", False),
        ("float32", True),
        ("bfloat16", False),
        ("bfloat16", True),
    ]
    assert "bfloat16, jump_forward, batch 1" in capsys.readouterr().out


def test_bench_planner_plays_alfworld_games(
    tiny_planner_dir: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """ALFWorld episodes batch too (TextWorld calls under one lock), from the first game in path order."""
    pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")
    from tests.alfworld_games import generated_game_set

    games = generated_game_set(tmp_path_factory)
    out = tmp_path / "planner.json"
    args = ["--domain", "alfworld", "--games", str(games), "--model", str(tiny_planner_dir), "--adapter", ""]
    cases = ["--group-size", "2", "--max-subgoals", "3", "--batches", "1", "2", "--decodings", "jump_forward"]
    cases += ["--dtypes", "float32"]
    assert main([*args, *cases, "--json", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    first = sorted(p.name for p in games.iterdir())[0]
    assert results["played"] == f"alfworld: train/{first}"
    assert [(r["batch"], r["episodes"]) for r in results["rollouts"]] == [(1, 2), (2, 2)]
    assert all(2 <= r["decisions"] <= 6 for r in results["rollouts"])


def test_bench_planner_refuses_a_zero_batch(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--batches", "0"])
    assert exit_info.value.code == 2 and "must be >= 1" in capsys.readouterr().err
