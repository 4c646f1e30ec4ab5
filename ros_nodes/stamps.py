"""Judging a command by its header stamp, and logging refused commands once per burst.

A bridge moves the arm only on commands stamped recently by the bridge's own clock: a stamp of 0 (never
set), one older than the bridge's command timeout (it waited in a queue or comes from a replay) and one
further in the future than the clock skew tolerance (a sender with a wrong clock) are refused. Both bridges
run on the controller's machine or one synchronised to it (NTP/PTP keeps skew within milliseconds), so the
default tolerance, `max_clock_skew_s` = 0.05 s, is far above real skew and far below a command's lifetime.
"""

from __future__ import annotations

import time

from builtin_interfaces.msg import Time as TimeMsg
from rclpy.impl.rcutils_logger import RcutilsLogger

MAX_CLOCK_SKEW_S = 0.05
BURST_QUIET_S = 1.0


def stamp_problem(stamp: TimeMsg, now_ns: int, max_age_s: float, max_skew_s: float) -> str | None:
    """Why a command with this stamp must not move the arm at clock time `now_ns`, or None."""
    stamp_ns = stamp.sec * 10**9 + stamp.nanosec
    if stamp_ns == 0:
        return "stamp 0 (header.stamp never set)"
    age_s = (now_ns - stamp_ns) * 1e-9
    if age_s > max_age_s:
        return f"stamped {age_s:.3f} s ago, older than the command timeout {max_age_s} s"
    if -age_s > max_skew_s:
        return f"stamped {-age_s:.3f} s in the future, beyond the clock skew tolerance {max_skew_s} s"
    return None


class RefusalLog:
    """Counts refused commands; logs the first of each burst (refusals with no accepted command and no
    quiet second between them) with the total so far, instead of one line per command at 100 Hz."""

    def __init__(self, logger: RcutilsLogger, prefix: str) -> None:
        self._logger = logger
        self._prefix = prefix
        self.count = 0
        self._last = -float("inf")

    def refused(self, reason: str) -> None:
        now = time.monotonic()
        self.count += 1
        if now - self._last > BURST_QUIET_S:
            self._logger.warning(f"{self._prefix}: {reason} ({self.count} refused since start)")
        self._last = now

    def accepted(self) -> None:
        """A command went through: the next refusal starts a new burst."""
        self._last = -float("inf")
