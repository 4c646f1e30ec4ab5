"""HandOffExecutor, the executor of the controller and planner nodes: each ready callback goes to its
thread pool once, and callbacks still run side by side."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from std_msgs.msg import Float64

from ros_nodes.hand_off_executor import HandOffExecutor
from tests.ros.helpers import DISCOVERY_S, wait_until


class Spun:
    """`node` spun by a HandOffExecutor on a thread, counting how often each task goes to the pool."""

    def __init__(self, node: Node) -> None:
        self.executor = HandOffExecutor(num_threads=4)
        self.executor.add_node(node)
        self.submitted: Counter[Any] = Counter()  # keyed by the task itself: ids are reused
        pool = self.executor._executor
        submit = pool.submit

        def counting(fn: Callable[..., Any], /, *args: Any) -> Any:
            self.submitted[args[0]] += 1  # HandOffExecutor submits (its runner, the task, ...)
            return submit(fn, *args)

        pool.submit = counting  # type: ignore[method-assign]
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True)
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self.executor.spin_once(timeout_sec=0.1)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.executor.shutdown()


def test_each_callback_is_handed_to_the_pool_once(chatter: str) -> None:
    """Regression: rclpy 9's MultiThreadedExecutor submitted a message's task again and again until a
    worker started it (ros2/rclpy#1452), which kept the idle controller and planner busy."""
    node = rclpy.create_node("hand_off_listener", namespace="hand_off")
    heard: list[Float64] = []
    node.create_subscription(Float64, chatter, heard.append, 10)
    spun = Spun(node)
    try:
        wait_until(lambda: len(heard) >= 200, DISCOVERY_S, "200 messages")
    finally:
        spun.close()
        node.destroy_node()
    assert len(spun.submitted) >= 200
    assert max(spun.submitted.values()) == 1, spun.submitted.most_common(3)


def test_callbacks_still_run_side_by_side(chatter: str) -> None:
    """A callback that blocks until a later message's callback has run (as the controller's execute loop
    waits for the next scene) finishes: the later one runs on another thread meanwhile."""
    node = rclpy.create_node("hand_off_waiter", namespace="hand_off")
    calls: list[int] = []
    later_ran = threading.Event()
    finished = threading.Event()
    lock = threading.Lock()

    def on_message(_msg: Float64) -> None:
        with lock:
            calls.append(len(calls))
            first = len(calls) == 1
        if first:
            if later_ran.wait(DISCOVERY_S):
                finished.set()
        else:
            later_ran.set()

    node.create_subscription(Float64, chatter, on_message, 10, callback_group=ReentrantCallbackGroup())
    spun = Spun(node)
    try:
        wait_until(finished.is_set, 2 * DISCOVERY_S, "the first callback to see a later one run")
    finally:
        spun.close()
        node.destroy_node()
