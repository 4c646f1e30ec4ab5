"""Fixtures shared by every test folder."""

from __future__ import annotations

import sys
from collections.abc import Iterator
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


@pytest.fixture(scope="module")
def ray_session() -> Iterator[None]:
    """One local Ray instance (2 CPUs) for a test module: `--workers` runs join it instead of starting their
    own, which takes seconds each time."""
    import os

    import ray

    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    yield
    ray.shutdown()


@pytest.fixture
def ament_prefix(monkeypatch: pytest.MonkeyPatch) -> None:
    """The venv as the ament prefix, as `hgpo launch` sets it, so that launch files resolve the `hgpo`
    package `make setup` registered there (for tests that parse the repository's launch files)."""
    monkeypatch.setenv("AMENT_PREFIX_PATH", sys.prefix)


SLOW_FOLDERS = frozenset({"ros", "planner_training", "alfworld", "packaging"})
"""Test folders of the slow tier: real nodes over DDS, real language models, ALFWorld games, set-up runs."""

SLOW_MODULES = frozenset(
    {"test_skill_training.py", "test_ppo_training.py", "test_bench_skills.py", "test_skills_cli.py"}
)
"""Test modules of the slow tier elsewhere: skill training runs and races against their peers."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Mark the slow tier (`make test-fast` runs `-m "not slow"`): the folders and modules above, and any
    test that loads the real SmolLM2."""
    root = Path(__file__).parent
    for item in items:
        folder = item.path.relative_to(root).parts[0] if item.path.is_relative_to(root) else ""
        slow_file = folder in SLOW_FOLDERS or item.path.name in SLOW_MODULES
        if slow_file or "smollm2_dir" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.slow)
