"""`hgpo bench alfworld`: how fast the ALFWorld bridge's world runs — resets, commands per second with and
without ALFWorld's planner expert (the bridge runs it for the expert planner) — and the expert planner's
success and episode wall time per task type through the same loop and skills the bridge uses."""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from tqdm import tqdm

from hgpo.bench.report import table, write_json
from policies.alfworld.episodes import run_episode
from policies.alfworld.evaluation import summarize
from policies.alfworld.planners import ExpertAlfworldPlanner
from sim.alfworld import TASK_TYPE_LABELS, AlfworldTextEnv, GameEntry, discover_games, make_games


@dataclass(frozen=True)
class BenchAlfworldConfig:
    games: Path | None = None  # a game set; None = generate `per_type` games per type into a temp folder
    per_type: int = 2
    seed: int = 0
    steps: int = 200  # random admissible commands timed per environment kind
    json: Path = Path("runs/bench/alfworld.json")


def step_rate(games: list[GameEntry], expert: bool, steps: int, seed: int) -> dict[str, float]:
    """Commands per second over random admissible commands, and reset times, cycling through the games."""
    env, rng = AlfworldTextEnv(max_steps=10**6, expert=expert), random.Random(seed)
    resets, played, step_wall = [], 0, 0.0
    for game in games:
        started = time.perf_counter()
        observation = env.reset(game.path)
        resets.append(time.perf_counter() - started)
        started = time.perf_counter()
        for _ in range(max(1, steps // len(games))):
            observation = env.step(rng.choice(observation.admissible_commands))
            played += 1
            if observation.won:
                break
        step_wall += time.perf_counter() - started
    env.close()
    return {
        "steps_per_s": played / step_wall,
        "step_ms": 1000 * step_wall / played,
        "reset_s_median": statistics.median(resets),
        "reset_s_max": max(resets),
    }


def run(config: BenchAlfworldConfig) -> dict:
    with tempfile.TemporaryDirectory() as scratch:
        folder = config.games
        if folder is None:
            folder = Path(scratch)
            print(f"generating {config.per_type} games per task type (seed {config.seed}) ...", flush=True)
            make_games(folder, per_type=0, eval_per_type=config.per_type, seed=config.seed)
        games = discover_games(folder)
        rates = {
            "without_expert": step_rate(games, False, config.steps, config.seed),
            "with_planner_expert": step_rate(games, True, config.steps, config.seed),
        }
        env, planner = AlfworldTextEnv(max_steps=50, expert=True), ExpertAlfworldPlanner()
        episodes = [
            run_episode(env, g, planner, True) for g in tqdm(games, desc="expert episodes", unit="game")
        ]
        env.close()
    summary = summarize(episodes)
    for task_type, entry in summary["per_type"].items():
        mine = [e for e in episodes if e.task_type == task_type]
        entry["mean_episode_wall_s"] = statistics.mean(e.wall_s for e in mine) if mine else None
        entry["mean_steps"] = statistics.mean(e.steps for e in mine) if mine else None
    return {"games": len(games), "rates": rates, "expert": summary}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hgpo bench alfworld", description=__doc__)
    parser.add_argument("--games", type=Path, help="game folder (default: generate into a temp folder)")
    parser.add_argument(
        "--per-type", type=int, default=BenchAlfworldConfig.per_type, help="generated games per type"
    )
    parser.add_argument("--seed", type=int, default=BenchAlfworldConfig.seed)
    parser.add_argument(
        "--steps", type=int, default=BenchAlfworldConfig.steps, help="timed commands per env kind"
    )
    parser.add_argument("--json", type=Path, default=BenchAlfworldConfig.json)
    args = parser.parse_args(argv)
    config = BenchAlfworldConfig(args.games, args.per_type, args.seed, args.steps, args.json)
    results = run(config)
    print(
        table(
            ["world", "commands/s", "ms/command", "reset median s", "reset max s"],
            [
                [name, r["steps_per_s"], r["step_ms"], r["reset_s_median"], r["reset_s_max"]]
                for name, r in results["rates"].items()
            ],
        )
    )
    print()
    expert = results["expert"]
    rows = [
        [TASK_TYPE_LABELS[t], f"{e['won']}/{e['games']}", e["mean_steps"], e["mean_episode_wall_s"]]
        for t, e in expert["per_type"].items()
        if e["games"]
    ]
    rows.append(
        ["All", f"{expert['won']}/{expert['games']}", expert["mean_steps"], expert["mean_episode_wall_s"]]
    )
    print(table(["task type", "expert success", "mean steps", "episode wall s"], rows))
    write_json(config.json, "alfworld", {k: str(v) for k, v in asdict(config).items()}, results)
    print(f"wrote {config.json}")
    return 0
