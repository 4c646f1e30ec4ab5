"""Liveness between an action client and its server, faster than DDS notices a killed process.

DDS drops a participant only when its lease runs out (about 20 s with Fast DDS's defaults), so a killed
planner or controller stays in the graph long after it stopped answering. Each side therefore proves it is
alive on its own: the server (the controller for `ExecuteSubgoal`, the planner for `RunTask`) publishes
feedback at least every `KEEPALIVE_S` while a goal runs, and the client (the planner) publishes a heartbeat,
a `GoalInfo` with the goal's id, on `<action>/client_heartbeat` while it waits for the result. A server stops
a goal whose client went quiet; a client gives up on a server whose feedback stopped (`ServerWatch`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from action_msgs.msg import GoalInfo
from rclpy.callback_groups import CallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from unique_identifier_msgs.msg import UUID

from ros_nodes.waiting import PeerTimeoutError

# A fifth of the controller's client_hold_s (0.25 s): a live client is late only after a stall of five beats.
HEARTBEAT_PERIOD_S = 0.05
KEEPALIVE_S = 0.2  # a server's longest silence while a goal runs (feedback at the control rate, or this)
FORGET_S = 60.0  # heartbeats of goals not heard from for this long are dropped


def heartbeat_topic(action: str) -> str:
    return f"{action}/client_heartbeat"


def goal_key(goal_id: UUID) -> bytes:
    return bytes(bytearray(goal_id.uuid))


class ClientHeartbeat:
    """Client side: `beat(goal_id)` at least every HEARTBEAT_PERIOD_S while waiting for that goal."""

    def __init__(self, node: Node, action: str) -> None:
        self._node = node
        self._pub = node.create_publisher(GoalInfo, heartbeat_topic(action), 10)
        self._last = -float("inf")

    def beat(self, goal_id: UUID) -> None:
        """Publish a heartbeat for the goal unless one went out less than a period ago."""
        now = time.monotonic()
        if now - self._last >= HEARTBEAT_PERIOD_S:
            self._last = now
            self._pub.publish(GoalInfo(goal_id=goal_id, stamp=self._node.get_clock().now().to_msg()))


class ClientWatch:
    """Server side: when each goal's client was last heard. A goal is bound to its client's heartbeat from
    the first one heard (before or after the goal arrived); goals of clients that never send one are not
    (tools and tests that drive the action by hand)."""

    def __init__(self, node: Node, action: str, callback_group: CallbackGroup | None = None) -> None:
        self._seen: dict[bytes, float] = {}
        self._lock = threading.Lock()
        node.create_subscription(
            GoalInfo, heartbeat_topic(action), self._on_heartbeat, 10, callback_group=callback_group
        )

    def _on_heartbeat(self, msg: GoalInfo) -> None:
        now = time.monotonic()
        with self._lock:
            self._seen[goal_key(msg.goal_id)] = now
            if len(self._seen) > 64:
                self._seen = {k: t for k, t in self._seen.items() if now - t < FORGET_S}

    def silent_for(self, goal_id: UUID, now: float) -> float | None:
        """Seconds since the goal's client was last heard; None for a client that never sent a heartbeat."""
        with self._lock:
            seen = self._seen.get(goal_key(goal_id))
        return None if seen is None else now - seen


class ServerLostError(PeerTimeoutError):
    """An action server stopped sending feedback mid-goal: it is gone (killed), not slow."""


class ServerWatch:
    """Client side: when a goal's server last showed it is alive (its feedback; call `heard` from the
    feedback callback). Silent past `silence_s` once feedback has come, it is gone; before the first, the
    bound is `discovery_s` (the feedback topic of a server just started may not be matched yet).
    `silence_s` 0 turns the watch off: servers that send no feedback."""

    def __init__(self, silence_s: float, discovery_s: float) -> None:
        self.silence_s, self.discovery_s = silence_s, discovery_s
        self._heard = time.monotonic()
        self._fed = False

    def heard(self, *_feedback: Any) -> None:
        self._heard, self._fed = time.monotonic(), True

    def start(self) -> None:
        """The goal was accepted: its server's silence counts from now."""
        self._heard = time.monotonic()

    def lost(self, now: float) -> float | None:
        """Seconds of silence when they exceed the bound (the server is gone), else None."""
        silent = now - self._heard
        bound = self.silence_s if self._fed else self.discovery_s
        return silent if self.silence_s > 0 and silent > bound else None


def wait_for_live_result(
    future: Future[Any],
    watch: ServerWatch,
    timeout_s: float,
    what: str,
    poll: Callable[[], object] = lambda: None,
) -> Any:
    """The goal's result, like `waiting.wait_for`, but a server silent past the watch's bound raises
    ServerLostError at once instead of the caller waiting out `timeout_s`. `poll` runs at every check."""
    done = threading.Event()
    future.add_done_callback(lambda _f: done.set())
    deadline = time.monotonic() + timeout_s
    watch.start()
    while not done.wait(HEARTBEAT_PERIOD_S / 2):
        now = time.monotonic()
        silent = watch.lost(now)
        if silent is not None and not done.is_set():
            raise ServerLostError(
                f"{what} stopped answering: no feedback for {silent:.2f} s (bound {watch.silence_s} s)"
            )
        if now > deadline:
            raise PeerTimeoutError(f"{what}: no answer within {timeout_s:.1f} s")
        poll()
    result = future.result()
    if result is None:
        raise PeerTimeoutError(f"{what}: cancelled before an answer came")
    return result
