"""What every benchmark shares: the table it prints, the JSON it writes, and its graph options."""

from __future__ import annotations

import argparse
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from hgpo.bench.arguments import add_graph_arguments
from hgpo.bench.report import table, write_json


def test_floats_keep_three_digits_and_large_ones_stay_out_of_exponent_form() -> None:
    lines = table(
        ["learner", "train s", "success"], [["sb3", 4800.0, 0.05], ["hgpo", 1954.3, 0.95]]
    ).splitlines()
    assert lines[2].split() == ["sb3", "4800", "0.05"]
    assert lines[3].split() == ["hgpo", "1954", "0.95"]
    assert table(["x"], [[0.123456]]).splitlines()[2].strip() == "0.123"


@dataclass(frozen=True)
class _Config:
    trials: int = 3
    json: Path = Path("runs/bench/x.json")


def test_a_config_dataclass_is_written_with_its_paths_as_text(tmp_path: Path) -> None:
    write_json(tmp_path / "x.json", "x", _Config(), {"ok": True})
    record = json.loads((tmp_path / "x.json").read_text())
    assert record["config"] == {"trials": 3, "json": "runs/bench/x.json"}
    assert record["results"] == {"ok": True}


def test_a_domain_id_outside_what_dds_maps_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    parser = argparse.ArgumentParser(prog="hgpo bench x")
    add_graph_arguments(parser, Path("x.json"), 7)
    assert parser.parse_args([]).domain_id == 7
    with pytest.raises(SystemExit):
        parser.parse_args(["--domain-id", "102"])
    assert "a ROS domain id is within 0..101, got 102" in capsys.readouterr().err


def test_bench_graph_reads_the_planners_decision_latencies_from_every_log_under_its_folder(
    tmp_path: Path,
) -> None:
    from hgpo.bench.graph import decision_latencies

    for start, latencies in (("a", [400.0, 100.0, 120.0]), ("b", [500.0, 80.0])):
        folder = tmp_path / f"hgpo_planner_{start}"
        folder.mkdir()
        lines = [json.dumps({"step": step, "latency_ms": ms}) for step, ms in enumerate(latencies)]
        (folder / "decisions.jsonl").write_text("\n".join(lines) + "\n\n")
    stats = decision_latencies(tmp_path)
    assert {name: s["n"] for name, s in stats.items()} == {"all": 5, "first": 2, "later": 3}
    assert stats["first"]["p50_ms"] == 450.0 and stats["later"]["p50_ms"] == 100.0
    assert stats["all"]["p50_ms"] == 120.0
    assert decision_latencies(tmp_path / "none") == {}
    assert "reused_tokens_mean" not in stats["all"]  # the expert's decisions: no model, no cache
    model = tmp_path / "model" / "hgpo_planner_c"
    model.mkdir(parents=True)
    records = [
        {"step": step, "latency_ms": 100.0, "trace": {"attempts": [{"reused_tokens": reused}]}}
        for step, reused in ((0, 386), (1, 420), (2, 440))
    ]
    (model / "decisions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    reuse = {name: s["reused_tokens_mean"] for name, s in decision_latencies(model.parent).items()}
    assert reuse == {"all": 415.3333333333333, "first": 386.0, "later": 430.0}
