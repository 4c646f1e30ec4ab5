"""Fixtures for planner tests: a tiny from-scratch GPT-2 with a byte-level BPE tokenizer trained on our own
prompt text (fast, real transformers code paths; its answers are random, which is what constraints and
validation must survive); the real SmolLM2 folder is `smollm2_dir` in tests/conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_lm import build_tiny_gpt2


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"))
