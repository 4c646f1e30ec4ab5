"""Small generated ALFWorld game sets, one per command grammar and test session, shared by the ALFWorld and
ROS tests: one evaluation (valid_unseen) game of each task type, each solved by ALFWorld's planner expert
before it was kept. Generating a set takes ~5 s of CPU (the planner), so each happens once."""

from __future__ import annotations

from pathlib import Path

import pytest

_GAME_SETS: dict[str, Path] = {}
SEED = 7


def generated_game_set(tmp_path_factory: pytest.TempPathFactory, grammar: str = "alfworld-0.4") -> Path:
    """The valid_unseen folder of the set written in `grammar`'s words (the same games in each grammar)."""
    if grammar not in _GAME_SETS:
        from sim.alfworld import make_games

        root = tmp_path_factory.mktemp(f"alfworld_games_{grammar}")
        make_games(root, per_type=0, eval_per_type=1, seed=SEED, grammar=grammar)
        _GAME_SETS[grammar] = root / "valid_unseen"
    return _GAME_SETS[grammar]
