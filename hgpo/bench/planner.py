"""`hgpo bench planner`: planner decisions and planner-training throughput on this machine, side by side in
one run.

- Decisions: the prompts of the first rollouts' decisions, in play order, answered greedily by the served
  planner (adapter merged) with each number format (`llm.dtype`) and constrained decoder in turn,
  alternating prompt by prompt: latency
  p50 / p95 and where it went (chat template, tokenization, prefill of the prompt's uncached tokens,
  later forward passes, the decoder's own work between them), prompt tokens reused from the prefix cache,
  and whether every variant gave the first one's answers.
- Rollouts: sampled episodes of the planner being trained (its `LLMPlanner`, constrained decoding; on the
  tabletop the controller's skill policies as `rollout.skills` says, in ALFWorld the text skills), played
  one at a time and `rollout.batch` at a time (decisions batched into one generation), with each number
  format and decoder: episodes/s, decisions/s and generated tokens/s.
- Updates: forward and backward of the policy's answer log-probabilities on minibatches of those
  decisions, as the RL update and BC run them, with the prompts' shared prefix run once per minibatch
  and without, in each number format of the frozen base model: training tokens/s (prompt and answer tokens of
  the examples).
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from hgpo.bench.arguments import add_json_argument
from hgpo.bench.report import table, write_json
from policies.planner_training import rl
from policies.planner_training.config import PlannerTrainConfig, RolloutSettings
from policies.planner_training.data import Example
from policies.planner_training.model import Policy, load_policy, token_logprobs
from policies.planner_training.rollouts import Episode, make_arena
from policies.planning import LLMConfig
from policies.planning.backends import ConstrainedRequest
from policies.planning.backends.transformers_lm import TransformersModel
from policies.planning.llm_config import DECODINGS, DTYPES


@dataclass(frozen=True)
class BenchPlannerConfig:
    model: str = "smollm2-135m-instruct"
    domain: str = "tabletop"
    adapter: str | None = None  # None: the domain's shipped BC adapter, the policy RL starts from
    tasks: tuple[str, ...] = ("sort", "stack")  # tabletop
    games: str = RolloutSettings.games  # alfworld: the training games, in path order
    groups: int = 1  # initial states per task (alfworld: games); each plays `group_size` episodes
    max_subgoals: int = 0  # an episode's budget; 0: the domain's (RolloutSettings.budget)
    group_size: int = 8
    batches: tuple[int, ...] = (1, 8)  # rollout.batch values compared
    decodings: tuple[str, ...] = ("plain", "jump_forward")  # constrained decoders compared
    dtypes: tuple[str, ...] = ("float32", "bfloat16")  # number formats compared (llm.dtype)
    minibatch: int = 8  # decisions per update minibatch
    threads: int = 1
    seed: int = 0
    json: Path = Path("runs/bench/planner.json")


def rollouts(
    policy: Policy, train: PlannerTrainConfig, states: list[str], group: int
) -> tuple[dict[str, Any], list[Episode]]:
    """The figures of sampled rollouts, and their episodes."""
    arena = make_arena(train.domain, train.rollout)
    started = time.perf_counter()
    episodes = rl.play(arena, policy, train, states, group, sample=True, seed=train.seed)
    seconds = time.perf_counter() - started
    arena.close()
    metrics = rl.rollout_metrics(episodes, train.reward, policy.tokenizer, seconds)
    return {
        "batch": train.rollout.batch,
        "decoding": train.rollout.decoding,
        "episodes": len(episodes),
        "decisions": int(metrics["rollout/decisions"]),
        "seconds": seconds,
        "episodes_per_s": metrics["perf/episodes_per_s"],
        "decisions_per_s": metrics["rollout/decisions"] / seconds,
        "generated_tokens_per_s": metrics["perf/generated_tokens_per_s"],
        "success_rate": metrics["rollout/success_rate"],
    }, episodes


def requests_of(episodes: Sequence[Episode]) -> list[ConstrainedRequest]:
    """Every constrained model call of the episodes, in play order."""
    return [
        (attempt.messages, decision.trace.valid_subgoals)
        for episode in episodes
        for decision in episode.decisions
        if decision.trace is not None and decision.trace.constrained
        for attempt in decision.trace.attempts
    ]


def decisions(
    served: LLMConfig, dtypes: Sequence[str], decodings: Sequence[str], requests: Sequence[ConstrainedRequest]
) -> list[dict[str, Any]]:
    """Greedy answers to `requests` by each number format and decoder (its own prefix cache; the decoders of
    a format share its weights), taking turns prompt by prompt so that a load change on the machine falls on
    all of them alike."""
    models = []
    for dtype in dtypes:
        first = TransformersModel(replace(served, dtype=dtype, decoding=decodings[0]))
        models += [first] + [
            TransformersModel(replace(served, dtype=dtype, decoding=d), (first.tokenizer, first.model))
            for d in decodings[1:]
        ]
    variants = [(dtype, decoding) for dtype in dtypes for decoding in decodings]
    parts = ("render_s", "tokenize_s", "prefill_s", "decode_s", "choose_s")
    counts = ("prompt_tokens", "reused_tokens", "forwards", "generated_tokens")
    records: list[list[dict[str, float]]] = [[] for _ in models]
    texts: list[list[str]] = [[] for _ in models]
    for messages, choices in tqdm(requests, desc="decisions", unit="prompt", leave=False):
        for model, record, said in zip(models, records, texts, strict=True):
            started = time.perf_counter()
            said.append(model.complete(messages, choices).text)
            wall = time.perf_counter() - started
            stats = model.last_stats
            record.append({"wall_s": wall, **{k: getattr(stats, k) for k in (*parts, *counts)}})
    results = []
    for (dtype, decoding), model, record, said in zip(variants, models, records, texts, strict=True):
        wall_ms = 1000 * np.array([r["wall_s"] for r in record])
        results.append(
            {
                "dtype": dtype,
                "weights": str(model.model.dtype).removeprefix("torch."),
                "decoding": decoding,
                "decisions": len(record),
                "latency_ms_p50": float(np.percentile(wall_ms, 50)),
                "latency_ms_p95": float(np.percentile(wall_ms, 95)),
                **{f"{k[:-2]}_ms_mean": 1000 * float(np.mean([r[k] for r in record])) for k in parts},
                **{f"{k}_mean": float(np.mean([r[k] for r in record])) for k in counts},
                "same_answers": sum(a == b for a, b in zip(said, texts[0], strict=True)),
            }
        )
    return results


def update_rate(
    policy: Policy, dtype: str, examples: list[Example], minibatch: int, share: bool
) -> dict[str, Any]:
    """Forward + backward of the answer log-probabilities over every minibatch (no optimizer step)."""
    policy.model.eval()
    tokens = 0
    started = time.perf_counter()
    for start in range(0, len(examples), minibatch):
        chunk = examples[start : start + minibatch]
        logp, _, mask = token_logprobs(policy.model, policy.collate(chunk, share_prefix=share))
        (-(logp.sum() / mask.sum())).backward()
        tokens += sum(len(e.prompt_ids) + len(e.answer_ids) for e in chunk)
    seconds = time.perf_counter() - started
    policy.model.zero_grad()
    return {
        "dtype": dtype,
        "shared_prefix": share,
        "examples": len(examples),
        "tokens": tokens,
        "seconds": seconds,
        "tokens_per_s": tokens / seconds,
    }


def run(config: BenchPlannerConfig) -> dict[str, Any]:
    torch.set_num_threads(config.threads)
    train = PlannerTrainConfig(
        algo="grpo",
        domain=config.domain,
        model=config.model,
        adapter=config.domain if config.adapter is None else config.adapter,
        seed=config.seed,
        threads=config.threads,
        rollout=RolloutSettings(  # training states only: no evaluation set needed
            tasks=config.tasks, games=config.games, eval_games=config.games, max_subgoals=config.max_subgoals
        ),
    )
    policies = {
        dtype: load_policy(train.model, train.adapter, train.lora, dtype=dtype) for dtype in config.dtypes
    }
    if config.domain == "alfworld":
        arena = make_arena("alfworld", train.rollout)
        states = sorted(arena.train_states())[: config.groups]
        arena.close()
    else:
        states = [f"{task}:{seed}" for task in config.tasks for seed in range(config.groups)]
    cases = [
        (dtype, batch, decoding)
        for dtype in config.dtypes
        for decoding in config.decodings
        for batch in config.batches
    ]
    played = [
        rollouts(
            policies[dtype],
            replace(train, dtype=dtype, rollout=replace(train.rollout, batch=batch, decoding=decoding)),
            states,
            config.group_size,
        )
        for dtype, batch, decoding in tqdm(cases, desc="rollouts", unit="case", leave=False)
    ]
    episodes = played[0][1]  # the first case's decisions: the same prompts for every variant and update
    served = LLMConfig(domain=config.domain, model=train.model, adapter=train.adapter, threads=config.threads)
    answered = decisions(served, config.dtypes, config.decodings, requests_of(episodes))
    examples = rl.make_batch(policies[config.dtypes[0]], episodes, train).examples
    updates = [
        update_rate(policy, dtype, examples, config.minibatch, share)
        for dtype, policy in policies.items()
        for share in (False, True)
    ]
    return {
        "adapter": train.adapter,
        "played": f"{config.domain}: {', '.join(states)}",
        "decisions": answered,
        "rollouts": [
            {"dtype": dtype, **figures} for (dtype, _, _), (figures, _) in zip(cases, played, strict=True)
        ],
        "updates": updates,
    }


def _parse(argv: list[str]) -> BenchPlannerConfig:
    default = BenchPlannerConfig()
    parser = argparse.ArgumentParser(
        prog="hgpo bench planner", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--model", default=default.model, help="base model (%(default)s)")
    parser.add_argument(
        "--domain", choices=("tabletop", "alfworld"), default=default.domain, help="world (%(default)s)"
    )
    parser.add_argument(
        "--adapter", help="LoRA adapter, '' for none (default: the domain's shipped one, as RL starts from)"
    )
    parser.add_argument(
        "--tasks", nargs="+", default=list(default.tasks), help="tabletop tasks (%(default)s)"
    )
    parser.add_argument(
        "--games",
        default=default.games,
        help="alfworld: training games; the first --groups of them are played (%(default)s)",
    )
    parser.add_argument(
        "--groups", type=int, default=default.groups, help="initial states per task (%(default)s)"
    )
    parser.add_argument(
        "--max-subgoals",
        type=int,
        default=default.max_subgoals,
        help="subgoals an episode may take; 0: the domain's budget (tabletop 10, alfworld 50)",
    )
    parser.add_argument(
        "--group-size", type=int, default=default.group_size, help="episodes per initial state (%(default)s)"
    )
    parser.add_argument(
        "--batches",
        nargs="+",
        type=int,
        default=list(default.batches),
        help="rollout.batch values to compare (%(default)s)",
    )
    parser.add_argument(
        "--decodings",
        nargs="+",
        choices=DECODINGS,
        default=list(default.decodings),
        help="constrained decoders compared (%(default)s)",
    )
    parser.add_argument(
        "--dtypes",
        nargs="+",
        choices=DTYPES,
        default=list(default.dtypes),
        help="number formats compared (llm.dtype; the first format's first decoder is the reference of "
        "same_answers) (%(default)s)",
    )
    parser.add_argument(
        "--minibatch", type=int, default=default.minibatch, help="update minibatch (%(default)s)"
    )
    parser.add_argument("--threads", type=int, default=default.threads, help="torch threads (%(default)s)")
    parser.add_argument("--seed", type=int, default=default.seed)
    add_json_argument(parser, default.json)
    args = parser.parse_args(argv)
    if (
        min(args.batches) < 1
        or args.groups < 1
        or args.group_size < 1
        or args.max_subgoals < 0
        or args.minibatch < 1
        or args.threads < 1
    ):
        parser.error(
            "--batches, --groups, --group-size, --minibatch and --threads must be >= 1, --max-subgoals >= 0"
        )
    return BenchPlannerConfig(
        model=args.model,
        domain=args.domain,
        adapter=args.adapter,
        tasks=tuple(args.tasks),
        games=args.games,
        groups=args.groups,
        max_subgoals=args.max_subgoals,
        group_size=args.group_size,
        batches=tuple(args.batches),
        decodings=tuple(args.decodings),
        dtypes=tuple(args.dtypes),
        minibatch=args.minibatch,
        threads=args.threads,
        seed=args.seed,
        json=args.json,
    )


# Table header -> the result field under it, for each of the three tables `main` prints.
DECISION_COLUMNS = {
    "weights": "weights",
    "n": "decisions",
    "p50 ms": "latency_ms_p50",
    "p95 ms": "latency_ms_p95",
    "template": "render_ms_mean",
    "tokenize": "tokenize_ms_mean",
    "prefill": "prefill_ms_mean",
    "later passes": "decode_ms_mean",
    "decoder": "choose_ms_mean",
    "prompt tok": "prompt_tokens_mean",
    "reused tok": "reused_tokens_mean",
    "passes": "forwards_mean",
    "answer tok": "generated_tokens_mean",
    "same answers": "same_answers",
}
ROLLOUT_COLUMNS = {
    "episodes": "episodes",
    "decisions": "decisions",
    "s": "seconds",
    "episodes/s": "episodes_per_s",
    "decisions/s": "decisions_per_s",
    "generated tokens/s": "generated_tokens_per_s",
}
UPDATE_COLUMNS = {"examples": "examples", "tokens": "tokens", "s": "seconds", "tokens/s": "tokens_per_s"}


def _rows(records: Sequence[dict[str, Any]], first: str, columns: dict[str, str]) -> list[list[Any]]:
    return [[record[first], *(record[key] for key in columns.values())] for record in records]


def main(argv: list[str]) -> int:
    config = _parse(argv)
    try:
        results = run(config)
    except (ValueError, FileNotFoundError) as err:
        print(f"hgpo bench planner: {err}")
        return 2
    print(
        f"\nplanner training throughput: {config.model} + {results['adapter'] or 'no adapter'}, "
        f"{config.threads} torch thread(s), {results['played']}"
    )
    decision_rows = _rows(results["decisions"], "decoding", DECISION_COLUMNS)
    print(table(["decisions (greedy)", *DECISION_COLUMNS], decision_rows))
    print("(time columns: mean ms a decision; later passes: forward passes after the prefill)\n")
    rollout_rows = [
        {**r, "case": f"{r['dtype']}, {r['decoding']}, batch {r['batch']}"} for r in results["rollouts"]
    ]
    print(table(["rollouts", *ROLLOUT_COLUMNS], _rows(rollout_rows, "case", ROLLOUT_COLUMNS)))
    print()
    update_rows = [
        {
            **u,
            "case": f"{u['dtype']}, "
            + ("shared prefix once" if u["shared_prefix"] else "every prompt whole"),
        }
        for u in results["updates"]
    ]
    print(table(["update (forward + backward)", *UPDATE_COLUMNS], _rows(update_rows, "case", UPDATE_COLUMNS)))
    write_json(config.json, "planner", config, results)
    print(f"\nwrote {config.json}")
    return 0
