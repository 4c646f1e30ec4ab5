"""`hgpo tabletop-demos`: the expert planner on seeded tabletop tasks, one JSONL record per decision with
the LLM planner's own messages for it (the counterpart of `hgpo alfworld demos`), for behaviour cloning."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="hgpo tabletop-demos", description=__doc__)
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    parser.add_argument(
        "--tasks", nargs="+", default=["all"], help="task names or groups: all, templated, compositions"
    )
    parser.add_argument(
        "--split",
        choices=("train", "heldout"),
        help="draw phrasings (and combinations) from this grammar split (default: the canonical sentences)",
    )
    parser.add_argument("--seeds", type=int, default=50, help="seeds per task (default: %(default)s)")
    parser.add_argument("--seed-start", type=int, default=0, help="first seed (default: %(default)s)")
    parser.add_argument(
        "--history-k", type=int, default=4, help="history in the prompt, as the planner's llm.history_k"
    )
    args = parser.parse_args(argv)
    from tqdm import tqdm

    from policies.planner_training.demos import tabletop_demonstrations
    from sim.tabletop import UnknownTaskError, task_names

    try:
        tasks = [task for name in args.tasks for task in task_names(name)]
    except UnknownTaskError as err:
        print(f"hgpo tabletop-demos: error: {err}", file=sys.stderr)
        return 2
    if args.seeds < 1:
        print("hgpo tabletop-demos: error: --seeds must be >= 1", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    partial = args.out.with_name(args.out.name + ".partial")
    seeds = range(args.seed_start, args.seed_start + args.seeds)
    records = solved = 0
    with partial.open("w") as out, tqdm(total=len(tasks) * len(seeds), unit="ep", desc="demos") as bar:
        for success, lines in tabletop_demonstrations(tasks, seeds, args.history_k, split=args.split):
            bar.update(1)
            if success:  # only solved episodes are demonstrations
                solved += 1
                records += len(lines)
                out.writelines(json.dumps(line) + "\n" for line in lines)
    partial.replace(args.out)
    episodes = len(tasks) * len(seeds)
    print(f"wrote {records} records from {solved}/{episodes} expert-solved episodes to {args.out}")
    return 0
