"""Behaviour cloning: supervised fine-tuning of the LoRA adapter on the answer tokens of demonstrations
(prompt tokens masked), with a validation split and early stopping on the validation loss."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from policies.planner_training.config import BCSettings
from policies.planner_training.data import IGNORE, Example, token_passes
from policies.planner_training.model import Policy, answer_logits, token_logprobs
from policies.stop_request import never


@dataclass(frozen=True)
class Validation:
    loss: float  # mean negative log-likelihood per answer token
    exact: float  # fraction of examples whose every answer token is the model's most likely one


def nll_backward(policy: Policy, examples: Sequence[Example], pass_tokens: int, weight: float = 1.0) -> float:
    """The BC loss, the mean negative log-likelihood of the examples' answer tokens, its gradient (times
    `weight`) added to the parameters' `.grad` pass by pass (`data.token_passes`)."""
    answer_tokens = sum(len(e.answer_ids) for e in examples)
    total = 0.0
    for piece in token_passes(examples, pass_tokens):
        logp, _entropy, _mask = token_logprobs(policy.model, policy.collate([examples[i] for i in piece]))
        loss = -logp.sum() / answer_tokens
        (weight * loss).backward()
        total += loss.item()
    return total


@torch.no_grad()
def validate(policy: Policy, examples: Sequence[Example], batch_size: int) -> Validation:
    policy.model.eval()
    total = tokens = exact = 0.0
    for start in range(0, len(examples), batch_size):
        batch = policy.collate(examples[start : start + batch_size])
        logits = answer_logits(policy.model, batch).float()
        mask = batch["labels"] != IGNORE
        logp = torch.log_softmax(logits, -1).gather(-1, batch["labels"].clamp(min=0)[..., None])[..., 0]
        total += float(-(logp * mask).sum())
        tokens += float(mask.sum())
        exact += float(((logits.argmax(-1) == batch["labels"]) | ~mask).all(-1).sum())
    return Validation(total / tokens, exact / len(examples))


@dataclass
class BCState:
    """What a checkpoint of a BC run restores."""

    step: int = 0
    epoch: int = 0
    best_loss: float = float("inf")
    stale: int = 0  # validations since the best one


def train_bc(
    policy: Policy,
    train: list[Example],
    val: list[Example],
    settings: BCSettings,
    optimizer: torch.optim.Optimizer,
    state: BCState,
    log: Callable[[int, dict[str, float]], None],
    on_best: Callable[[], None],
    on_checkpoint: Callable[[], None],
    seed: int,
    time_budget_s: float = 0.0,
    pass_tokens: int = 0,
    progress: Callable[[int], None] | None = None,
    stop: Callable[[], bool] = never,
) -> BCState:
    """Epochs of shuffled minibatches; validate before the first step (a run from a trained adapter
    must not end worse than it started), every `validate_every` steps and at each epoch's end;
    `on_best` saves the adapter whenever the validation loss improves; stop after `patience` validations
    without improvement, at the time budget or after the last epoch. `stop()` true (Ctrl-C) ends it after
    the current step with a checkpoint, without the validation a step would need to be kept as best."""
    started = time.perf_counter()
    params = policy.parameters()

    def check() -> bool:
        result = validate(policy, val, settings.batch_size)
        improved = result.loss < state.best_loss
        state.best_loss, state.stale = (result.loss, 0) if improved else (state.best_loss, state.stale + 1)
        log(
            state.step,
            {"val/loss": result.loss, "val/exact_match": result.exact, "val/best_loss": state.best_loss},
        )
        if improved:
            on_best()
        on_checkpoint()
        return state.stale >= settings.patience

    if val and state.step == 0 and check():  # the starting point: kept if no step ever beats it
        return state
    while state.epoch < settings.epochs:
        order = list(train)
        random.Random(seed + state.epoch).shuffle(order)
        batches = [order[i : i + settings.batch_size] for i in range(0, len(order), settings.batch_size)]
        done_in_epoch = state.step - state.epoch * len(batches)
        for batch in batches[done_in_epoch:]:
            policy.model.train()
            tick = time.perf_counter()
            optimizer.zero_grad()
            loss = nll_backward(policy, batch, pass_tokens)
            torch.nn.utils.clip_grad_norm_(params, 1.0)
            optimizer.step()
            state.step += 1
            tokens = sum(len(e.prompt_ids) + len(e.answer_ids) for e in batch)
            log(
                state.step,
                {"train/loss": loss, "train/tokens_per_s": tokens / (time.perf_counter() - tick)},
            )
            if progress:
                progress(1)
            if val and state.step % settings.validate_every == 0 and check():
                return state
            if stop():
                on_checkpoint()
                return state
            if time_budget_s and time.perf_counter() - started > time_budget_s:
                if val:
                    check()
                return state
        state.epoch += 1
        if val and state.step % settings.validate_every and check():
            return state
    return state
