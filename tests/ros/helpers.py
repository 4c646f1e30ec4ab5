"""Blocking helpers for the test-side node: every wait has a deadline and says what it waited for."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from typing import Any

from rclpy.action import ActionClient
from rclpy.node import Node

from ros_nodes.waiting import send_goal, wait_for

DISCOVERY_S = 30.0  # generous: CI machines are shared and DDS discovery can take seconds
ACCEPTANCE_S = 10.0  # a goal's acceptance normally takes milliseconds


def becomes_true(predicate: Callable[[], bool], timeout: float) -> bool:
    """Poll a condition that no future signals (a topic's content); whether it held before the deadline."""
    deadline = time.monotonic() + timeout
    event = threading.Event()
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        event.wait(0.02)
    return True


def wait_until(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    """`becomes_true`, failing with `what` at the deadline."""
    assert becomes_true(predicate, timeout), f"timed out after {timeout} s waiting for {what}"


class ActionCall:
    """One goal sent to an action server, with its feedback and result.

    Without a goal, only the client is made and discovered; `send` sends later, within milliseconds.
    """

    def __init__(self, node: Node, action_type: type, name: str, goal: Any | None = None) -> None:
        self.name = name
        self.client = ActionClient(node, action_type, name)
        assert self.client.wait_for_server(timeout_sec=DISCOVERY_S), f"action server {name} never appeared"
        # wait_for_server covers the action's services, not its feedback topic: feedback published before
        # that topic is matched is lost, so a short goal could finish without any reaching this client.
        feedback_topic = f"{name}/_action/feedback"
        wait_until(
            lambda: node.count_publishers(feedback_topic) > 0, DISCOVERY_S, f"{feedback_topic} discovery"
        )
        self.feedback: list[Any] = []
        if goal is not None:
            self.send(goal)

    def send(self, goal: Any) -> None:
        self.handle = send_goal(
            self.client,
            goal,
            ACCEPTANCE_S,
            self.name,
            feedback_callback=lambda m: self.feedback.append(m.feedback),
        )
        assert self.handle.accepted, f"{self.name} rejected the goal"
        self._result = self.handle.get_result_async()

    def done(self) -> bool:
        """Whether the result has arrived (for tests that do other work while the goal runs)."""
        return self._result.done()

    def result(self, timeout: float) -> tuple[int, Any]:
        """(GoalStatus code, result message)."""
        response = wait_for(self._result, timeout, "the action result")
        return response.status, response.result

    def cancel(self) -> None:
        wait_for(self.handle.cancel_goal_async(), DISCOVERY_S, "cancel response")


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now (for a viewer's WebSocket server)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])
