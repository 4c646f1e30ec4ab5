"""Waiting on rclpy futures from a thread the executor does not spin in, with deadlines instead of hangs."""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from action_msgs.msg import GoalStatus
from builtin_interfaces.msg import Time
from rclpy.action import ActionClient
from rclpy.action.client import ClientGoalHandle
from rclpy.client import Client
from rclpy.task import Future
from unique_identifier_msgs.msg import UUID

T = TypeVar("T")
Request = TypeVar("Request")
Response = TypeVar("Response")
SEND_ATTEMPTS = 3
GIVE_UP_POLL_S = 0.05
RESULT_KEPT_S = 120
"""How long our action servers keep a finished goal (rclpy's default, 10 s, is shorter than `send_goal`'s
resends): a repeat that comes later than that is taken for a new goal and runs a second time."""
PROBE_S = 2.0  # a server answers a result request for a goal id it does not hold at once


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
    if result is None:  # done without a result: the future was cancelled
        raise PeerTimeoutError(f"{what}: cancelled before an answer came")
    return result


def call_service(
    client: Client[Request, Response],
    request: Request,
    timeout_s: float,
    what: str,
    attempts: int = SEND_ATTEMPTS,
) -> Response:
    """Call a service whose repeat does no harm (a reset to a seed), resending when no answer comes.

    A server that has not yet matched this client's response reader drops its answer, as it drops an action
    goal's (see `send_goal`); the request then waits out its deadline with the server long done. The first
    answer to any copy wins, and the copies still pending are forgotten.
    """
    answered = threading.Event()
    futures: list[Future[Response]] = []
    try:
        for _ in range(attempts):
            future = client.call_async(request)
            future.add_done_callback(lambda _f: answered.set())
            futures.append(future)
            if answered.wait(timeout_s):
                response = next(f for f in futures if f.done()).result()
                if response is None:
                    raise PeerTimeoutError(f"{what}: cancelled before an answer came")
                return response
    finally:
        for future in futures:
            if not future.done():
                client.remove_pending_request(future)
    raise PeerTimeoutError(f"{what}: no answer ({attempts} tries of {timeout_s:.1f} s)")


class AdoptedGoalHandle(ClientGoalHandle):
    """A goal the server took from a copy whose acceptance never reached this client.

    Its result is requested at once: for a goal id the server does not hold, the answer comes straight
    back with STATUS_UNKNOWN; for one it runs, when the goal ends.
    """

    def __init__(self, client: ActionClient, goal_id: UUID) -> None:
        # no response to keep: `accepted` and `stamp`, its only readers, are answered below
        super().__init__(client, goal_id, goal_response=None)  # type: ignore[arg-type]
        self._result = super().get_result_async()

    @property
    def accepted(self) -> bool:
        return True

    @property
    def stamp(self) -> Time:
        return Time()  # the acceptance, and its time, were lost

    def get_result_async(self) -> Future[Any]:
        return self._result

    def held_by_server(self, give_up: Callable[[], bool]) -> bool:
        """Whether the server runs or ran this goal; asking stops early when `give_up` says so."""
        answered = threading.Event()
        self._result.add_done_callback(lambda _f: answered.set())
        deadline = time.monotonic() + PROBE_S
        while not answered.wait(GIVE_UP_POLL_S):
            if give_up() or time.monotonic() > deadline:
                return True  # still running
        response = self._result.result()
        return response is not None and response.status != GoalStatus.STATUS_UNKNOWN


def send_goal(
    client: ActionClient,
    goal: Any,
    timeout_s: float,
    what: str,
    feedback_callback: Callable[[Any], None] | None = None,
    give_up: Callable[[], bool] = lambda: False,
    goal_id: UUID | None = None,
    attempts: int = SEND_ATTEMPTS,
) -> ClientGoalHandle:
    """Send an action goal and wait for the server's answer, resending when none comes.

    Right after discovery a server may not yet have matched this client's response reader (discovery is
    not symmetric, and slow on a loaded machine), and the acceptance it sends is lost. rclpy 9 runs the
    goal all the same (it only warns "failed to send response"). Every resend carries the same goal id, so
    a server that took an earlier copy refuses the repeat instead of running it twice; that refusal, or
    feedback for the goal id, tells this client the server runs the goal, and it adopts the goal rather
    than resend. `give_up` is polled while waiting: a node shutting down stops waiting for a peer that may
    be gone. `goal_id` is the goal's id, known to the caller before the goal is sent; by default a new one.
    """
    goal_id = goal_id or UUID(uuid=list(uuid.uuid4().bytes))
    answered, running = threading.Event(), threading.Event()

    def on_feedback(feedback: Any) -> None:
        running.set()
        answered.set()
        if feedback_callback is not None:
            feedback_callback(feedback)

    futures: list[Future[ClientGoalHandle]] = []
    for _ in range(attempts):
        future = client.send_goal_async(goal, feedback_callback=on_feedback, goal_uuid=goal_id)
        future.add_done_callback(lambda _f: answered.set())
        futures.append(future)
        deadline = time.monotonic() + timeout_s
        while (remaining := deadline - time.monotonic()) > 0:
            if give_up():
                raise PeerTimeoutError(f"{what}: stopped waiting for the goal's answer")
            if not answered.wait(min(remaining, GIVE_UP_POLL_S)):
                continue
            answered.clear()
            handles = [h for h in (f.result() for f in futures if f.done()) if h is not None]
            accepted = [h for h in handles if h.accepted]
            if accepted:
                return accepted[0]
            if running.is_set():
                return AdoptedGoalHandle(client, goal_id)
            if handles and len(futures) == 1:
                return handles[0]  # the first and only copy was refused: a real rejection
            if handles:  # a repeat refused: the server holds an earlier copy, or refuses the goal itself
                adopted = AdoptedGoalHandle(client, goal_id)
                held = adopted.held_by_server(give_up)
                if give_up():
                    raise PeerTimeoutError(f"{what}: stopped waiting for the goal's answer")
                return adopted if held else handles[0]
    raise PeerTimeoutError(f"{what}: no answer to the goal ({attempts} tries of {timeout_s:.1f} s)")
