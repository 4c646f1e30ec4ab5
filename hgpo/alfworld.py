"""`hgpo alfworld`: ALFWorld games (make-games), planner evaluation (eval), expert demonstrations (demos).

With ALFWORLD_DATA pointing at the official data set, `eval` and `demos` default to its valid_unseen split.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path
from typing import TypeVar

from hgpo.cli import Commands, dispatch
from hgpo.llm_arguments import add_llm_arguments, llm_config
from hgpo.worker_arguments import add_worker_arguments, workers_from

T = TypeVar("T")

PLANNER_YAML = Path(__file__).resolve().parent.parent / "launch" / "config" / "planner_alfworld.yaml"

COMMANDS: Commands = {
    "make-games": ("hgpo.alfworld:make_games_main", "write solvable games of the six task types"),
    "eval": ("hgpo.alfworld:eval_main", "success per task type of a planner over a game set"),
    "demos": ("hgpo.alfworld:demos_main", "expert trajectories as JSONL records for behaviour cloning"),
}


def main(argv: list[str]) -> int:
    return dispatch("hgpo alfworld", COMMANDS, argv)


def make_games_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo alfworld make-games",
        description="Write ALFWorld games (traj_data.json + game.tw-pddl) of all six task types under "
        "OUT/train and OUT/valid_unseen; each is kept only once ALFWorld's planner expert solves it.",
    )
    parser.add_argument("--out", type=Path, required=True, help="folder to write the game set into")
    parser.add_argument("--per-type", type=int, default=10, help="training games per task type (%(default)s)")
    parser.add_argument(
        "--eval-per-type",
        type=int,
        help="evaluation (valid_unseen) games per task type (default: --per-type)",
    )
    parser.add_argument("--seed", type=int, default=0, help="generator seed (%(default)s)")
    parser.add_argument("--max-steps", type=int, default=50, help="a game's plan must fit this budget")
    parser.add_argument(
        "--task-types", nargs="+", metavar="TYPE", help="only these task types (default: all six)"
    )
    parser.add_argument(
        "--grammar",
        default="alfworld-0.4",
        help="the games' command grammar: alfworld-0.4 (`move X to Y`, as alfworld 0.4 ships) or "
        "alfworld-0.2 (`put X in/on Y`, as the files released for alfworld 0.2.x) (%(default)s)",
    )
    parser.add_argument(
        "--floor-plans",
        action="store_true",
        help="rooms from ALFRED's real floor plans (the layouts the alfworld package ships): training games "
        "in the seen scenes, evaluation games in valid_unseen's scenes 10, 219, 308 and 424",
    )
    args = parser.parse_args(argv)
    eval_per_type = args.per_type if args.eval_per_type is None else args.eval_per_type
    from tqdm import tqdm

    from sim.alfworld import TASK_TYPES, make_games

    task_types = tuple(args.task_types or TASK_TYPES)
    total = (args.per_type + eval_per_type) * len(task_types)
    started = time.perf_counter()
    with tqdm(total=total, unit="game", desc="solving") as bar:
        try:
            report = make_games(
                args.out,
                args.per_type,
                eval_per_type,
                args.seed,
                args.max_steps,
                on_game=lambda split, name: bar.update(1),
                task_types=task_types,
                grammar=args.grammar,
                floor_plans=args.floor_plans,
            )
        except (ValueError, RuntimeError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    lengths = report.plan_lengths
    print(
        f"wrote {sum(report.written.values())} solvable games under {args.out} in "
        f"{time.perf_counter() - started:.1f} s ({report.unsolvable} unsolvable samples dropped)"
    )
    for key, count in sorted(report.written.items()):
        print(f"  {key:<45} {count}")
    if lengths:
        print(f"planner plan length: mean {sum(lengths) / len(lengths):.1f}, max {max(lengths)} commands")
    return 0


def _games_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--games",
        type=Path,
        help="folder of games (searched recursively); default: $ALFWORLD_DATA/json_2.1.1/valid_unseen",
    )
    parser.add_argument(
        "--task-types", nargs="+", metavar="TYPE", help="only games of these task types (default: all six)"
    )
    parser.add_argument(
        "--per-type", type=int, help="play at most this many games of each task type (first in path order)"
    )
    parser.add_argument("--limit", type=int, help="play at most this many games (in path order)")
    parser.add_argument("--max-steps", type=int, default=50, help="step budget per game (%(default)s)")


def _games(args: argparse.Namespace, parser: argparse.ArgumentParser) -> list:
    from sim.alfworld import TASK_TYPES, GameFileError, discover_games, official_split

    folder = args.games or official_split()
    if folder is None:
        parser.error("give --games DIR (e.g. from `hgpo alfworld make-games`) or set ALFWORLD_DATA")
    unknown = set(args.task_types or ()) - set(TASK_TYPES)
    if unknown:
        parser.error(f"unknown task type(s) {', '.join(sorted(unknown))}; known: {', '.join(TASK_TYPES)}")
    try:
        games = discover_games(folder, tuple(args.task_types or TASK_TYPES))
    except GameFileError as err:
        print(f"error: {err}", file=sys.stderr)
        sys.exit(2)
    if args.per_type is not None:
        types = [game.task_type for game in games]
        games = [game for i, game in enumerate(games) if types[:i].count(game.task_type) < args.per_type]
    return games[: args.limit] if args.limit else games


def _started(name: str, start: Callable[[], T], parser: argparse.ArgumentParser) -> T | None:
    """`start()`, which loads the named alfworld planner (in this process or in every Ray worker): a bad
    name is a usage error, a model that cannot load is reported, None."""
    from policies.planning.backends import ModelError

    try:
        return start()
    except ValueError as err:
        parser.error(str(err))
    except ModelError as err:
        print(f"error: planner {name!r} cannot start: {err}", file=sys.stderr)
        return None


def eval_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo alfworld eval",
        description="Play every game of a set with a planner and the text skills; print each game (its "
        "command grammar, what it refused), success per task type in the layout of the ReAct and GiGPO "
        "tables and the games and refusals per grammar, and write the figures as JSON. A refused subgoal is "
        "one no admissible command says (never played: a grammar mismatch shows here) or a command the game "
        "answered 'Nothing happens.'.",
    )
    _games_argument(parser)
    parser.add_argument(
        "--planner",
        default="expert",
        help="planner backend: expert (ALFWorld's planner expert), searcher (the expert without its "
        "knowledge of hidden objects), llm (%(default)s)",
    )
    parser.add_argument(
        "--json",
        type=Path,
        help="write the summary and every episode (its subgoals and the game's answers) here",
    )
    parser.add_argument(
        "--no-task-rules",
        action="store_true",
        help="leave the LLM planner every admissible subgoal, futile and off-task ones too (the domain's "
        "task rules prune them by default); the expert and searcher never consult the rules",
    )
    add_llm_arguments(parser, "--planner llm", PLANNER_YAML)
    add_worker_arguments(parser)
    args = parser.parse_args(argv)
    from tqdm import tqdm

    from hgpo.bench.report import table
    from policies.alfworld.episodes import AlfworldPlayers
    from policies.alfworld.evaluation import game_table, grammar_table, paper_table, summarize
    from policies.sharding import episode_runner
    from sim.alfworld import GameFileError

    llm = llm_config(args, parser)
    if args.no_task_rules:
        llm = dataclasses.replace(llm, task_rules=False)
    players = AlfworldPlayers(args.planner, llm, args.max_steps)
    with ExitStack() as stack:
        play = _started(
            args.planner, lambda: stack.enter_context(episode_runner(players, workers_from(args))), parser
        )
        if play is None:
            return 2
        games = _games(args, parser)
        try:
            results = list(tqdm(play(games), total=len(games), unit="game", desc=f"{args.planner} planner"))
        except GameFileError as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
    summary = summarize(results)
    print(table(*game_table(results)) + "\n")
    print(table(*paper_table({args.planner: summary})))
    print(table(*grammar_table(summary)))
    print(
        f"success {summary['won']}/{summary['games']} ({100 * summary['success_rate']:.1f}%), "
        f"mean steps {summary['mean_steps']:.1f}, mean episode {summary['mean_episode_wall_s']:.2f} s, "
        f"task rules {'on' if llm.task_rules else 'off'}"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        record = {
            "planner": args.planner,
            "llm": dataclasses.asdict(llm) if args.planner == "llm" else None,
            "games_folder": str(args.games or ""),
            "subset": {"task_types": args.task_types, "per_type": args.per_type, "limit": args.limit},
            "max_steps": args.max_steps,
            "task_rules": llm.task_rules,
            **summary,
            "episodes": [
                {
                    **{
                        k: getattr(r, k)
                        for k in (
                            "game",
                            "task_type",
                            "task",
                            "won",
                            "steps",
                            "wall_s",
                            "message",
                            "grammar",
                            "refused",
                            "not_admissible",
                            "nothing_happens",
                        )
                    },
                    "subgoals": [
                        {"subgoal": str(s.subgoal), "success": s.success, "message": s.message}
                        for s in r.history
                    ],
                }
                for r in results
            ],
        }
        args.json.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0


def demos_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo alfworld demos",
        description="Play every game with an expert planner and write one JSONL record per decision of each "
        "game it wins: observation, history, admissible subgoals, the expert's subgoal and the LLM planner's "
        "messages. With --learner llm (DAgger), the LLM planner plays instead and every state it reaches is "
        "recorded with the expert's subgoal there, from every game, won or lost.",
    )
    _games_argument(parser)
    parser.add_argument("--out", type=Path, required=True, help="JSONL file to write")
    parser.add_argument(
        "--planner",
        default="searcher",
        choices=("searcher", "expert"),
        help="searcher: decisions that follow from what the planner observes, as a model can learn them; "
        "expert: ALFWorld's planner expert, which walks straight to hidden objects (%(default)s)",
    )
    parser.add_argument(
        "--learner",
        choices=("llm",),
        help="DAgger: the LLM planner (--adapter) plays and --planner labels the states it reaches",
    )
    parser.add_argument(
        "--drop-search-order",
        action="store_true",
        help="with --learner: leave out the states where learner and expert only walk to different "
        "receptacles with nothing in hand (an order of search the prompt does not show)",
    )
    add_llm_arguments(parser, "--learner llm", PLANNER_YAML)
    add_worker_arguments(parser)
    args = parser.parse_args(argv)
    if args.drop_search_order and not args.learner:
        parser.error("--drop-search-order needs --learner: it compares what the learner and expert choose")
    from tqdm import tqdm

    from policies.alfworld.episodes import AlfworldDemoPlayers
    from policies.sharding import episode_runner

    learner = llm_config(args, parser) if args.learner else None
    players = AlfworldDemoPlayers(args.planner, learner, args.drop_search_order, args.max_steps)
    records = kept = won = dropped = 0
    with ExitStack() as stack:
        play = _started(
            args.learner or args.planner,
            lambda: stack.enter_context(episode_runner(players, workers_from(args))),
            parser,
        )
        if play is None:
            return 2
        games = _games(args, parser)
        args.out.parent.mkdir(parents=True, exist_ok=True)
        partial = args.out.with_name(args.out.name + ".partial")
        with partial.open("w") as out:
            for demos in tqdm(play(games), total=len(games), unit="game", desc="demos"):
                won += demos.won
                dropped += demos.dropped
                if demos.won or learner is not None:  # expert demonstrations: only its successes
                    kept += 1
                    records += len(demos.records)
                    out.writelines(json.dumps(row) + "\n" for row in demos.records)
    partial.replace(args.out)
    who = f"{args.learner} labelled by {args.planner}" if learner else args.planner
    print(
        f"wrote {records} records from {kept}/{len(games)} games to {args.out}; "
        f"the {who} won {won}/{len(games)}"
        + (f"; left out {dropped} states where the two only searched in a different order" if dropped else "")
    )
    return 0
