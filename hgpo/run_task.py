"""`hgpo run-task`: one tabletop task in-process — the planner's and controller's loops with the simulator
called directly, no ROS — optionally filmed to a GIF or MP4."""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hgpo run-task", description=__doc__)
    parser.add_argument("--task", default="stack", help="tabletop task (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="scene seed (default: %(default)s)")
    parser.add_argument("--planner", default="expert", help="planner backend (default: %(default)s)")
    parser.add_argument("--policy", default="expert", help="skill policy backend (default: %(default)s)")
    parser.add_argument(
        "--render", type=Path, metavar="FILE.mp4|FILE.gif", help="film the episode to this file"
    )
    parser.add_argument("--fps", type=float, default=25.0, help="video frames per simulated second")
    parser.add_argument("--physics-rate", type=float, default=100.0, help="world steps per second (Hz)")
    parser.add_argument("--control-rate", type=float, default=25.0, help="controller ticks per second (Hz)")
    return parser


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    hold = args.physics_rate / args.control_rate if args.physics_rate > 0 and args.control_rate > 0 else 0.0
    if hold < 1 or abs(hold - round(hold)) > 1e-9 or args.fps <= 0:
        parser.error("rates must be positive, and the control rate must divide the physics rate")
    os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must be set before mujoco is imported
    from policies.control import make_skill_policy
    from policies.evaluation import run_episode
    from policies.planning import StepRecord, format_step
    from policies.worlds import make_planner
    from sim.tabletop import Subgoal, TabletopWorld, WorldConfig, make_task
    from sim.tabletop.recording import RecordingWorld

    try:
        task = make_task(args.task, args.seed)
        planner, policy = make_planner(args.planner), make_skill_policy(args.policy)
        config = WorldConfig(control_dt=1.0 / args.physics_rate)
        recorder = RecordingWorld(args.render, config, fps=args.fps) if args.render else None
        world = recorder or TabletopWorld(config)
    except (ValueError, RuntimeError) as err:
        print(f"hgpo run-task: error: {err}", file=sys.stderr)
        return 2
    print(f"Task {task.name!r} seed {task.seed}: {task.instruction!r}", flush=True)
    started: dict[int, float] = {}

    def on_event(index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
        if record is None:
            started[index] = time.perf_counter()
            return
        status = "succeeded" if record.success else "failed"
        print(format_step(index, str(subgoal), status, time.perf_counter() - started[index]), flush=True)
        if not record.success:
            print(f"      {record.message}", flush=True)

    with world:
        result = run_episode(world, task, planner, policy, action_hold=round(hold), on_event=on_event)
    print("-" * 60)
    verdict = "SUCCESS" if result.success else "FAILURE"
    print(
        f"{verdict}: {len(result.subgoals)} subgoals, {result.sim_time:.1f} s simulated in "
        f"{result.wall_time:.1f} s — {result.message}"
    )
    if recorder is not None:
        print(f"video: {args.render} ({recorder.frames} frames at {args.fps:g} fps)")
    return 0 if result.success else 1
