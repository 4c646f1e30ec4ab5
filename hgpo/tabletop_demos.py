"""`hgpo tabletop-demos`: the expert planner on seeded tabletop tasks, one JSONL record per decision with
the LLM planner's own messages for it (the counterpart of `hgpo alfworld demos`), for behaviour cloning.
With --learner llm (DAgger) the LLM planner plays instead, and every state it reaches is recorded with the
expert's subgoal there, from every episode, solved or not. With --rephrase FILE nothing is played: every
record of FILE is written with --copies more of itself, each in another training phrasing of its task."""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path

from hgpo.eval_planner import PLANNER_YAML
from hgpo.llm_arguments import add_llm_arguments, llm_config
from hgpo.skill_arguments import add_skill_arguments
from hgpo.worker_arguments import add_worker_arguments, workers_from


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
    parser.add_argument(
        "--goals",
        action="store_true",
        help="for a planner with llm.goal_parse: record each episode's goal as the planner is to write it, "
        "and show it with its progress in every prompt",
    )
    parser.add_argument(
        "--learner",
        choices=("llm",),
        help="DAgger: the LLM planner (--adapter) plays and the expert labels the states it reaches",
    )
    parser.add_argument(
        "--rephrase",
        type=Path,
        metavar="FILE",
        help="write FILE's records, each followed by --copies of it in other training phrasings "
        "(no episodes are played)",
    )
    parser.add_argument(
        "--copies", type=int, default=2, help="rephrased copies of each record (default: %(default)s)"
    )
    add_skill_arguments(parser, "expert")
    add_llm_arguments(parser, "--learner llm", PLANNER_YAML)
    add_worker_arguments(parser)
    args = parser.parse_args(argv)
    if args.rephrase:
        return rephrase_file(args.rephrase, args.out, args.copies)
    from tqdm import tqdm

    from policies.control import SkillPolicyConfig
    from policies.planner_training.demos import TabletopDemoPlayers
    from policies.planning.backends import ModelError
    from policies.sharding import episode_runner
    from sim.tabletop import UnknownTaskError, task_names

    if args.seeds < 1:
        print("hgpo tabletop-demos: error: --seeds must be >= 1", file=sys.stderr)
        return 2
    players = TabletopDemoPlayers(
        args.history_k,
        args.split,
        llm_config(args, parser) if args.learner else None,
        args.skills,
        SkillPolicyConfig(model_dir=args.skill_dir),
        goals=args.goals,
    )
    seeds = range(args.seed_start, args.seed_start + args.seeds)
    with ExitStack() as stack:
        try:
            jobs = [(task, seed) for name in args.tasks for task in task_names(name) for seed in seeds]
            play = stack.enter_context(episode_runner(players, workers_from(args)))
        except (UnknownTaskError, ValueError) as err:
            print(f"hgpo tabletop-demos: error: {err}", file=sys.stderr)
            return 2
        except ModelError as err:
            print(f"hgpo tabletop-demos: error: the learner cannot start: {err}", file=sys.stderr)
            return 2
        args.out.parent.mkdir(parents=True, exist_ok=True)
        partial = args.out.with_name(args.out.name + ".partial")
        records = kept = solved = 0
        with partial.open("w") as out, tqdm(play(jobs), total=len(jobs), unit="ep", desc="demos") as bar:
            for played, (success, lines) in enumerate(bar, start=1):
                solved += success
                if success or args.learner:  # expert demonstrations: only its successes
                    kept += 1
                    records += len(lines)
                    out.writelines(json.dumps(line) + "\n" for line in lines)
                bar.set_postfix(solved=f"{solved / played:.2f}")
    partial.replace(args.out)
    who = "the LLM planner labelled by the expert" if args.learner else "the expert"
    print(
        f"wrote {records} records from {kept}/{len(jobs)} episodes to {args.out}; "
        f"{who} solved {solved}/{len(jobs)}"
    )
    return 0


def rephrase_file(source: Path, out: Path, copies: int) -> int:
    """`--rephrase`: words drawn with a fixed seed, so a file rephrases the same way each time."""
    import numpy as np

    from policies.planner_training.demos import rephrase

    if copies < 1:
        print("hgpo tabletop-demos: error: --copies must be >= 1", file=sys.stderr)
        return 2
    try:
        records = [json.loads(line) for line in source.read_text().splitlines() if line.strip()]
        rng = np.random.default_rng(0)
        rows = [row for record in records for row in (record, *rephrase(record, copies, rng))]
    except (OSError, ValueError, KeyError) as err:
        print(f"hgpo tabletop-demos: error: {source}: {err}", file=sys.stderr)
        return 2
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(out.name + ".partial")
    partial.write_text("".join(json.dumps(row) + "\n" for row in rows))
    partial.replace(out)
    made = len(rows) - len(records)
    print(f"wrote {len(rows)} records ({len(records)} from {source} and {made} rephrased) to {out}")
    return 0
