"""Waiting on rclpy futures from a thread the executor does not spin in, with deadlines instead of hangs."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, TypeVar

from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.task import Future

T = TypeVar("T")
SEND_ATTEMPTS = 3


class PeerTimeoutError(RuntimeError):
    """A peer node did not answer in time; the message names it."""


def _done_within(future: Future[Any], timeout_s: float) -> bool:
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    return done.wait(timeout_s)


def wait_for(future: Future[T], timeout_s: float, what: str) -> T:
    """Block this thread (the executor keeps spinning on others) until `future` is done."""
    if not _done_within(future, timeout_s):
        future.cancel()
        raise PeerTimeoutError(f"{what}: no answer within {timeout_s:.1f} s")
    result = future.result()
    if result is None:  # done but empty: the peer answered with an error, or the future was cancelled
        raise PeerTimeoutError(f"{what}: no result ({future.exception() or 'cancelled'})")
    return result


def send_goal(
    client: ActionClient,
    goal: Any,
    timeout_s: float,
    what: str,
    feedback_callback: Callable[[Any], None] | None = None,
) -> ClientGoalHandle:
    """Send an action goal and wait for the server's answer, resending when none comes.

    Right after discovery a server may not yet have matched this client's response reader (discovery is
    not symmetric, and slow on a loaded machine). It then cannot send the acceptance and drops the goal
    unexecuted (rclpy's ActionServer logs "Failed to send goal response"), so resending is safe.
    """
    for _ in range(SEND_ATTEMPTS):
        future = client.send_goal_async(goal, feedback_callback=feedback_callback)
        handle = future.result() if _done_within(future, timeout_s) else None
        if handle is not None:
            return handle
        future.cancel()
    raise PeerTimeoutError(f"{what}: no answer to the goal ({SEND_ATTEMPTS} tries of {timeout_s:.1f} s)")
