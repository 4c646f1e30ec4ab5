"""`hgpo bench workers`: `hgpo alfworld eval` over one game set in this process and with N Ray workers
(`--workers N`), each run a fresh command as a user runs it: wall time per run, the speed-up over the
in-process run, and whether every run gave the same per-game results (it must)."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hgpo.bench.arguments import add_json_argument
from hgpo.bench.report import table, write_json

TIMING_KEYS = frozenset(
    {
        "wall_time",
        "wall_s",
        "mean_episode_wall_s",
        "latency_ms",
        "decision_latency_ms_p50",
        "decision_latency_ms_p95",
        "time",
    }
)
"""Figures that measure the clock, not the episodes: they differ between any two runs."""


def without_timing(value: Any) -> Any:
    """`value` (parsed JSON) with every clock figure left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


@dataclass(frozen=True)
class BenchWorkersConfig:
    games: Path | None = None  # a game set; None: generate `per_type` evaluation games per task type
    per_type: int = 8  # 8 x 6 task types = 48 games
    seed: int = 0
    planner: str = "llm"
    workers: tuple[int, ...] = (0, 2)  # 0: in this process, without Ray
    max_steps: int = 50
    json: Path = Path("runs/bench/workers.json")


def eval_run(games: Path, workers: int, config: BenchWorkersConfig, scratch: Path) -> dict[str, Any]:
    """One `hgpo alfworld eval` as its own process: its wall time and its JSON."""
    out = scratch / f"eval-{workers}.json"
    command = [sys.executable, "-m", "hgpo.cli", "alfworld", "eval", "--games", str(games)]
    command += ["--planner", config.planner, "--max-steps", str(config.max_steps), "--json", str(out)]
    if workers:
        command += ["--workers", str(workers)]
    print(f"$ hgpo {' '.join(command[3:])}", flush=True)
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return {"wall_s": time.perf_counter() - started, "record": json.loads(out.read_text())}


def run(config: BenchWorkersConfig) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        games = config.games
        if games is None:
            from sim.alfworld import make_games

            print(f"generating {config.per_type} games per task type (seed {config.seed}) ...", flush=True)
            make_games(scratch / "games", per_type=0, eval_per_type=config.per_type, seed=config.seed)
            games = scratch / "games" / "valid_unseen"
        runs = {workers: eval_run(games, workers, config, scratch) for workers in config.workers}
    base = runs[config.workers[0]]
    episodes = {workers: without_timing(r["record"]["episodes"]) for workers, r in runs.items()}
    return {
        "games": base["record"]["games"],
        "identical_results": all(e == episodes[config.workers[0]] for e in episodes.values()),
        "runs": [
            {
                "workers": workers,
                "wall_s": r["wall_s"],
                "speedup": base["wall_s"] / r["wall_s"],
                "won": r["record"]["won"],
                "success_rate": r["record"]["success_rate"],
                "mean_episode_wall_s": r["record"]["mean_episode_wall_s"],
            }
            for workers, r in runs.items()
        ],
    }


def _worker_count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a worker count is >= 0 (0: in this process), got {value}")
    return value


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hgpo bench workers", description=__doc__)
    parser.add_argument("--games", type=Path, help="game folder (default: generate into a temp folder)")
    parser.add_argument(
        "--per-type",
        type=int,
        default=BenchWorkersConfig.per_type,
        help="generated games per type (%(default)s)",
    )
    parser.add_argument("--seed", type=int, default=BenchWorkersConfig.seed, help="generator seed")
    parser.add_argument(
        "--planner", default=BenchWorkersConfig.planner, help="alfworld eval's --planner (%(default)s)"
    )
    parser.add_argument(
        "--workers",
        type=_worker_count,
        nargs="+",
        default=list(BenchWorkersConfig.workers),
        help="worker counts to run, the first the baseline; 0: in this process, without Ray (%(default)s)",
    )
    parser.add_argument(
        "--max-steps", type=int, default=BenchWorkersConfig.max_steps, help="step budget per game"
    )
    add_json_argument(parser, BenchWorkersConfig.json)
    args = parser.parse_args(argv)
    config = BenchWorkersConfig(
        args.games, args.per_type, args.seed, args.planner, tuple(args.workers), args.max_steps, args.json
    )
    results = run(config)
    rows = [
        [
            "in-process" if r["workers"] == 0 else r["workers"],
            r["wall_s"],
            f"{r['speedup']:.2f}x",
            f"{r['won']}/{results['games']}",
            r["mean_episode_wall_s"],
        ]
        for r in results["runs"]
    ]
    print(table(["workers", "wall s", "speed-up", "won", "episode wall s"], rows))
    print(f"per-game results identical across runs: {results['identical_results']}")
    write_json(config.json, "workers", config, results)
    print(f"wrote {config.json}")
    return 0 if results["identical_results"] else 1
