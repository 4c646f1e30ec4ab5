"""Fixtures shared by every test folder."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    """The real SmolLM2-135M-Instruct folder that `make setup` converts."""
    from policies.planning.backends.transformers_lm import MODEL_ALIASES
    from policies.planning.llm_config import DEFAULT_MODEL

    folder = MODEL_ALIASES[DEFAULT_MODEL]
    assert (folder / "config.json").is_file(), f"{folder} is missing: run `make setup`"
    return folder
