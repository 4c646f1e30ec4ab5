"""What every node shares: `main()` in the ros2/demos manner (init, spin, exit quietly on Ctrl-C),
parameter declaration and outcome logging."""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar, runtime_checkable

import rclpy
from rcl_interfaces.msg import ParameterDescriptor
from rclpy.exceptions import ParameterException
from rclpy.executors import Executor, SingleThreadedExecutor
from rclpy.impl.rcutils_logger import RcutilsLogger
from rclpy.node import Node
from rclpy.signals import SignalHandlerOptions

from ros_nodes.hand_off_executor import HandOffExecutor

Value = TypeVar("Value", bool, int, float, str)
STOP_POLL_S = 0.1  # how soon an idle node notices Ctrl-C


@runtime_checkable
class LongCallbacks(Protocol):
    """A node whose callbacks run for long (an action's execute loop): told to wind them up on Ctrl-C."""

    def stop_work(self) -> None:
        """Make running callbacks end their goals now, with the node still able to report that."""


class Parameters:
    """Declares a node's parameters up front, each with a description; a value has its default's type."""

    def __init__(self, node: Node) -> None:
        self._node = node

    def __call__(self, name: str, default: Value, description: str) -> Value:
        descriptor = ParameterDescriptor(description=description)
        return self._node.declare_parameter(name, default, descriptor).value

    def positive(self, name: str, default: float, description: str) -> float:
        """A parameter that must be > 0 (a rate, a timeout, a speed); anything else is a ValueError."""
        value = self(name, default, description)
        if not value > 0:
            raise ValueError(f"parameter {name} must be positive, got {value}")
        return value

    def non_negative(self, name: str, default: float, description: str) -> float:
        """A parameter that must be >= 0 (a bound where 0 turns a check off); else a ValueError."""
        value = self(name, default, description)
        if not value >= 0:
            raise ValueError(f"parameter {name} must be >= 0, got {value}")
        return value

    def seed(self, name: str, description: str) -> int:
        """A scene seed: ResetScene carries it as uint32."""
        value = self(name, 0, description)
        if not 0 <= value < 2**32:
            raise ValueError(f"parameter {name} must be in [0, 2**32), got {value}")
        return value


def run_node(
    make_node: Callable[[], Node], multi_threaded: bool = False, args: list[str] | None = None
) -> int:
    """Spin one node until Ctrl-C or SIGTERM; returns the process exit code.

    A `ValueError` or `ParameterException` from the node's constructor is a configuration error (an
    unknown task, policy or planner name, a rate that is not positive, a parameter of the wrong type): it
    is reported in one line and the process exits with 2 instead of a traceback.

    rclpy's own signal handler shuts the context down from another thread, while callbacks may still run
    and while the executor destroys the guard condition that handler triggers; now and then that killed a
    node with SIGSEGV on Ctrl-C. Here a signal only asks the spin loop to stop, and teardown runs in order:
    running goals are wound up (`LongCallbacks`) and reported, then the executor, node and context go.
    """
    rclpy.init(args=sys.argv if args is None else args, signal_handler_options=SignalHandlerOptions.NO)
    try:
        node = make_node()
    except (ValueError, ParameterException) as err:
        print(f"error: {err}", file=sys.stderr, flush=True)
        rclpy.try_shutdown()
        return 2
    except KeyboardInterrupt:  # stopped while starting up, e.g. because a peer failed and the launch ends
        rclpy.try_shutdown()
        return 0
    stop = threading.Event()

    def request_stop(_signum: int, _frame: object) -> None:
        stop.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C breaks a stuck teardown

    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, request_stop)
    executor: Executor = HandOffExecutor(num_threads=4) if multi_threaded else SingleThreadedExecutor()
    try:
        executor.add_node(node)
        while not stop.is_set():
            executor.spin_once(timeout_sec=STOP_POLL_S)
    finally:
        if isinstance(node, LongCallbacks):
            node.stop_work()
        _finish_handed_out_callbacks(executor)
        executor.shutdown()
        node.destroy_node()
        rclpy.try_shutdown()
    return 0


def _finish_handed_out_callbacks(executor: Executor) -> None:
    """Wait for the callbacks a multi-threaded executor has handed to its threads.

    rclpy 9's `MultiThreadedExecutor.shutdown` destroys its guard condition before it waits for its thread
    pool, so a callback handed out just before Ctrl-C that starts after that fails on the guard ("The
    following exception was never retrieved: cannot use Destroyable because destruction was requested",
    on every Ctrl-C of the planner). The pool is not public API, hence the lookup; the pin keeps it there.
    """
    pool = getattr(executor, "_executor", None)
    if isinstance(pool, ThreadPoolExecutor):
        pool.shutdown(wait=True)


def log_outcome(logger: RcutilsLogger, ok: bool, message: str) -> None:
    """INFO when something went well, WARN when not.

    rclpy fixes the severity of each logging call site on first use, so one line that picks
    `logger.info` or `logger.warning` at run time raises on the second severity: keep two call sites.
    """
    if ok:
        logger.info(message)
    else:
        logger.warning(message)
