from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")

from tests.alfworld_games import generated_game_set


@pytest.fixture(scope="session")
def game_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generated_game_set(tmp_path_factory)
