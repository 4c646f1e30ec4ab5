"""Fixtures for planner tests: a tiny from-scratch GPT-2 with a byte-level BPE tokenizer trained on our own
prompt text (fast, real transformers code paths; its answers are random, which is what constraints and
validation must survive) and the real SmolLM2 folder that `make setup` converts."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_lm import build_tiny_gpt2


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_gpt2"))


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from policies.planning.backends.transformers_lm import MODEL_ALIASES
    from policies.planning.llm_config import DEFAULT_MODEL

    folder = MODEL_ALIASES[DEFAULT_MODEL]
    assert (folder / "config.json").is_file(), f"{folder} is missing: run `make setup`"
    return folder
