"""`hgpo bench sim`: how reliably the experts solve each tabletop task through the stack's own planning and
control loops (at the ROS graph's rates), and how fast the simulated world runs on this machine."""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from tqdm import tqdm

from hgpo.bench.arguments import add_json_argument
from hgpo.bench.report import table, write_json
from policies.control import ExpertSkillPolicy
from policies.evaluation import run_episode
from policies.tabletop.planners import ExpertPlannerBackend
from sim.tabletop import TASK_GROUPS, TASKS, TabletopWorld, WorldConfig, make_task


@dataclass(frozen=True)
class BenchSimConfig:
    episodes: int = 50  # seeds 0..episodes-1 per task
    tasks: tuple[str, ...] = TASK_GROUPS["templated"]  # the figures' history is of these five
    physics_rate_hz: float = 100.0  # world steps per second, as the sim_bridge ticks
    control_rate_hz: float = 25.0  # controller ticks per second, as the controller node runs
    rtf_sim_seconds: float = 20.0  # simulated seconds stepped for each raw real-time-factor figure
    json: Path = Path("runs/bench/sim.json")


def measure_real_time_factor(control_dt: float, sim_seconds: float, seed: int = 0) -> dict[str, float]:
    """Raw `world.step` speed under random end-effector commands: simulated seconds per wall second."""
    world = TabletopWorld(WorldConfig(control_dt=control_dt))
    world.reset(make_task("sort", seed))
    rng = np.random.default_rng(seed)
    steps = round(sim_seconds / control_dt)
    commands = rng.uniform(-1, 1, (steps, 3)) * world.config.max_speed
    widths = rng.uniform(0, 0.08, steps)
    started = time.perf_counter()
    for velocity, width in zip(commands, widths, strict=True):
        world.step(velocity, float(width))
    wall = time.perf_counter() - started
    return {
        "control_dt": control_dt,
        "real_time_factor": steps * control_dt / wall,
        "steps_per_s": steps / wall,
    }


def bench_experts(config: BenchSimConfig) -> dict[str, dict]:
    world = TabletopWorld(WorldConfig(control_dt=1.0 / config.physics_rate_hz))
    hold = round(config.physics_rate_hz / config.control_rate_hz)
    planner, policy = ExpertPlannerBackend(), ExpertSkillPolicy()
    results: dict[str, dict] = {}
    for name in config.tasks:
        episodes = [
            run_episode(world, make_task(name, seed), planner, policy, action_hold=hold)
            for seed in tqdm(range(config.episodes), desc=f"{name:<10}", unit="ep", leave=False)
        ]
        sim_time = sum(e.sim_time for e in episodes)
        results[name] = {
            "success_rate": float(np.mean([e.success for e in episodes])),
            "episodes": len(episodes),
            "failed_seeds": [e.seed for e in episodes if not e.success],
            "mean_subgoals": float(np.mean([len(e.subgoals) for e in episodes])),
            "mean_sim_time_s": sim_time / len(episodes),
            "real_time_factor": sim_time / sum(e.wall_time for e in episodes),
        }
    return results


def _parse(argv: list[str]) -> BenchSimConfig:
    default = BenchSimConfig()
    parser = argparse.ArgumentParser(prog="hgpo bench sim", description=__doc__)
    parser.add_argument(
        "--episodes", type=int, default=default.episodes, help="seeds per task (default: %(default)s)"
    )
    parser.add_argument(
        "--tasks",
        nargs="+",
        choices=sorted(TASKS),
        default=list(default.tasks),
        metavar="TASK",
        help=f"tasks to run (default: {', '.join(default.tasks)})",
    )
    add_json_argument(parser, default.json)
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be at least 1")
    return BenchSimConfig(episodes=args.episodes, tasks=tuple(args.tasks), json=args.json)


def main(argv: list[str]) -> int:
    config = _parse(argv)
    experts = bench_experts(config)
    rtf = [
        measure_real_time_factor(dt, config.rtf_sim_seconds) for dt in (1.0 / config.physics_rate_hz, 0.04)
    ]
    print(
        f"\nExpert planner + scripted skills, in-process, world at {config.physics_rate_hz:g} Hz, "
        f"controller at {config.control_rate_hz:g} Hz, seeds 0..{config.episodes - 1}"
    )
    print(
        table(
            ["task", "solved", "success rate", "subgoals", "sim s/episode", "real-time factor"],
            [
                [
                    n,
                    f"{r['episodes'] - len(r['failed_seeds'])}/{r['episodes']}",
                    f"{r['success_rate']:.2f}",
                    r["mean_subgoals"],
                    r["mean_sim_time_s"],
                    r["real_time_factor"],
                ]
                for n, r in experts.items()
            ],
        )
    )
    print("\nRaw world.step under random commands")
    print(
        table(
            ["control_dt s", "real-time factor", "steps/s"],
            [[r["control_dt"], r["real_time_factor"], r["steps_per_s"]] for r in rtf],
        )
    )
    write_json(config.json, "sim", config, {"experts": experts, "world_step": rtf})
    print(f"\nwrote {config.json}")
    return 0 if all(r["success_rate"] == 1.0 for r in experts.values()) else 1
