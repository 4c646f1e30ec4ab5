"""Commands judged by their stamps (ros_nodes/stamps.py), without a clock or a node."""

from __future__ import annotations

import pytest

pytest.importorskip("rclpy", reason="ROS tests need the venv built by `make setup`")
from builtin_interfaces.msg import Time

from ros_nodes.stamps import stamp_problem

NOW_NS = 1_800_000_000 * 10**9


def stamp(offset_s: float) -> Time:
    ns = NOW_NS + round(offset_s * 1e9)
    return Time(sec=ns // 10**9, nanosec=ns % 10**9)


@pytest.mark.parametrize(
    ("msg", "reason"),
    [
        (Time(), "stamp 0"),
        (stamp(-0.25), "older than the command timeout 0.2 s"),
        (Time(sec=1), "older than the command timeout"),  # 1970
        (stamp(0.06), "in the future, beyond the clock skew tolerance 0.05 s"),
        (stamp(3600.0), "in the future"),
    ],
)
def test_unstamped_stale_and_future_commands_are_refused(msg: Time, reason: str) -> None:
    assert reason in (stamp_problem(msg, NOW_NS, 0.2, 0.05) or "")


@pytest.mark.parametrize("offset_s", [-0.19, 0.0, 0.04])
def test_fresh_commands_within_the_skew_tolerance_pass(offset_s: float) -> None:
    assert stamp_problem(stamp(offset_s), NOW_NS, 0.2, 0.05) is None
