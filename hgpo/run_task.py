"""`hgpo run-task`: one tabletop task in-process — the planner's and controller's loops with the simulator
called directly, no ROS — optionally filmed to a GIF or MP4 with the instruction, the current subgoal and
its outcome written on the frames. By default it plans and acts as `make sim` does: the LLM planner with the
shipped adapter (settings from launch/config/planner.yaml) and the shipped ONNX skills. `--record` writes
the run as an MCAP recording with the graph's topics (docs/recording.md)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path
from typing import TYPE_CHECKING

from hgpo.llm_arguments import add_llm_arguments, llm_config
from hgpo.skill_arguments import add_skill_arguments, skill_policy

if TYPE_CHECKING:
    from policies.planning import StepRecord
    from ros_nodes.bag.episode import EpisodeRecording
    from sim.tabletop import Subgoal

PLANNER_YAML = Path(__file__).resolve().parent.parent / "launch" / "config" / "planner.yaml"
LINGER_S = 1.5  # the film's last frames: the outcome stays on screen this long


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hgpo run-task", description=__doc__)
    parser.add_argument("--task", default="pick_place", help="tabletop task (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=1, help="scene seed (default: %(default)s)")
    parser.add_argument(
        "--planner",
        default="llm",
        choices=("llm", "expert"),
        help="llm (as make sim: SmolLM2, the shipped adapter) or expert (scripted) (default: %(default)s)",
    )
    add_llm_arguments(parser, "--planner llm", PLANNER_YAML)
    add_skill_arguments(parser, "onnx")
    parser.add_argument(
        "--render", type=Path, metavar="FILE.mp4|FILE.gif", help="film the episode to this file"
    )
    parser.add_argument(
        "--record",
        type=Path,
        metavar="FILE.mcap",
        help="record the run as `make sim record:=true` does (the graph's /hgpo topics, cdr, ROS 2 types; "
        "simulated time): read it with `hgpo bag info|replay`, ros2 bag or Foxglove; a new file",
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
    if args.record is not None and args.record.exists():
        parser.error(f"--record {args.record}: the file exists (a recording is never overwritten)")
    os.environ.setdefault("MUJOCO_GL", "egl")  # headless rendering; must be set before mujoco is imported
    from policies.evaluation import run_episode
    from policies.planning import format_step
    from policies.planning.backends import ModelError
    from policies.worlds import make_planner
    from sim.tabletop import TabletopWorld, WorldConfig, make_task
    from sim.tabletop.captions import GREEN, RED, WHITE, Caption
    from sim.tabletop.recording import RecordingWorld

    try:
        task = make_task(args.task, args.seed)
        policy = skill_policy(args)
        planner = make_planner(args.planner, llm_config(args, parser) if args.planner == "llm" else None)
        config = WorldConfig(control_dt=1.0 / args.physics_rate)
        recorder = RecordingWorld(args.render, config, fps=args.fps) if args.render else None
        world = recorder or TabletopWorld(config)
        recording = _recording(args.record) if args.record else None  # last: nothing after it can fail
    except (ValueError, RuntimeError, ModelError, LookupError, OSError) as err:  # PolicyFileError: ValueError
        print(f"hgpo run-task: error: {err}", file=sys.stderr)
        return 2
    print(f"Task {task.name!r} seed {task.seed}: {task.instruction!r}", flush=True)
    started: dict[int, float] = {}
    instruction = Caption(f'"{task.instruction}"')

    def on_event(index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
        if record is None:
            started[index] = time.perf_counter()
            if recorder is not None:
                recorder.captions = [instruction, Caption(f"{index + 1}. {subgoal}  ...", WHITE)]
            return
        status = "succeeded" if record.success else "failed"
        print(format_step(index, str(subgoal), status, time.perf_counter() - started[index]), flush=True)
        if not record.success:
            print(f"      {record.message}", flush=True)
        if recorder is not None:
            outcome = Caption(f"{index + 1}. {subgoal}  {status}", GREEN if record.success else RED)
            recorder.captions = [instruction, outcome]

    try:
        with ExitStack() as stack:
            stack.enter_context(world)
            if recording is not None:
                stack.enter_context(recording)
            result = run_episode(
                world, task, planner, policy, action_hold=round(hold), on_event=on_event, watch=recording
            )
            verdict = "SUCCESS" if result.success else "FAILURE"
            if recorder is not None:
                done = Caption(f"{verdict}: {result.message}", GREEN if result.success else RED)
                recorder.captions = [*recorder.captions, done]
                recorder.linger(LINGER_S)
    except KeyboardInterrupt:
        kept = f"; the recording up to here is closed: {recording.path}" if recording is not None else ""
        print(f"hgpo run-task: interrupted{kept}", file=sys.stderr)
        return 130
    print("-" * 60)
    print(
        f"{verdict}: {len(result.subgoals)} subgoals, {result.sim_time:.1f} s simulated in "
        f"{result.wall_time:.1f} s — {result.message}"
    )
    if recorder is not None:
        print(f"video: {args.render} ({recorder.frames} frames at {args.fps:g} fps)")
    if recording is not None:
        counts = recording.writer.counts
        print(
            f"recording: {sum(counts.values())} messages on {len(counts)} topics, "
            f"{recording.path.stat().st_size / 1e6:.2f} MB in {recording.path}"
        )
    return 0 if result.success else 1


def _recording(path: Path) -> EpisodeRecording:
    """Opened before the episode, closed (footer written) however it ends, Ctrl-C and errors included;
    a DefinitionError (a LookupError) when the interface packages are not installed."""
    from ros_nodes.bag.episode import EpisodeRecording

    return EpisodeRecording(path)
