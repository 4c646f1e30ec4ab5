"""A client's view of its action server's liveness (ros_nodes/liveness.py), without a node."""

from __future__ import annotations

import time

import pytest

pytest.importorskip("rclpy", reason="ROS tests need the venv built by `make setup`")
from rclpy.task import Future

from ros_nodes.liveness import ServerLostError, ServerWatch, wait_for_live_result
from ros_nodes.waiting import PeerTimeoutError


def test_silence_is_judged_by_the_discovery_bound_until_feedback_comes_then_by_the_silence_bound() -> None:
    watch = ServerWatch(silence_s=1.0, discovery_s=10.0)
    now = time.monotonic()
    assert watch.lost(now + 5.0) is None  # no feedback yet: its topic may not be matched
    assert watch.lost(now + 10.5) == pytest.approx(10.5, abs=0.1)
    watch.heard()
    now = time.monotonic()
    assert watch.lost(now + 0.9) is None
    assert watch.lost(now + 1.5) == pytest.approx(1.5, abs=0.1)


def test_a_silence_bound_of_zero_watches_nothing() -> None:
    watch = ServerWatch(silence_s=0.0, discovery_s=10.0)
    watch.heard()
    assert watch.lost(time.monotonic() + 1e6) is None


def test_a_silent_server_raises_at_its_bound_and_a_result_returns() -> None:
    watch = ServerWatch(silence_s=0.2, discovery_s=0.2)
    started = time.monotonic()
    with pytest.raises(ServerLostError, match="the planner stopped answering: no feedback for"):
        wait_for_live_result(Future(), watch, 60.0, "the planner")
    assert time.monotonic() - started < 5.0  # the bound, not the timeout
    done: Future[str] = Future()
    done.set_result("result")
    assert wait_for_live_result(done, watch, 60.0, "the planner") == "result"
    with pytest.raises(PeerTimeoutError, match="no answer within 0.1 s"):
        wait_for_live_result(Future(), ServerWatch(0.0, 0.0), 0.1, "the planner")
