"""`hgpo bench workers`: the same work in one process and on N Ray workers (`--workers N`), each run a fresh
command as a user runs it. `hgpo alfworld eval` over one game set: wall time, speed-up over the first run,
and whether every run gave the same per-game results (it must). A few planner-RL iterations (`hgpo
train-planner --algo grpo`, tabletop), per worker count and, with `--rl-overlap`, also with rollouts
overlapping the updates (`rl.overlap`): the command's wall time, and the iterations' wall, rollout and
update times from the run's metrics."""

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

PARTS = ("alfworld", "rl")


def without_timing(value: Any) -> Any:
    """`value` (parsed JSON) with every clock figure left out, at any depth."""
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in TIMING_KEYS}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


@dataclass(frozen=True)
class BenchWorkersConfig:
    parts: tuple[str, ...] = PARTS
    workers: tuple[int, ...] = (0, 2)  # 0: in the command's process, without Ray; the first is the baseline
    games: Path | None = None  # a game set; None: generate `per_type` evaluation games per task type
    per_type: int = 8  # 8 x 6 task types = 48 games
    seed: int = 0
    planner: str = "llm"
    max_steps: int = 50
    group_size: int = 8  # RL: episodes per initial state
    rl_iterations: int = 4  # RL: iterations per run; the first is never overlapped
    rl_overlap: tuple[int, ...] | None = None  # RL: counts run again with rl.overlap; None: the largest
    rl_sets: tuple[
        str, ...
    ] = ()  # RL: more `--set key=value` for train-planner (e.g. adapter=..., model=...)
    json: Path = Path("runs/bench/workers.json")


def _timed(command: list[str], workers: int) -> float:
    """Runs `hgpo ...` (with --workers N unless 0) as its own process; its wall time."""
    command = [sys.executable, "-m", "hgpo.cli", *command] + (["--workers", str(workers)] if workers else [])
    print(f"$ hgpo {' '.join(command[3:])}", flush=True)
    started = time.perf_counter()
    subprocess.run(command, check=True)
    return time.perf_counter() - started


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    return sum(row[key] for row in rows) / len(rows)


def alfworld_runs(games: Path, config: BenchWorkersConfig, scratch: Path) -> dict[str, Any]:
    records, walls = {}, {}
    for workers in config.workers:
        out = scratch / f"eval-{workers}.json"
        command = ["alfworld", "eval", "--games", str(games), "--planner", config.planner]
        command += ["--max-steps", str(config.max_steps), "--json", str(out)]
        walls[workers] = _timed(command, workers)
        records[workers] = json.loads(out.read_text())
    base = config.workers[0]
    episodes = {workers: without_timing(record["episodes"]) for workers, record in records.items()}
    return {
        "games": records[base]["games"],
        "identical_results": all(e == episodes[base] for e in episodes.values()),
        "runs": [
            {
                "workers": workers,
                "wall_s": walls[workers],
                "speedup": walls[base] / walls[workers],
                "won": record["won"],
                "success_rate": record["success_rate"],
                "mean_episode_wall_s": record["mean_episode_wall_s"],
            }
            for workers, record in records.items()
        ],
    }


def rl_runs(config: BenchWorkersConfig, scratch: Path) -> dict[str, Any]:
    """`rl_iterations` grpo iterations on the tabletop per worker count, then per count of `rl_overlap`
    with overlap; the iterations' times from the run's metrics. The iteration wall time is the mean over
    the middle iterations, the steady state: not the first (never overlapped) nor the last (no next
    rollouts run during its update); with fewer than three, over those after the first, or the one."""
    cases = [(workers, False) for workers in config.workers]
    cases += [(workers, True) for workers in overlapped_counts(config)]
    runs: list[dict[str, Any]] = []
    for workers, overlap in cases:
        run_dir = scratch / f"rl-{workers}{'-overlap' if overlap else ''}"
        sets = [f"rl.iterations={config.rl_iterations}", f"rl.group_size={config.group_size}"]
        sets += ["eval_episodes=0", "eval_every=0", f"rl.overlap={str(overlap).lower()}"]
        command = ["train-planner", "--algo", "grpo", "--domain", "tabletop", "--run-dir", str(run_dir)]
        command += ["--no-progress"] + [arg for value in (*sets, *config.rl_sets) for arg in ("--set", value)]
        wall = _timed(command, workers)
        rows = [json.loads(line) for line in (run_dir / "metrics.jsonl").read_text().splitlines()]
        steady = rows[1:-1] or rows[1:] or rows
        runs.append(
            {
                "workers": workers,
                "overlap": overlap,
                "wall_s": wall,
                "iteration_s": _mean(steady, "perf/iteration_s"),
                "iterations_s": [row["perf/iteration_s"] for row in rows],
                "rollout_s": _mean(rows, "perf/rollout_s"),
                "update_s": _mean(rows, "perf/update_s"),
                "staleness": [row["train/staleness"] for row in rows],
                "episodes": [row["rollout/kept_episodes"] for row in rows],
                "success_rate": _mean(rows, "rollout/success_rate"),
            }
        )
        runs[-1]["speedup"] = runs[0]["iteration_s"] / runs[-1]["iteration_s"]
    return {"group_size": config.group_size, "iterations": config.rl_iterations, "runs": runs}


def overlapped_counts(config: BenchWorkersConfig) -> tuple[int, ...]:
    """The worker counts the RL part runs again with rl.overlap: as given, else the largest of `workers`
    (none when that is 0: overlap needs workers)."""
    if config.rl_overlap is not None:
        return config.rl_overlap
    largest = max(config.workers)
    return (largest,) if largest else ()


def run(config: BenchWorkersConfig) -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as scratch_dir:
        scratch = Path(scratch_dir)
        if "alfworld" in config.parts:
            games = config.games
            if games is None:
                from sim.alfworld import make_games

                print(
                    f"generating {config.per_type} games per task type (seed {config.seed}) ...", flush=True
                )
                make_games(scratch / "games", per_type=0, eval_per_type=config.per_type, seed=config.seed)
                games = scratch / "games" / "valid_unseen"
            results["alfworld_eval"] = alfworld_runs(games, config, scratch)
        if "rl" in config.parts:
            results["rl_iteration"] = rl_runs(config, scratch)
    return results


def _worker_count(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a worker count is >= 0 (0: in one process), got {value}")
    return value


def _overlap_count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"overlap needs workers: a count >= 1, got {value}")
    return value


def _label(workers: int, overlap: bool = False) -> str:
    label = "in-process" if workers == 0 else f"{workers} worker" + ("s" if workers > 1 else "")
    return label + (" + overlap" if overlap else "")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hgpo bench workers", description=__doc__)
    defaults = BenchWorkersConfig()
    parser.add_argument(
        "--parts", nargs="+", choices=PARTS, default=list(PARTS), help="what to time (%(default)s)"
    )
    parser.add_argument(
        "--workers",
        type=_worker_count,
        nargs="+",
        default=list(defaults.workers),
        help="worker counts to run, the first the baseline; 0: in one process, without Ray (%(default)s)",
    )
    parser.add_argument(
        "--games", type=Path, help="alfworld: game folder (default: generate into a temp folder)"
    )
    parser.add_argument(
        "--per-type",
        type=int,
        default=defaults.per_type,
        help="alfworld: generated games per type (%(default)s)",
    )
    parser.add_argument("--seed", type=int, default=defaults.seed, help="alfworld: generator seed")
    parser.add_argument("--planner", default=defaults.planner, help="alfworld eval's --planner (%(default)s)")
    parser.add_argument("--max-steps", type=int, default=defaults.max_steps, help="alfworld: steps per game")
    parser.add_argument(
        "--group-size", type=int, default=defaults.group_size, help="rl: episodes per state (%(default)s)"
    )
    parser.add_argument(
        "--rl-iterations",
        type=int,
        default=defaults.rl_iterations,
        help="rl: iterations per run; the middle ones are timed (%(default)s)",
    )
    parser.add_argument(
        "--rl-overlap",
        type=_overlap_count,
        nargs="*",
        metavar="N",
        help="rl: worker counts to run again with rollouts overlapping the updates (rl.overlap); default: "
        "the largest of --workers; none given: no overlapped run",
    )
    parser.add_argument(
        "--rl-set", nargs="+", default=[], metavar="KEY=VALUE", help="rl: more train-planner --set values"
    )
    add_json_argument(parser, defaults.json)
    args = parser.parse_args(argv)
    if args.rl_iterations < 1:
        parser.error(f"--rl-iterations must be >= 1, got {args.rl_iterations}")
    config = BenchWorkersConfig(
        tuple(args.parts),
        tuple(args.workers),
        args.games,
        args.per_type,
        args.seed,
        args.planner,
        args.max_steps,
        args.group_size,
        args.rl_iterations,
        None if args.rl_overlap is None else tuple(args.rl_overlap),
        tuple(args.rl_set),
        args.json,
    )
    results = run(config)
    if "alfworld_eval" in results:
        alfworld = results["alfworld_eval"]
        rows = [
            [
                _label(r["workers"]),
                r["wall_s"],
                f"{r['speedup']:.2f}x",
                f"{r['won']}/{alfworld['games']}",
                r["mean_episode_wall_s"],
            ]
            for r in alfworld["runs"]
        ]
        print(table(["alfworld eval", "wall s", "speed-up", "won", "episode wall s"], rows))
        print(f"per-game results identical across runs: {alfworld['identical_results']}\n")
    if "rl_iteration" in results:
        rows = [
            [
                _label(r["workers"], r["overlap"]),
                r["wall_s"],
                r["iteration_s"],
                f"{r['speedup']:.2f}x",
                r["rollout_s"],
                r["update_s"],
            ]
            for r in results["rl_iteration"]["runs"]
        ]
        header = ["grpo", "command wall s", "iteration s", "speed-up", "rollout s", "update s"]
        print(table(header, rows))
    write_json(config.json, "workers", config, results)
    print(f"wrote {config.json}")
    return 0 if results.get("alfworld_eval", {}).get("identical_results", True) else 1
