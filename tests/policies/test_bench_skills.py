"""`hgpo bench skills`: how the race's outcomes become speed-ups, and a short real race on FetchReach."""

from __future__ import annotations

import json
import math
import multiprocessing
import os
from pathlib import Path

import pytest

from hgpo.bench.skills import OURS_FAILED, OURS_MISSED, Budget, Outcome, _speedups
from hgpo.cli import main as hgpo_main


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


def test_the_peer_gets_a_multiple_of_our_time_to_the_target(tmp_path: Path) -> None:
    """A real race on FetchReach: ours reaches 95%, the peer trains for half that time (the factor), misses,
    and the JSON says ours was at least about 0.5x as fast: a lower bound, not a ratio of two arrivals."""
    out = tmp_path / "skills.json"
    argv = ["bench", "skills", "--tasks", "FetchReach", "--learners", "sb3", "hgpo", "--budget-s", "300"]
    assert hgpo_main([*argv, "--peer-budget-factor", "0.5", "--json", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    runs = {run["learner"]: run for run in results["runs"]}
    assert runs["hgpo"]["reached"] and not runs["stable-baselines3"]["reached"]
    speedup = results["speedup"]["FetchReach"]["stable-baselines3"]
    assert speedup["lower_bound"] and speedup["ratio"] == pytest.approx(0.5, abs=0.1)


def test_a_side_by_side_peer_budget_follows_ours() -> None:
    """Open while ours trains, then F times ours' time, the fixed budget where ours missed, nothing where it
    failed; without a factor, or outside a race, the fixed budget."""
    ours_s = multiprocessing.Value("d", math.nan)
    budget = Budget(300.0, 3.0, ours_s)
    assert budget.seconds() == math.inf
    ours_s.value = 40.0
    assert budget.seconds() == 120.0
    ours_s.value = OURS_MISSED
    assert budget.seconds() == 300.0
    ours_s.value = OURS_FAILED
    assert budget.seconds() == 0.0
    ours_s.value = 40.0
    assert Budget(300.0, None, ours_s).seconds() == 300.0
    assert Budget(300.0).seconds() == 300.0


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="a side-by-side race needs a core per learner")
def test_side_by_side_the_peer_trains_beside_ours_and_stops_at_its_multiple(tmp_path: Path) -> None:
    """A real side-by-side race on FetchReach: both train at once, ours reaches 95%, and the peer stops once
    its training time passes 1.5 times ours, short of the target: a lower bound of about 1.5."""
    out = tmp_path / "skills.json"
    argv = ["bench", "skills", "--tasks", "FetchReach", "--learners", "hgpo", "sb3", "--budget-s", "300"]
    assert hgpo_main([*argv, "--side-by-side", "--peer-budget-factor", "1.5", "--json", str(out)]) == 0
    results = json.loads(out.read_text())["results"]
    runs = {run["learner"]: run for run in results["runs"]}
    ours, peer = runs["hgpo"], runs["stable-baselines3"]
    assert ours["reached"] and not peer["reached"]
    assert peer["started_at"] < ours["ended_at"] and ours["started_at"] < peer["ended_at"]
    speedup = results["speedup"]["FetchReach"]["stable-baselines3"]
    assert speedup["lower_bound"] and speedup["ratio"] == pytest.approx(1.5, abs=0.1)


def test_side_by_side_refuses_more_learners_than_cores(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0})
    with pytest.raises(SystemExit) as exit_info:
        hgpo_main(["bench", "skills", "--tasks", "FetchReach", "--side-by-side", "--learners", "hgpo", "sb3"])
    assert exit_info.value.code == 2 and "2 learners, but only 1 core(s) here" in capsys.readouterr().err


def test_a_peer_budget_factor_that_is_not_positive_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        hgpo_main(["bench", "skills", "--tasks", "FetchReach", "--peer-budget-factor", "0"])
    assert exit_info.value.code == 2 and "--peer-budget-factor must be > 0" in capsys.readouterr().err
