"""`hgpo train-skills [CONFIG ...]`: train goal-conditioned skills, each in a run folder; a success table."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hgpo.bench.report import table
from hgpo.overrides import add_set_argument, parse_sets
from policies.run_folders import new_run_folder, release, time_stamp
from policies.skills.config import CONFIG_DIR, TrainConfig, load_config, with_overrides
from policies.skills.runner import OffPolicyRunner
from policies.stop_request import StopRequest
from sim.config_mapping import merge

if TYPE_CHECKING:
    from policies.skills.ppo_runner import PpoRunner


def _overrides(args: argparse.Namespace) -> dict[str, Any]:
    names = (
        "backend",
        "seed",
        "env_steps",
        "time_budget_s",
        "num_envs",
        "randomize",
        "eval_episodes",
        "device",
    )
    return {name: getattr(args, name) for name in names if getattr(args, name) is not None}


def _runner(config: TrainConfig, run_dir: Path, progress: bool) -> OffPolicyRunner | PpoRunner:
    if config.algorithm == "ppo":
        from policies.skills.ppo_runner import PpoRunner  # rsl-rl-lib: needed by PPO runs only

        return PpoRunner(config, run_dir, progress)
    return OffPolicyRunner(config, run_dir, progress)


def main(argv: list[str]) -> int:
    shipped = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))
    parser = argparse.ArgumentParser(
        prog="hgpo train-skills",
        description="Train goal-conditioned skills (SAC + hindsight experience replay; rsl-rl-lib's PPO "
        "where the config says algorithm: ppo) on a batched env backend. Each config gets a run folder "
        "(config, metrics, TensorBoard logs, curves.png, checkpoints); a run folder that already has a "
        "checkpoint is resumed. Ends with a success table.",
    )
    parser.add_argument(
        "configs", nargs="*", default=["reach"], help=f"YAML configs, by path or shipped name ({shipped})"
    )
    parser.add_argument("--runs-dir", type=Path, default=Path("runs/skills"), help="parent of run folders")
    parser.add_argument("--run-name", help="run folder name (one config only); default: SKILL-seedN-TIME")
    parser.add_argument("--resume", type=Path, help="continue the run in this folder from its checkpoint")
    parser.add_argument("--backend", help="env backend: mujoco, mjx, gymnasium, robosuite, isaacgym")
    parser.add_argument("--seed", type=int)
    parser.add_argument("--env-steps", type=int, help="total env transitions")
    parser.add_argument("--time-budget-s", type=float, help="stop after this much wall-clock time")
    parser.add_argument("--num-envs", type=int)
    parser.add_argument("--eval-episodes", type=int)
    parser.add_argument(
        "--device", help="where the networks train: cpu or cuda (a GPU box); SAC's envs stay on the CPU"
    )
    parser.add_argument(
        "--randomize",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="domain randomization during training (default: as the config says)",
    )
    add_set_argument(
        parser, "the training config", "sac.actor_lr=3e-4 or randomization.action_latency_steps=[0,2]"
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar (logs and CI)")
    args = parser.parse_args(argv)
    overrides = merge(_overrides(args), parse_sets(args.set, parser))

    jobs: list[tuple[TrainConfig, Path | None]] = []
    try:
        if args.resume is not None:
            saved = args.resume / "config.yaml"
            if not saved.is_file():
                parser.error(f"--resume {args.resume}: no config.yaml (not a train-skills run folder)")
            jobs.append((with_overrides(load_config(saved), overrides), args.resume))
        else:
            if args.run_name and len(args.configs) > 1:
                parser.error("--run-name names one run; give one config with it")
            for name in args.configs:
                config = with_overrides(load_config(name), overrides)
                jobs.append((config, args.runs_dir / args.run_name if args.run_name else None))
    except (FileNotFoundError, ValueError) as err:
        print(f"hgpo train-skills: {err}", file=sys.stderr)
        return 2

    rows = []
    stamp = time_stamp()
    for config, chosen in jobs:
        # a default name is claimed, not shared: a folder with a checkpoint would be resumed
        run_dir = chosen or new_run_folder(args.runs_dir, f"{config.skill}-seed{config.seed}-{stamp}")
        try:
            runner = _runner(config, run_dir, progress=not args.no_progress)
        except ValueError as err:
            if chosen is None:
                release(run_dir)
            print(f"hgpo train-skills: {err}", file=sys.stderr)
            return 2
        with StopRequest(f"training {config.skill}") as stop:
            summary = runner.learn(stop)
        final = summary.final
        rows.append(
            [
                summary.skill,
                summary.backend,
                summary.env_steps,
                round(summary.wall_time_s),
                f"{final.success_rate:.2f} ({final.episodes} ep)",
                round(final.mean_return, 1),
                str(summary.run_dir),
            ]
        )
        if summary.stopped:
            break
    print()
    print(table(["skill", "backend", "env steps", "wall s", "success", "return", "run folder"], rows))
    if any(config.algorithm == "sac" for config, _ in jobs):
        print("export a SAC policy: hgpo export-onnx RUN_FOLDER/checkpoints/last.pt policy.onnx")
    if summary.stopped:
        print(f"stopped by Ctrl-C; continue with: hgpo train-skills --resume {summary.run_dir}")
        return 130
    return 0
