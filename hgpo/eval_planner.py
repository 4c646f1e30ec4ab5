"""`hgpo eval-planner`: a planner against the tabletop tasks, in-process with the controller's loop (the
code path of the planner node: policies/evaluation.py). Writes a run folder (config, every decision as
JSONL, every episode, metrics) and the metrics as JSON; ends with a one-screen summary."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from scipy.stats import binomtest
from tqdm import tqdm

from hgpo.bench.report import table
from hgpo.llm_arguments import llm_config_from
from hgpo.overrides import add_set_argument, parse_sets
from hgpo.skill_arguments import add_skill_arguments, skill_policy
from hgpo.worker_arguments import add_worker_arguments, workers_from
from policies.evaluation import EpisodeResult
from policies.planning import LLMConfig
from policies.run_folders import new_run_folder, time_stamp

if TYPE_CHECKING:
    from ros_nodes.bag.episode import EpisodeRecorder

REPO = Path(__file__).resolve().parent.parent
PLANNER_YAML = REPO / "launch" / "config" / "planner.yaml"


def success_interval(successes: int, episodes: int) -> list[float]:
    """The success rate's 95% Wilson score interval: honest at 0 and 1 and on few episodes, where the
    normal approximation is not."""
    if not episodes:
        return [0.0, 1.0]
    ci = binomtest(successes, episodes).proportion_ci(confidence_level=0.95, method="wilson")
    return [float(ci.low), float(ci.high)]


def summarize(episodes: list[EpisodeResult], tasks: list[str]) -> dict[str, Any]:
    """success_rate with its 95% interval, per-task success, invalid_subgoal_rate and decision latency
    percentiles."""
    decisions = [d for e in episodes for d in e.decisions]
    latencies = [d.latency_ms for d in decisions]
    outputs = sum(d.outputs for d in decisions)
    invalid = sum(d.invalid_outputs for d in decisions)
    per_task = {}
    for name in tasks:
        own = [e for e in episodes if e.task == name]
        per_task[name] = {
            "success_rate": float(np.mean([e.success for e in own])) if own else 0.0,
            "episodes": len(own),
            "failed_seeds": [e.seed for e in own if not e.success],
            "mean_subgoals": float(np.mean([len(e.subgoals) for e in own])) if own else 0.0,
        }
    return {
        "success_rate": float(np.mean([e.success for e in episodes])) if episodes else 0.0,
        "success_ci95": success_interval(sum(e.success for e in episodes), len(episodes)),
        "episodes": len(episodes),
        "per_task": per_task,
        "decisions": len(decisions),
        "model_outputs": outputs,
        "invalid_outputs": invalid,
        "invalid_subgoal_rate": invalid / outputs if outputs else 0.0,
        "planner_failures": sum(d.subgoal is None for d in decisions),
        "decision_latency_ms_p50": float(np.percentile(latencies, 50)) if latencies else 0.0,
        "decision_latency_ms_p95": float(np.percentile(latencies, 95)) if latencies else 0.0,
        "stop_reasons": _count(e.message.split(" (")[0].split(":")[0] for e in episodes),
    }


def _count(items: Any) -> dict[str, int]:
    counts: dict[str, int] = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="hgpo eval-planner", description=__doc__)
    parser.add_argument(
        "--planner", default="llm", help="planner backend: llm | expert (default: %(default)s)"
    )
    parser.add_argument(
        "--task",
        default="all",
        help="tabletop task name, or a group: all, templated (the five single-skill tasks), compositions "
        "(default: %(default)s)",
    )
    parser.add_argument(
        "--split",
        choices=("train", "heldout"),
        help="instructions from this grammar split: heldout phrasings (and, for compositions, held-out "
        "combinations) are never trained on (default: each task's canonical sentence)",
    )
    parser.add_argument("--episodes", type=int, default=10, help="seeds per task (default: %(default)s)")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed (default: %(default)s)")
    parser.add_argument("--json", type=Path, help="also write the metrics to this file")
    parser.add_argument(
        "--record",
        type=Path,
        metavar="DIR",
        help="record each episode as `make sim record:=true` does (the graph's /hgpo topics, cdr, ROS 2 "
        "types; simulated time) to DIR/<task>-seed<seed>.mcap: one file per episode, to replay or open one "
        "task at a time (hgpo bag info|replay, ros2 bag, Foxglove)",
    )
    parser.add_argument(
        "--run-dir", type=Path, help="run folder (default: runs/eval-planner/<time>-<planner>)"
    )
    parser.add_argument(
        "--config", type=Path, default=PLANNER_YAML, help="planner node YAML whose `llm` block is the base"
    )
    parser.add_argument("--model", help=LLMConfig.help("model"))
    parser.add_argument("--backend", help=LLMConfig.help("backend"))
    parser.add_argument("--adapter", help=LLMConfig.help("adapter"))
    parser.add_argument(
        "--no-constraints", action="store_true", help="free decoding, validated and re-asked afterwards"
    )
    parser.add_argument("--temperature", type=float, help="sample at this temperature (default: greedy)")
    parser.add_argument("--threads", type=int, help=LLMConfig.help("threads"))
    parser.add_argument("--device", help=LLMConfig.help("device"))
    parser.add_argument(
        "--max-subgoals", type=int, default=10, help="fail an episode after this many subgoals (sort needs 8)"
    )
    add_skill_arguments(parser, "onnx")
    parser.add_argument("--physics-rate", type=float, default=100.0, help="world steps per second (Hz)")
    parser.add_argument("--control-rate", type=float, default=25.0, help="controller ticks per second (Hz)")
    add_set_argument(parser, "the LLM planner's `llm` settings", "max_new_tokens=48")
    add_worker_arguments(parser)
    return parser


def _llm_config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> LLMConfig:
    flags: dict[str, Any] = {
        name: getattr(args, name) for name in ("model", "backend", "adapter", "threads", "device")
    }
    if args.no_constraints:
        flags["constrained"] = False
    if args.temperature is not None:
        flags.update(do_sample=True, temperature=args.temperature)
    return llm_config_from(args.config, flags, parse_sets(args.set, parser))


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    from policies.control import SkillPolicyConfig
    from policies.evaluation import TabletopPlayers
    from policies.planning import DecisionLog, PlannerError
    from policies.planning.backends import ModelError
    from policies.sharding import episode_runner
    from sim.tabletop import SKILLS, UnknownTaskError, task_names

    hold = args.physics_rate / args.control_rate if args.control_rate > 0 else 0.0
    if args.episodes < 1 or args.max_subgoals < 1 or hold < 1 or abs(hold - round(hold)) > 1e-9:
        parser.error("episodes and max-subgoals must be >= 1; the control rate must divide the physics rate")
    seeds = range(args.seed_start, args.seed_start + args.episodes)
    with ExitStack() as stack:
        try:
            tasks = list(task_names(args.task))
            recorder = _recorder(args.record, tasks, seeds)
            policy = skill_policy(args)
            llm = _llm_config(args, parser)
            players = TabletopPlayers(
                args.planner,
                llm,
                args.skills,
                SkillPolicyConfig(model_dir=args.skill_dir),
                args.split,
                args.physics_rate,
                round(hold),
                args.max_subgoals,
                watches=recorder,
            )
            print(f"loading planner {args.planner!r} ...", flush=True)
            play = stack.enter_context(episode_runner(players, workers_from(args)))
        except (UnknownTaskError, ValueError, ModelError, PlannerError, LookupError) as err:
            print(f"hgpo eval-planner: error: {err}", file=sys.stderr)
            return 2
        if args.run_dir is not None:
            run_dir = args.run_dir
            run_dir.mkdir(parents=True, exist_ok=True)
        else:
            run_dir = new_run_folder(REPO / "runs" / "eval-planner", f"{time_stamp()}-{args.planner}")
        config = {
            "planner": args.planner,
            "tasks": tasks,
            "split": args.split,
            "episodes": args.episodes,
            "seed_start": args.seed_start,
            "max_subgoals": args.max_subgoals,
            "physics_rate_hz": args.physics_rate,
            "control_rate_hz": args.control_rate,
            "skills": {skill: policy.source(skill) for skill in SKILLS},
            "llm": asdict(llm) if args.planner == "llm" else None,
        }
        (run_dir / "config.json").write_text(json.dumps(config, indent=2) + "\n")
        print("skills: " + "; ".join(f"{skill}: {source}" for skill, source in config["skills"].items()))
        episodes: list[EpisodeResult] = []
        jobs = [(name, seed) for name in tasks for seed in seeds]
        log = stack.enter_context(DecisionLog(run_dir / "decisions.jsonl"))
        out = stack.enter_context((run_dir / "episodes.jsonl").open("w"))
        bar = tqdm(play(jobs), total=len(jobs), desc="episodes", unit="ep")
        for result in bar:
            episodes.append(result)
            for decision in result.decisions:
                log.write(decision)
            record = {k: v for k, v in asdict(result).items() if k != "decisions"}
            out.write(json.dumps(record, default=str) + "\n")
            out.flush()
            bar.set_postfix(task=result.task, success=f"{np.mean([e.success for e in episodes]):.2f}")
    metrics = summarize(episodes, tasks)
    metrics_json = json.dumps({"config": config, **metrics}, indent=2) + "\n"
    (run_dir / "metrics.json").write_text(metrics_json)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(metrics_json)
    rows = [
        [name, f"{t['success_rate']:.2f}", t["episodes"], f"{t['mean_subgoals']:.1f}"]
        for name, t in metrics["per_task"].items()
    ]
    print(table(["task", "success", "episodes", "subgoals/ep"], rows))
    low, high = metrics["success_ci95"]
    print(
        f"success {metrics['success_rate']:.2f} (95% interval {low:.2f}-{high:.2f}) over "
        f"{metrics['episodes']} episodes; "
        f"{metrics['decisions']} decisions, invalid outputs {metrics['invalid_subgoal_rate']:.3f}, "
        f"latency p50 {metrics['decision_latency_ms_p50']:.0f} ms "
        f"p95 {metrics['decision_latency_ms_p95']:.0f} ms"
    )
    print(f"run folder: {run_dir}")
    if args.record:
        print(f"recordings: {len(jobs)} files in {args.record}")
    return 0


def _recorder(folder: Path | None, tasks: list[str], seeds: range) -> EpisodeRecorder | None:
    """Where each episode is recorded; a ValueError before anything runs when a file is there already."""
    if folder is None:
        return None
    from ros_nodes.bag.definitions import message_definition
    from ros_nodes.bag.episode import TOPICS, EpisodeRecorder

    for type_name, _qos in TOPICS.values():
        message_definition(type_name)  # a missing interface package: said now, not after the first episode
    recorder = EpisodeRecorder(folder)
    there = [path for path in (recorder.path(t, s) for t in tasks for s in seeds) if path.exists()]
    if there:
        raise ValueError(
            f"--record {folder}: {there[0].name} and {len(there) - 1} more exist (never overwritten)"
        )
    return recorder
