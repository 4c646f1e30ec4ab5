"""The controller loop's clock: ticks on a fixed grid t0 + k·period, as ROS 2 timers keep it."""

from __future__ import annotations

import time
from collections.abc import Callable


class FixedRate:
    """Sleeps to the next tick of the grid.

    A tick that overran its period is followed at once by the next, still on the grid, so a late tick costs
    no rate; ticks missed entirely are skipped rather than burst (rcl's timers do the same). Written here
    because rclpy's `Rate` wakes through an executor callback, which adds the executor's latency to every
    tick.
    """

    def __init__(
        self,
        period_s: float,
        now: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.period_s = period_s
        self._now, self._sleep = now, sleep
        self._next = now()

    def sleep(self) -> int:
        """Wait for the next tick; returns how many ticks were missed and skipped."""
        self._next += self.period_s
        delay = self._next - self._now()
        if delay > 0:
            self._sleep(delay)
            return 0
        missed = int(-delay // self.period_s)
        self._next += missed * self.period_s
        return missed
