"""`hgpo bench policy` (latency part; the graph part runs the graph bench, tested in tests/ros)."""

from __future__ import annotations

import json
from pathlib import Path

from hgpo.cli import main as hgpo_main


def test_bench_policy_writes_latency_figures(tmp_path: Path) -> None:
    out = tmp_path / "policy.json"
    assert hgpo_main(["bench", "policy", "--rates", "--calls", "20", "--json", str(out)]) == 0
    latency = json.loads(out.read_text())["results"]["latency"]
    assert set(latency) == {"onnxruntime", "torch", "onnx backend tick"}
    assert all(0 < r["p50_us"] <= r["p99_us"] and r["n"] == 20 for r in latency.values())
