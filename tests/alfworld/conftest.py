from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")

from sim.alfworld import GRAMMARS, AlfworldTextEnv
from tests.alfworld_games import generated_game_set


@pytest.fixture(scope="session")
def game_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_game_set(tmp_path_factory)


@pytest.fixture(scope="session", params=list(GRAMMARS))
def any_grammar_game_set(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same six games in each known grammar: `move X to Y` (alfworld 0.4) and `put X in/on Y` (0.2)."""
    return generated_game_set(tmp_path_factory, request.param)


@pytest.fixture(scope="session")
def text_env() -> Iterator[AlfworldTextEnv]:
    """One environment without the expert for the session: tests reset it to the game they play."""
    env = AlfworldTextEnv(max_steps=60)
    yield env
    env.close()
