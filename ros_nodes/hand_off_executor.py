"""A multi-threaded executor that hands each ready callback to its thread pool once.

The pinned rclpy (9.1.2) yields a callback's task again while it still waits in the pool's queue, and
`MultiThreadedExecutor` submits it again, so the spinning thread loops without waiting, holding the GIL
the workers need to start the task (ros2/rclpy#1452, fixed in rclpy 10.0.4 by ros2/rclpy#1547). Every
message on a subscription started such a loop: with the sim bridge's 100 Hz scene state coming in, the
idle controller and planner used about half a core each, and the controller's 25 Hz ticks came with
82 ms of jitter (p99; `hgpo bench graph`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from rclpy.executors import (
    ConditionReachedException,
    ExternalShutdownException,
    MultiThreadedExecutor,
    ShutdownException,
    TimeoutException,
    TimeoutObject,
)
from rclpy.task import Task

# How long the spinning thread waits for a worker to start a task before it looks at the node again
# (all workers busy: the task stays queued and is not submitted again).
START_WAIT_S = 0.05


class HandOffExecutor(MultiThreadedExecutor):
    """`MultiThreadedExecutor` that submits a ready task only when no earlier submission of it is queued
    or running, and then waits (briefly) for a worker to start it instead of spinning."""

    def __init__(self, num_threads: int) -> None:
        super().__init__(num_threads=num_threads)
        # Tasks handed to the pool whose run has not returned, with the event their worker sets on starting.
        self._handed_off: dict[Task[Any], threading.Event] = {}
        self._lock = threading.Lock()

    def _spin_once_impl(
        self,
        timeout_sec: float | TimeoutObject | None = None,
        wait_condition: Callable[[], bool] = lambda: False,
    ) -> None:
        try:
            task, _entity, _node = self.wait_for_ready_callbacks(timeout_sec, None, wait_condition)
        except (ExternalShutdownException, ShutdownException, TimeoutException, ConditionReachedException):
            return
        with self._lock:
            started = self._handed_off.get(task)
            if started is None:
                started = self._handed_off[task] = threading.Event()
                self._executor.submit(self._run, task, started)
        if task not in self._futures:
            self._futures.append(task)
        started.wait(START_WAIT_S)
        for future in self._futures[:]:
            if future.done():
                self._futures.remove(future)
                future.result()  # a callback's exception ends the spin, as in MultiThreadedExecutor

    def _run(self, task: Task[Any], started: threading.Event) -> None:
        """On a worker: the task, handed off until it returns, so that it is not submitted again in the
        moment before it marks itself executing (a paused coroutine is submitted again once it returned)."""
        started.set()
        try:
            task()
        finally:
            with self._lock:
                del self._handed_off[task]
