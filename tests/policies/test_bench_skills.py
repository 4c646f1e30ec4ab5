"""`hgpo bench skills`: how the race's outcomes become speed-ups (the runs themselves take minutes to hours)."""

from __future__ import annotations

from hgpo.bench.skills import Outcome, _speedups


def _outcome(learner: str, reached: bool, train_time_s: float) -> Outcome:
    return Outcome(learner, "FetchPush-v4", reached, 10_000, train_time_s, 0.9 if reached else 0.1, [])


def test_a_peer_that_reached_the_target_gives_the_ratio() -> None:
    outcomes = [_outcome("hgpo", True, 100.0), _outcome("stable-baselines3", True, 450.0)]
    assert _speedups(outcomes, "FetchPush-v4") == {"stable-baselines3": {"ratio": 4.5, "lower_bound": False}}


def test_a_peer_out_of_budget_gives_a_lower_bound() -> None:
    outcomes = [
        _outcome("hgpo", True, 1000.0),
        _outcome("stable-baselines3", False, 5000.0),
        _outcome("stable-baselines3 (defaults)", True, 2500.0),
    ]
    assert _speedups(outcomes, "FetchPush-v4") == {
        "stable-baselines3": {"ratio": 5.0, "lower_bound": True},
        "stable-baselines3 (defaults)": {"ratio": 2.5, "lower_bound": False},
    }


def test_no_speedup_when_ours_never_reached_the_target() -> None:
    outcomes = [_outcome("hgpo", False, 5000.0), _outcome("stable-baselines3", True, 450.0)]
    assert _speedups(outcomes, "FetchPush-v4") == {}
    assert _speedups(outcomes, "FetchReach-v4") == {}
