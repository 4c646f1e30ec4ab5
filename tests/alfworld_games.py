"""One small generated ALFWorld game set per test session, shared by the ALFWorld and ROS tests: one
evaluation (valid_unseen) game of each task type, each solved by ALFWorld's planner expert before it was
kept. Generating takes ~5 s of CPU (the planner), so it happens once."""

from __future__ import annotations

from pathlib import Path

import pytest

_GAME_SETS: dict[str, Path] = {}
SEED = 7


def generated_game_set(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The set's valid_unseen folder."""
    if "set" not in _GAME_SETS:
        from sim.alfworld import make_games

        root = tmp_path_factory.mktemp("alfworld_games")
        make_games(root, per_type=0, eval_per_type=1, seed=SEED)
        _GAME_SETS["set"] = root / "valid_unseen"
    return _GAME_SETS["set"]
