"""Constrained decoding over tries of valid answers with jump-forward (as SGLang does for constrained output):
where a row's trie allows one continuation only, that token is appended without a forward pass of its own;
it is fed with the next tokens that need logits, or never when the answer ends there. A forward pass runs
only where some row has a real choice, over every token appended since the last one.

Greedy answers are those of one forward pass per token with the trie's mask (the plain decoder): a token
the trie forces is the masked argmax anyway. Sampled answers are drawn from the same distributions (a
forced token has probability 1), with `generator` alone, so a seed repeats them. Rows of a batch advance
in lockstep, one token each a step, so keys and values stay one rectangle; a finished row pads, masked."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch

from policies.planning.constraint import TokenTrie


@dataclass(frozen=True)
class Sampling:
    """How a choice between allowed tokens is made: greedy (`generator` None) or sampled at `temperature`."""

    temperature: float = 1.0
    generator: torch.Generator | None = None

    def pick(self, logits: torch.Tensor, allowed: Sequence[int]) -> int:
        """One of `allowed` (ascending ids, so greedy ties break as an argmax over the vocabulary does)."""
        scores = logits[list(allowed)]
        if self.generator is None:
            return allowed[int(torch.argmax(scores))]
        probs = torch.softmax(scores.float() / self.temperature, dim=-1)
        return allowed[int(torch.multinomial(probs.cpu(), 1, generator=self.generator))]


def forward_last(model: Any, tokens: torch.Tensor, mask: torch.Tensor, cache: Any) -> torch.Tensor:
    """Next-token logits after `tokens` (batch, new), appended to `cache` in place; `mask` (batch, cached +
    new) marks real tokens, and positions count only those, as generation with padding does."""
    positions = (mask.cumsum(-1) - 1).clamp(min=0)[:, -tokens.shape[1] :]
    output = model(
        input_ids=tokens,
        attention_mask=mask,
        position_ids=positions,
        past_key_values=cache,
        use_cache=True,
        logits_to_keep=1,
    )
    return output.logits[:, -1, :]


def decode(
    model: Any,
    cache: Any,
    tokens: torch.Tensor,
    mask: torch.Tensor,
    tries: Sequence[TokenTrie],
    sampling: Sampling,
    pad: int,
) -> list[list[int]]:
    """Each row's answer (its end token last) after its prompt: `tokens` (batch, new) are the prompt tokens
    `cache` does not hold yet, `mask` (batch, cached + new) the real ones among both."""
    rows = len(tries)
    answers: list[list[int]] = [[] for _ in range(rows)]
    done = [False] * rows
    pending, logits = tokens, None
    while not all(done):
        allowed = [[] if done[r] else sorted(tries[r].allowed(answers[r])) for r in range(rows)]
        if any(len(a) > 1 for a in allowed):
            with torch.inference_mode():
                logits = forward_last(model, pending, mask, cache)
            pending = pending[:, :0]
        step, real = [], []
        for r in range(rows):
            real.append(0 if done[r] else 1)
            if done[r]:
                step.append(pad)
                continue
            if not allowed[r]:
                raise ValueError(f"row {r}: the trie allows nothing after {answers[r]}")
            token = allowed[r][0] if len(allowed[r]) == 1 else sampling.pick(logits[r], allowed[r])  # type: ignore[index]
            answers[r].append(token)
            step.append(token)
            done[r] = token == tries[r].end_token
        pending = torch.cat(
            [pending, torch.tensor([step], dtype=pending.dtype, device=pending.device).T], dim=1
        )
        mask = torch.cat([mask, torch.tensor([real], dtype=mask.dtype, device=mask.device).T], dim=1)
    return answers
