"""The isaacgym backend is registered and, without Isaac Gym (as here), says how to get it."""

from __future__ import annotations

import importlib.util

import pytest

from sim.skill_env import BACKENDS, make_skill_env


@pytest.mark.skipif(importlib.util.find_spec("isaacgym") is not None, reason="Isaac Gym is installed here")
def test_without_isaacgym_the_error_says_how_to_get_it() -> None:
    assert BACKENDS["isaacgym"].skills == ("reach", "push", "pick_and_place")
    with pytest.raises(
        ImportError, match=r"developer\.nvidia\.com/isaac-gym.*not exercised by the project's CI"
    ):
        make_skill_env("isaacgym", "reach", 2)
    with pytest.raises(ValueError, match="known: reach, push, pick_and_place"):
        make_skill_env("isaacgym", "lift", 2)
