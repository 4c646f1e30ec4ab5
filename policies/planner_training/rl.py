"""RL from environment reward: G sampled episodes per initial state, per-decision rewards, advantages by
GRPO / GiGPO / HGPO (advantages.py), then epochs of a clipped token-level policy gradient with a KL
penalty to the frozen reference:

    ratio_t = exp(log pi(a_t) - log pi_old(a_t))                                 per answer token t
    loss    = mean_t [ -min(ratio_t A, clip(ratio_t, 1 - eps, 1 + eps) A) + beta * KL_t ]
    KL_t    = exp(log pi_ref - log pi) - (log pi_ref - log pi) - 1               (k3, always >= 0)

where A is the advantage of the decision the token belongs to and the mean runs over every answer token
of the minibatch. Rollouts sample from the policy being trained, through the planner node's own
`LLMPlanner` (constrained decoding, KV cache) and closed loop. pi_old is the policy that sampled the
answers: the one being updated, or with `rl.overlap` the adapter one update older, whose weights came with
the rollouts, so the clipped ratio corrects for that one step of staleness (off-policy by one iteration, as
in asynchronous RL).
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from policies.planner_training.advantages import Steps, advantages
from policies.planner_training.bc import nll_backward
from policies.planner_training.config import PlannerTrainConfig, RewardWeights, RLSettings
from policies.planner_training.data import Example, encode_text, token_passes
from policies.planner_training.model import Policy, load_policy, token_logprobs
from policies.planner_training.rollouts import (
    Arena,
    Episode,
    StepData,
    episode_steps,
    make_arena,
    play_episodes,
)
from policies.planning import LLMConfig, LLMPlanner
from policies.planning.backends.transformers_lm import TransformersModel
from policies.worlds import make_domain


def play(
    arena: Arena,
    policy: Policy,
    config: PlannerTrainConfig,
    states: Sequence[str],
    repeats: int,
    sample: bool,
    seed: int,
    tick: Callable[[], None] | None = None,
) -> list[Episode]:
    """`repeats` episodes from each of `states` (grouped by state), planned by the planner node's
    `LLMPlanner` over the policy in memory (a fresh model wrapper: no stale KV cache), `rollout.batch`
    episodes at a time with their decisions batched."""
    llm = LLMConfig(
        domain=config.domain,
        model=config.model,
        do_sample=sample,
        decoding=config.rollout.decoding,
        temperature=config.rollout.temperature,
        seed=seed,
        threads=config.threads,
        device=config.device,
        history_k=config.history_k,
        task_rules=config.task_rules,
        anticipate=False,  # batched seats cannot use it; rollouts keep the throughput they were measured at
    )
    policy.model.eval()
    model = TransformersModel(llm, loaded=(policy.tokenizer, policy.model))
    jobs = [state for state in states for _ in range(repeats)]
    with torch.no_grad():
        return play_episodes(
            arena,
            jobs,
            lambda served: LLMPlanner(make_domain(config.domain), served, llm),
            model,
            config.rollout.batch,
            tick,
        )


@dataclass(frozen=True)
class RolloutGroup:
    """One initial state's group of sampled episodes for a rollout worker, with the adapter weights of the
    policy that samples them (the LoRA tensors only: each worker loads the base model once)."""

    weights: dict[str, torch.Tensor]
    state: str
    repeats: int
    seed: int


@dataclass(frozen=True)
class RolloutPlayers:
    """Rollout workers of planner RL (policies/sharding.py): each loads the base model with a LoRA adapter
    and its own arena once, then samples the groups it is sent with the weights that come with them."""

    config: PlannerTrainConfig

    @contextmanager
    def open(self) -> Iterator[Callable[[RolloutGroup], list[Episode]]]:
        config = self.config
        if config.threads:
            torch.set_num_threads(config.threads)
        arena = make_arena(config.domain, config.rollout)
        policy = load_policy(config.model, config.adapter, config.lora, config.device, config.dtype)

        def sample(group: RolloutGroup) -> list[Episode]:
            policy.load_trainable_state(group.weights)
            return play(arena, policy, config, [group.state], group.repeats, True, group.seed)

        try:
            yield sample
        finally:
            arena.close()


def play_on_workers(
    workers: Callable[[Sequence[RolloutGroup]], Iterator[list[Episode]]],
    weights: dict[str, torch.Tensor],
    states: Sequence[str],
    repeats: int,
    seed: int,
) -> list[Episode]:
    """`play`'s sampled episodes under the adapter `weights` (`Policy.trainable_state()`), each state's
    group played by whichever rollout worker is free, in the order of `states`. A group samples from its
    own seed (`seed` and its place), so the episodes do not depend on how many workers play them (they
    differ from one process's, which draws one stream)."""
    groups = [RolloutGroup(weights, state, repeats, seed * 1_000_003 + n) for n, state in enumerate(states)]
    return [episode for episodes in workers(groups) for episode in episodes]


def varied_groups(episodes: Sequence[Episode], weights: RewardWeights) -> list[Episode]:
    """The episodes of the groups (episodes from one initial state) whose returns are not all equal: DAPO's
    dynamic sampling. A group whose episodes all earned the same return has zero relative advantage
    everywhere (GRPO), so it only dilutes the update's token average."""
    groups: dict[str, list[Episode]] = {}
    for episode in episodes:
        groups.setdefault(episode.state, []).append(episode)
    kept = []
    for group in groups.values():
        returns = {round(sum(s.reward for s in episode_steps(e, weights)), 9) for e in group}
        if len(returns) > 1:
            kept += group
    return kept


@dataclass(frozen=True)
class Batch:
    examples: list[Example]
    advantages: np.ndarray  # one per example (decision)


def make_batch(policy: Policy, episodes: Sequence[Episode], config: PlannerTrainConfig) -> Batch:
    """Examples of every model decision with the chosen estimator's advantage."""
    rows: list[tuple[int, StepData]] = []
    for number, episode in enumerate(episodes):
        rows += [(number, step) for step in episode_steps(episode, config.reward)]
    steps = Steps(
        group=[episodes[n].state for n, _ in rows],
        episode=[n for n, _ in rows],
        reward=np.array([s.reward for _, s in rows], dtype=np.float64),
        observation=[s.observation for _, s in rows],
        action=[s.output for _, s in rows],
    )
    rl = config.rl
    settings: dict[str, Any] = {"std": rl.std}
    if config.algo != "grpo":
        settings.update(gamma=rl.gamma, step_weight=rl.step_weight)
    if config.algo == "hgpo":
        settings.update(max_depth=rl.max_depth, alpha=rl.alpha)
    adv = advantages(config.algo, steps, **settings) if rows else np.zeros(0)
    examples = [encode_text(policy.tokenizer, s.prompt_text, s.output, s.choices) for _, s in rows]
    return Batch(examples, adv)


def pg_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor,
    ref_logp: torch.Tensor,
    advantage: torch.Tensor,
    mask: torch.Tensor,
    clip: float,
    kl_coef: float,
    tokens: float | None = None,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The clipped token-level objective with the k3 KL penalty (module docstring); tensors (batch, span),
    `advantage` (batch,). Sums over the answer tokens divided by `tokens`: those of the whole minibatch when
    these rows are one pass of it (the passes' losses then add up to the minibatch's mean), else these."""
    tokens = tokens or mask.sum().clamp(min=1).item()
    ratio = torch.exp(logp - old_logp)
    adv = advantage[:, None]
    surrogate = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - clip, 1 + clip) * adv)
    log_ref_ratio = ref_logp - logp
    kl = torch.exp(log_ref_ratio) - log_ref_ratio - 1
    loss = ((-surrogate + kl_coef * kl) * mask).sum() / tokens
    stats = {
        "kl": ((kl * mask).sum() / tokens).item(),
        "clip_fraction": ((((ratio - 1).abs() > clip) & mask).sum() / tokens).item(),
    }
    return loss, stats


@contextmanager
def adapter_weights(policy: Policy, weights: dict[str, torch.Tensor] | None) -> Iterator[None]:
    """Forward passes inside run the adapter `weights` (None: the policy's own), restored on leaving."""
    if weights is None:
        yield
        return
    own = policy.trainable_state()
    policy.load_trainable_state(weights)
    try:
        yield
    finally:
        policy.load_trainable_state(own)


@torch.no_grad()
def anchor_logprobs(
    policy: Policy,
    passes: Sequence[Sequence[Example]],
    behaviour: dict[str, torch.Tensor] | None = None,
) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """Answer-token log-probabilities of each pass under the policy that sampled it (the "old" policy of
    the ratio: the adapter `behaviour` when given, else the policy as it is now) and under the frozen
    reference."""
    policy.model.eval()
    batches = [policy.collate(examples) for examples in passes]
    with adapter_weights(policy, behaviour):
        old = [token_logprobs(policy.model, batch)[0] for batch in batches]
    with policy.reference():
        ref = [token_logprobs(policy.model, batch)[0] for batch in batches]
    return list(zip(old, ref, strict=True))


def update(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    batch: Batch,
    rl: RLSettings,
    max_grad_norm: float,
    seed: int,
    behaviour: dict[str, torch.Tensor] | None = None,
    pass_tokens: int = 0,
    demos: Sequence[Example] = (),
) -> dict[str, float]:
    """`rl.epochs` epochs of the clipped objective over the batch in shuffled minibatches, one optimizer
    step each; a minibatch runs in forward/backward passes of at most `pass_tokens` tokens
    (`data.token_passes`). `behaviour`: the adapter weights that sampled the batch when they are not the
    policy's own (`rl.overlap`). With `rl.bc_coef`, each step also descends that times the BC loss of
    `rl.bc_minibatch` of the expert decisions `demos`, drawn anew for every step.

    Skipped (`train/skipped`) when every advantage is zero before the optimizer's first step and there is
    no BC term: the policy is then still its reference, where the surrogate and the k3 KL both have zero
    gradient (and AdamW here no weight decay), so the passes would return it unchanged after minutes of
    forward and backward. That is the case of an adapter whose sampled episodes are all equally good."""
    anchored_to_demos = bool(rl.bc_coef and demos)
    if not batch.advantages.any() and not optimizer.state and not anchored_to_demos:
        return {"train/loss": 0.0, "train/kl": 0.0, "train/clip_fraction": 0.0, "train/skipped": 1.0}
    draw = random.Random(seed + 1)
    started = time.perf_counter()
    order = list(range(len(batch.examples)))
    random.Random(seed).shuffle(order)  # fixed minibatches across epochs: old/ref log-probs computed once
    minibatches = []
    for start in range(0, len(order), rl.minibatch):
        rows = order[start : start + rl.minibatch]
        cut = token_passes([batch.examples[i] for i in rows], pass_tokens)
        minibatches.append([[rows[i] for i in piece] for piece in cut])
    passes = [piece for minibatch in minibatches for piece in minibatch]
    anchored = anchor_logprobs(policy, [[batch.examples[i] for i in p] for p in passes], behaviour)
    anchors = dict(zip(map(tuple, passes), anchored, strict=True))
    params = policy.parameters()
    totals: dict[str, float] = {"loss": 0.0, "kl": 0.0, "clip_fraction": 0.0, "entropy": 0.0, "bc_loss": 0.0}
    tokens = steps = 0
    policy.model.eval()  # no dropout: the ratio compares like with like
    for _ in range(rl.epochs):
        for minibatch in minibatches:
            answer_tokens = sum(len(batch.examples[i].answer_ids) for piece in minibatch for i in piece)
            optimizer.zero_grad()
            for piece in minibatch:
                tensors = policy.collate([batch.examples[i] for i in piece])
                logp, entropy, mask = token_logprobs(policy.model, tensors)
                adv = torch.tensor(batch.advantages[piece], dtype=torch.float32, device=policy.device)
                old, ref = anchors[tuple(piece)]
                loss, stats = pg_loss(logp, old, ref, adv, mask, rl.clip, rl.kl_coef, answer_tokens)
                loss.backward()
                totals["loss"] += loss.item()
                totals["kl"] += stats["kl"]
                totals["clip_fraction"] += stats["clip_fraction"]
                totals["entropy"] += entropy.sum().item() / answer_tokens
                tokens += int(tensors["attention_mask"].sum())
            if anchored_to_demos:
                expert = draw.sample(demos, min(rl.bc_minibatch, len(demos)))
                totals["bc_loss"] += nll_backward(policy, expert, pass_tokens, rl.bc_coef)
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            optimizer.step()
            steps += 1
    if not anchored_to_demos:
        del totals["bc_loss"]
    metrics = {f"train/{k}": v / max(steps, 1) for k, v in totals.items()}
    metrics["perf/update_tokens_per_s"] = tokens / (time.perf_counter() - started)
    return metrics


def rollout_metrics(
    episodes: Sequence[Episode], weights: RewardWeights, tokenizer: Any, seconds: float
) -> dict[str, float]:
    """Success, return, invalid and failed subgoals of the rollouts, and their throughput: wall seconds per
    decision, and seconds per decision inside the planner call (one at a time: the model alone, to tell
    decoding from simulation; batched: also the wait for the other episodes of the batch)."""
    decisions = [d for e in episodes for d in e.decisions]
    outputs = sum(d.outputs for d in decisions)
    returns = [sum(s.reward for s in episode_steps(e, weights)) for e in episodes]
    generated = sum(
        len(tokenizer.encode(a.output, add_special_tokens=False)) + 1
        for d in decisions
        if d.trace
        for a in d.trace.attempts
    )
    return {
        "rollout/success_rate": float(np.mean([e.success for e in episodes])) if episodes else 0.0,
        "rollout/return": float(np.mean(returns)) if returns else 0.0,
        "rollout/invalid_subgoal_rate": sum(d.invalid_outputs for d in decisions) / max(outputs, 1),
        "rollout/failed_subgoal_rate": sum(1 for d in decisions if d.result and not d.result["success"])
        / max(len(decisions), 1),
        "rollout/decisions": float(len(decisions)),
        "perf/episodes_per_s": len(episodes) / seconds,
        "perf/decision_s": seconds / max(len(decisions), 1),  # wall time: the model's answer and the skill
        "perf/decision_model_s": sum(d.latency_ms for d in decisions) / 1000 / max(len(decisions), 1),
        "perf/generated_tokens_per_s": generated / seconds,
    }
