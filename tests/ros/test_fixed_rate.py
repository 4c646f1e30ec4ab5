"""The controller's loop clock on a simulated clock: late ticks keep the grid, missed ones are skipped."""

from __future__ import annotations

from ros_nodes.fixed_rate import FixedRate


class SimulatedClock:
    def __init__(self) -> None:
        self.t = 0.0

    def now(self) -> float:
        return self.t

    def sleep(self, seconds: float) -> None:
        assert seconds > 0
        self.t += seconds


def tick_times(work_s: list[float], period_s: float = 5.0) -> tuple[list[float], list[int]]:
    """When each tick starts, given how long each tick's work takes, and what each sleep skipped."""
    clock = SimulatedClock()
    rate = FixedRate(period_s, clock.now, clock.sleep)
    starts, skipped = [], []
    for work in work_s:
        starts.append(clock.t)
        clock.t += work
        skipped.append(rate.sleep())
    return starts, skipped


def test_ticks_on_time_follow_the_grid() -> None:
    starts, skipped = tick_times([1.0, 2.0, 0.5, 4.9])
    assert starts == [0.0, 5.0, 10.0, 15.0]
    assert skipped == [0, 0, 0, 0]


def test_a_late_tick_is_followed_at_once_and_the_grid_kept() -> None:
    """A 6-unit tick at period 5: the next starts at 6, the one after at 10 (a restarted grid: 11)."""
    starts, skipped = tick_times([6.0, 1.0, 1.0, 1.0])
    assert starts == [0.0, 6.0, 10.0, 15.0]
    assert skipped == [0, 0, 0, 0]


def test_ticks_missed_entirely_are_skipped_not_burst() -> None:
    """A 12-unit tick misses the ticks at 5 and 10: one tick at once (12), then the grid again (15, 20)."""
    starts, skipped = tick_times([12.0, 1.0, 1.0, 1.0])
    assert starts == [0.0, 12.0, 15.0, 20.0]
    assert skipped == [1, 0, 0, 0]
