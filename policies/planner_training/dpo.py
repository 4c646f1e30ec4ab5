"""DPO from preference pairs mined from rollouts: from one initial state, a successful trajectory is
preferred to a failed one. A trajectory's log-probability is the sum of its decisions' answer-token
log-probabilities (each decision under its own prompt), and

    loss = -log sigmoid(beta * [(log pi(w) - log pi_ref(w)) - (log pi(l) - log pi_ref(l))])

with the frozen reference the starting adapter (Rafailov et al. 2023, applied to whole trajectories).

An ALFWorld trajectory runs to 50 decisions of ~660 prompt tokens, so a pair cannot go through one
backward pass in memory. The loss depends on the weights only through each trajectory's summed
log-probability, so its gradient is sum_i (dloss / dlog pi_i) * grad log pi_i: the sums are computed
without a graph, the loss is differentiated with respect to them, and each trajectory's decisions are then
backpropagated `minibatch` at a time with that weight. Memory is bounded by the minibatch, as in the RL
update, for the price of one extra forward pass."""

from __future__ import annotations

import random
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import torch
from torch.nn import functional

from policies.planner_training.config import DPOSettings
from policies.planner_training.data import Example, encode_text
from policies.planner_training.model import Policy, token_logprobs
from policies.planner_training.rollouts import Episode, sampled_from


@dataclass(frozen=True)
class Pair:
    chosen: tuple[Example, ...]  # the successful trajectory's decisions
    rejected: tuple[Example, ...]  # the failed one's


def trajectory(policy: Policy, episode: Episode) -> tuple[Example, ...]:
    """The episode's model decisions, scored under the (constrained) distribution they were sampled from."""
    return tuple(
        encode_text(
            policy.tokenizer,
            d.trace.attempts[-1].prompt_text,
            d.trace.attempts[-1].output,
            sampled_from(d.trace),
        )
        for d in episode.decisions
        if d.trace is not None and d.trace.attempts
    )


def mine_pairs(policy: Policy, episodes: Sequence[Episode], max_per_state: int, seed: int) -> list[Pair]:
    """Up to `max_per_state` (success, failure) pairs per initial state, drawn at random without repeats."""
    rng = random.Random(seed)
    by_state: dict[str, list[Episode]] = {}
    for episode in episodes:
        by_state.setdefault(episode.state, []).append(episode)
    pairs = []
    for group in by_state.values():
        wins = [e for e in group if e.success and e.decisions]
        losses = [e for e in group if not e.success and e.decisions]
        combos = [(w, lo) for w in wins for lo in losses]
        for win, loss in rng.sample(combos, min(max_per_state, len(combos))):
            chosen, rejected = trajectory(policy, win), trajectory(policy, loss)
            if chosen and rejected:
                pairs.append(Pair(chosen, rejected))
    return pairs


def _minibatches(
    trajectories: Sequence[Sequence[Example]], minibatch: int
) -> Iterator[tuple[list[Example], torch.Tensor]]:
    """The trajectories' decisions, `minibatch` at a time, each with the index of its trajectory."""
    flat = [example for t in trajectories for example in t]
    owner = torch.tensor([i for i, t in enumerate(trajectories) for _ in t], dtype=torch.long)
    for start in range(0, len(flat), minibatch):
        yield flat[start : start + minibatch], owner[start : start + minibatch]


@torch.no_grad()
def trajectory_logprobs(
    policy: Policy, trajectories: Sequence[Sequence[Example]], minibatch: int
) -> torch.Tensor:
    """Sum of answer-token log-probabilities over each trajectory's decisions: (len(trajectories),)."""
    total = torch.zeros(len(trajectories), device=policy.device)
    for examples, owner in _minibatches(trajectories, minibatch):
        logp, _, _ = token_logprobs(policy.model, policy.collate(examples))
        total.index_add_(0, owner.to(policy.device), logp.sum(-1))
    return total


def dpo_backward(
    policy: Policy,
    pairs: Sequence[Pair],
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float,
    minibatch: int,
) -> tuple[torch.Tensor, dict[str, float]]:
    """The DPO loss of `pairs`, its gradient added to the parameters' `.grad` (module docstring)."""
    sides = [p.chosen for p in pairs], [p.rejected for p in pairs]
    chosen, rejected = (trajectory_logprobs(policy, side, minibatch).requires_grad_() for side in sides)
    loss, stats = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta)
    weights = torch.autograd.grad(loss, (chosen, rejected))
    for side, weight in zip(sides, weights, strict=True):
        for examples, owner in _minibatches(side, minibatch):
            logp, _, _ = token_logprobs(policy.model, policy.collate(examples))
            (logp.sum(-1) * weight[owner.to(policy.device)]).sum().backward()
    return loss.detach(), stats


def dpo_loss(
    chosen: torch.Tensor,
    rejected: torch.Tensor,
    ref_chosen: torch.Tensor,
    ref_rejected: torch.Tensor,
    beta: float,
) -> tuple[torch.Tensor, dict[str, float]]:
    margin = beta * ((chosen - ref_chosen) - (rejected - ref_rejected))
    return -functional.logsigmoid(margin).mean(), {
        "reward_accuracy": (margin > 0).float().mean().item(),
        "reward_margin": margin.mean().item(),
    }


def train_dpo(
    policy: Policy,
    optimizer: torch.optim.Optimizer,
    pairs: list[Pair],
    settings: DPOSettings,
    max_grad_norm: float,
    seed: int,
) -> dict[str, float]:
    """`settings.epochs` passes over the pairs in shuffled batches of `batch_size` pairs; the round's mean
    metrics."""
    started = time.perf_counter()
    policy.model.eval()  # no dropout: the graph-free pass and the backward passes see the same policy
    with policy.reference():
        ref_chosen = trajectory_logprobs(policy, [p.chosen for p in pairs], settings.minibatch)
        ref_rejected = trajectory_logprobs(policy, [p.rejected for p in pairs], settings.minibatch)
    params = policy.parameters()
    totals = {"loss": 0.0, "reward_accuracy": 0.0, "reward_margin": 0.0}
    steps = tokens = 0
    rng = random.Random(seed)
    for _ in range(settings.epochs):
        order = list(range(len(pairs)))
        rng.shuffle(order)
        for start in range(0, len(order), settings.batch_size):
            chunk = order[start : start + settings.batch_size]
            optimizer.zero_grad()
            loss, stats = dpo_backward(
                policy,
                [pairs[i] for i in chunk],
                ref_chosen[chunk],
                ref_rejected[chunk],
                settings.beta,
                settings.minibatch,
            )
            torch.nn.utils.clip_grad_norm_(params, max_grad_norm)
            optimizer.step()
            totals["loss"] += loss.item()
            for key, value in stats.items():
                totals[key] += value
            tokens += sum(
                len(e.prompt_ids) + len(e.answer_ids)
                for i in chunk
                for p in (pairs[i].chosen, pairs[i].rejected)
                for e in p
            )
            steps += 1
    metrics = {f"train/{k}": v / max(steps, 1) for k, v in totals.items()}
    metrics["perf/update_tokens_per_s"] = tokens / (time.perf_counter() - started)
    metrics["train/pairs"] = float(len(pairs))
    return metrics
