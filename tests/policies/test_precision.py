"""The planner's number format: names resolve as documented, `auto` follows the hardware, and training over a
bfloat16 base keeps its adapter in float32 (bfloat16 decoding: tests/policies/test_trie_decoding.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from policies.planner_training.config import LoraSettings
from policies.planner_training.model import load_policy
from policies.planning import LLMConfig
from policies.planning.backends.precision import native_bfloat16, resolve_dtype


def test_names_resolve_and_auto_follows_the_hardware() -> None:
    assert resolve_dtype("float32", "cpu") is torch.float32
    assert resolve_dtype("bfloat16", "cpu") is torch.bfloat16
    native = native_bfloat16(torch.device("cpu"))
    assert resolve_dtype("auto", "cpu") is (torch.bfloat16 if native else torch.float32)
    with pytest.raises(ValueError, match="unknown dtype 'fp8'; known: auto, float32, bfloat16"):
        resolve_dtype("fp8", "cpu")
    with pytest.raises(ValueError, match="unknown dtype 'half'"):
        LLMConfig(dtype="half")


def test_training_keeps_the_adapter_in_float32_over_a_bfloat16_base(tiny_model_dir: Path) -> None:
    policy = load_policy(str(tiny_model_dir), "", LoraSettings(r=4, alpha=8), dtype="bfloat16")
    trainable = policy.parameters()
    assert trainable and all(p.dtype is torch.float32 for p in trainable)
    frozen = [p for p in policy.model.parameters() if not p.requires_grad]
    assert frozen and all(p.dtype is torch.bfloat16 for p in frozen)
