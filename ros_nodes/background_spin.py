"""A node spun on a thread of its own while the calling thread blocks on its futures."""

from __future__ import annotations

import threading

from rclpy._rclpy_pybind11 import InvalidHandle, RCLError
from rclpy.executors import SingleThreadedExecutor
from rclpy.node import Node


class BackgroundSpin:
    """Spins `node` until `close()`, which stops the thread before it shuts the executor down.

    rclpy 9 builds each wait set from the node's entities without a lock, so an entity created or destroyed
    from another thread meanwhile raises in the spinning thread: InvalidHandle for one being destroyed,
    AttributeError for an ActionClient whose constructor has not finished, RCLError ("action client pointer
    is invalid") for one destroyed while the set is built. Left alone, that exception ends the thread and
    the node silently hears nothing more; here the half-built wait set is dropped and the
    next one is built afresh from the node's current entities. Each such drop is logged, so that an
    AttributeError from a callback's own bug is seen rather than lost.
    """

    def __init__(self, node: Node, poll_s: float = 0.05) -> None:
        self._logger = node.get_logger()
        self._executor = SingleThreadedExecutor()
        self._executor.add_node(node)
        self._poll_s = poll_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True, name=f"spin {node.get_name()}")
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            try:
                self._executor.spin_once(timeout_sec=self._poll_s)
            except (InvalidHandle, AttributeError, RCLError) as err:
                if not self._executor.context.ok():
                    return  # rclpy shut down under us: nothing left to spin
                self._logger.warning(f"spin: wait set rebuilt after {err!r}", throttle_duration_sec=1.0)

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    def close(self) -> None:
        """Stop between callbacks, then shut the executor down: nothing it holds is destroyed mid-spin."""
        self._stop.set()
        self._thread.join(timeout=5)
        self._executor.shutdown()
