"""`hgpo train-planner`: train the LLM planner's LoRA adapter by behaviour cloning (bc), RL from
environment reward with GRPO, GiGPO or HGPO advantages, or DPO from pairs mined from rollouts, on the
tabletop tasks or ALFWorld games. Writes a run folder (config, metrics, curves, TensorBoard, checkpoints,
the adapter) and ends with a summary; `--resume RUN` continues a run from its checkpoint.

Typical use: BC from demonstrations, then RL from the BC adapter (also the frozen KL reference):

    hgpo tabletop-demos --out runs/demos/tabletop.jsonl
    hgpo train-planner --algo bc --domain tabletop --demos runs/demos/tabletop.jsonl
    hgpo train-planner --algo hgpo --domain tabletop --adapter runs/planner/<bc run>/adapter
    hgpo eval-planner --adapter runs/planner/<hgpo run>/adapter
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]

from hgpo.overrides import add_set_argument, parse_sets
from hgpo.worker_arguments import add_worker_arguments, workers_from
from policies.run_folders import new_run_folder, release, time_stamp
from sim.config_mapping import merge, nest

REPO = Path(__file__).resolve().parent.parent


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hgpo train-planner", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--algo", choices=("bc", "grpo", "gigpo", "hgpo", "dpo"), help="training algorithm")
    parser.add_argument("--domain", choices=("tabletop", "alfworld"), help="world (default: the config's)")
    parser.add_argument(
        "--config", type=Path, help="YAML config (default: policies/planner_training/config/<algo>.yaml)"
    )
    parser.add_argument("--model", help="base model: alias, folder or cached hub name")
    parser.add_argument(
        "--adapter", help="starting LoRA adapter folder (RL, DPO: the BC adapter; the reference)"
    )
    parser.add_argument(
        "--demos",
        nargs="+",
        help="BC, and the BC term of RL (rl.bc_coef): demonstration JSONL files or planner decision logs",
    )
    parser.add_argument("--seed", type=int)
    parser.add_argument("--device", help="torch device of rollouts and updates: cpu (default), cuda, cuda:N")
    parser.add_argument(
        "--iterations", type=int, help="RL iterations (rl.iterations) or DPO rounds (dpo.rounds)"
    )
    parser.add_argument("--epochs", type=int, help="BC epochs (bc.epochs)")
    parser.add_argument("--eval-episodes", type=int, help="greedy evaluation episodes per task / game type")
    parser.add_argument("--time-budget-s", type=float, help="stop training after this many seconds")
    add_set_argument(parser, "the training config", "rl.kl_coef=0.05")
    parser.add_argument(
        "--run-dir", type=Path, help="run folder (default: runs/planner/<algo>-<domain>-seed<N>-<time>)"
    )
    parser.add_argument("--resume", type=Path, metavar="RUN", help="continue the run in this folder")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    add_worker_arguments(
        parser,
        "here the RL and DPO rollouts: each worker samples whole groups with its own copy of the base model, "
        "sent the adapter weights every iteration, while this process evaluates and updates (a group samples "
        "from its own seed: the episodes differ from a run without workers, not between worker counts); "
        "--set rl.overlap=true: they sample the next iteration's groups during the update, one iteration "
        "off-policy (docs/distributed.md)",
    )
    return parser


def _overrides(args: argparse.Namespace, parser: argparse.ArgumentParser, algo: str) -> dict[str, Any]:
    overrides: dict[str, Any] = {}
    for name in ("algo", "domain", "model", "adapter", "seed", "device"):
        if getattr(args, name) is not None:
            overrides[name] = getattr(args, name)
    if args.demos:
        nest(overrides, "bc.demos", list(args.demos))
    if args.iterations is not None:
        nest(overrides, "dpo.rounds" if algo == "dpo" else "rl.iterations", args.iterations)
    if args.epochs is not None:
        nest(overrides, "bc.epochs", args.epochs)
    if args.eval_episodes is not None:
        overrides["eval_episodes"] = args.eval_episodes
    if args.time_budget_s is not None:
        overrides["time_budget_s"] = args.time_budget_s
    return merge(overrides, parse_sets(args.set, parser))


def main(argv: list[str]) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.resume is None and args.algo is None:
        parser.error("give --algo bc|grpo|gigpo|hgpo|dpo (or --resume RUN)")
    from hgpo.bench.report import table
    from policies.planner_training.config import CONFIG_DIR, from_mapping, to_mapping
    from policies.planner_training.data import DataError
    from policies.planner_training.runner import train
    from policies.planning.backends import ModelError
    from policies.stop_request import StopRequest
    from sim.alfworld.contract import GameFileError

    try:
        if args.resume is not None:
            saved = args.resume / "config.yaml"
            if not saved.is_file():
                parser.error(
                    f"--resume {args.resume}: no config.yaml there; give a run folder of this command"
                )
            base = yaml.safe_load(saved.read_text())
            run_dir = args.resume
        else:
            path = args.config or CONFIG_DIR / f"{args.algo}.yaml"
            if not path.is_file():
                parser.error(f"config {path} does not exist")
            base = yaml.safe_load(path.read_text()) or {}
            run_dir = None
        algo = args.algo or str(base.get("algo", ""))
        config = from_mapping(merge(base, _overrides(args, parser, algo)), str(args.config or "config"))
    except ValueError as err:
        print(f"hgpo train-planner: error: {err}", file=sys.stderr)
        return 2
    claimed = run_dir is None and args.run_dir is None  # a default name is claimed, never shared
    if run_dir is None:
        run_dir = args.run_dir or new_run_folder(
            REPO / "runs" / "planner", f"{config.algo}-{config.domain}-seed{config.seed}-{time_stamp()}"
        )
    if args.resume is not None and to_mapping(config) != base:
        (run_dir / "config.yaml").write_text(yaml.safe_dump(to_mapping(config), sort_keys=False))
    print(
        f"training the {config.domain} planner with {config.algo} on {config.model}"
        f"{' from ' + config.adapter if config.adapter else ''}; run folder {run_dir}",
        flush=True,
    )
    try:
        with StopRequest("training") as stop:
            outcome = train(config, run_dir, not args.no_progress, stop, workers_from(args))
    except (DataError, ModelError, ValueError, FileNotFoundError, GameFileError) as err:
        if claimed:
            release(run_dir)
        print(f"hgpo train-planner: error: {err}", file=sys.stderr)
        return 2
    rows = [[key, f"{value:.4g}"] for key, value in sorted(outcome.metrics.items()) if key != "step"]
    print(table(["metric (last value)", "value"], rows))
    if outcome.evaluation:
        per_kind = outcome.evaluation["per_kind"]
        print(
            table(
                ["held-out", "success"],
                [[k, f"{v:.2f}"] for k, v in per_kind.items()]
                + [["all", f"{outcome.evaluation['success_rate']:.2f}"]],
            )
        )
    print(f"{outcome.steps} steps in {outcome.wall_s:.0f} s; adapter: {run_dir / 'adapter'}")
    if outcome.stopped:
        print(f"stopped by Ctrl-C; continue with: hgpo train-planner --resume {run_dir}")
        return 130
    return 0
