"""Fixtures for planner training tests: a tiny from-scratch GPT-2 to train (real transformers and peft
code paths, seconds per run) and tabletop demonstrations from the expert planner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tiny_lm import build_tiny_gpt2


@pytest.fixture(scope="session")
def tiny_planner_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Weights drawn at std 0.2 instead of GPT-2's 0.02, and no dropout: at the default scale the output is
    near-uniform whatever the input and a LoRA adapter on it learns slowly (BC loss 5.5 -> 5.4 in 60
    steps); wider weights give the adapter features to work with (-> 0.7), so learning fits a CI budget."""
    return build_tiny_gpt2(tmp_path_factory.mktemp("tiny_planner"), initializer_range=0.2, dropout=0.0)


@pytest.fixture(scope="session")
def tabletop_demos(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Expert demonstrations of reach and pick_place, 4 seeds each (28 records, a few seconds)."""
    from policies.planner_training.demos import tabletop_demonstrations

    path = tmp_path_factory.mktemp("demos") / "tabletop.jsonl"
    with path.open("w") as out:
        for success, records in tabletop_demonstrations(["reach", "pick_place"], range(4)):
            assert success
            out.writelines(json.dumps(r) + "\n" for r in records)
    return path
