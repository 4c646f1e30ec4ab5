"""Waiting on rclpy futures from inside a callback, with a deadline instead of a hang."""

from __future__ import annotations

import threading
from typing import TypeVar

from rclpy.task import Future

T = TypeVar("T")


class PeerTimeoutError(RuntimeError):
    """A peer node did not answer in time; the message names it."""


def wait_for(future: Future[T], timeout_s: float, what: str) -> T:
    """Block this callback's thread (the executor keeps spinning on others) until `future` is done."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    if not done.wait(timeout_s):
        future.cancel()
        raise PeerTimeoutError(f"{what}: no answer within {timeout_s:.1f} s")
    result = future.result()
    if result is None:  # done but empty: the peer answered with an error, or the future was cancelled
        raise PeerTimeoutError(f"{what}: no result ({future.exception() or 'cancelled'})")
    return result
