"""A tiny-model policy whose LoRA adapter gets gradient in both its matrices, and chat examples for it:
shared by the tests that compare gradients computed two ways."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import torch

from policies.planner_training.config import LoraSettings
from policies.planner_training.data import Example, encode
from policies.planner_training.model import Policy, load_policy


def live_lora_policy(model_dir: Path) -> Policy:
    """peft starts LoRA's B at zero, which would leave its A without gradient: B is drawn at random."""
    policy = load_policy(str(model_dir), "", LoraSettings(r=4, alpha=8, dropout=0.0))
    with torch.no_grad():
        for name, param in policy.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.3)
    policy.model.eval()
    return policy


def chat_examples(policy: Policy, system: str, turns: Sequence[tuple[str, str]]) -> list[Example]:
    """One example per (user message, answer) turn, each after the same system prompt."""
    return [
        encode(
            policy.tokenizer,
            [{"role": "system", "content": system}, {"role": "user", "content": user}],  # type: ignore[list-item]
            answer,
        )
        for user, answer in turns
    ]
