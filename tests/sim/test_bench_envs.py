"""`hgpo bench envs` measures and records env steps per second."""

from __future__ import annotations

import json
from pathlib import Path

from hgpo.bench.envs import main


def test_bench_envs_writes_its_table_as_json(tmp_path: Path, capsys) -> None:
    out = tmp_path / "envs.json"
    args = [
        "--skills",
        "reach",
        "--num-envs",
        "1",
        "2",
        "--threads",
        "1",
        "--seconds",
        "0.3",
        "--json",
        str(out),
    ]
    assert main(args) == 0
    cases = json.loads(out.read_text())["results"]["cases"]
    assert [(c["num_envs"], c["threads"]) for c in cases] == [(1, 1), (2, 1)]
    assert all(c["env_steps"] > 0 and c["env_steps_per_s"] > 0 for c in cases)
    assert "env steps/s" in capsys.readouterr().out


def test_the_physics_check_plays_one_expert_episode_per_env(tmp_path: Path, capsys) -> None:
    out = tmp_path / "envs.json"
    args = ["--skills", "reach", "--num-envs", "3", "--threads", "1", "--seconds", "0.1", "--expert"]
    assert main([*args, "--json", str(out)]) == 0
    (case,) = json.loads(out.read_text())["results"]["cases"]
    assert case["expert_episodes"] == 3 and case["expert_success"] >= 2 / 3
    assert "expert success" in capsys.readouterr().out
