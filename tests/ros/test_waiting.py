"""call_service and send_goal against real servers whose answers are lost, as before they match the client."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
import rclpy
from action_msgs.msg import GoalStatus
from hgpo_msgs.action import ExecuteSubgoal
from rclpy.action import ActionClient, ActionServer, GoalResponse
from rclpy.action.client import ClientGoalHandle
from rclpy.action.server import ServerGoalHandle
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from std_srvs.srv import Trigger

from ros_nodes.background_spin import BackgroundSpin
from ros_nodes.hand_off_executor import HandOffExecutor
from ros_nodes.waiting import (
    RESULT_KEPT_S,
    SEND_ATTEMPTS,
    PeerTimeoutError,
    call_service,
    send_goal,
    wait_for,
)
from tests.ros.helpers import DISCOVERY_S


class DroppingServer:
    """A real Trigger service that leaves its first `drop` requests unanswered (their response is never
    sent, as when the server has not matched the client's response reader) and answers the rest."""

    def __init__(self, drop: int) -> None:
        self.node = rclpy.create_node("dropping_server", namespace="waiting")
        self.requests = 0
        self._drop = drop
        self._never: Future[None] = Future()
        # reentrant: a request left waiting must not hold the next one back
        self.node.create_service(Trigger, "reset", self._on_request, callback_group=ReentrantCallbackGroup())
        self._spin = BackgroundSpin(self.node)

    async def _on_request(self, _request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.requests += 1
        if self.requests <= self._drop:
            await self._never
        response.success, response.message = True, f"answered request {self.requests}"
        return response

    def close(self) -> None:
        self._spin.close()
        self.node.destroy_node()


@pytest.fixture
def server(request: pytest.FixtureRequest, ros_context: None) -> Iterator[DroppingServer]:
    started = DroppingServer(drop=request.param)
    yield started
    started.close()


@pytest.mark.parametrize("server", [1], indirect=True)
def test_a_dropped_answer_is_asked_again(server: DroppingServer, test_node: Node) -> None:
    """Regression: the planner's one reset call waited out its deadline when the bridge's answer was lost
    ("service reset_scene: no answer within 3.0 s" with the bridge up), and the task failed."""
    client = test_node.create_client(Trigger, "/waiting/reset")
    assert client.wait_for_service(timeout_sec=DISCOVERY_S)
    response = call_service(client, Trigger.Request(), 1.0, "reset")
    assert response.message == "answered request 2" and server.requests == 2


@pytest.mark.parametrize("server", [SEND_ATTEMPTS], indirect=True)
def test_a_server_that_never_answers_times_out_naming_it(server: DroppingServer, test_node: Node) -> None:
    client = test_node.create_client(Trigger, "/waiting/reset")
    assert client.wait_for_service(timeout_sec=DISCOVERY_S)
    with pytest.raises(PeerTimeoutError, match=f"reset: no answer \\({SEND_ATTEMPTS} tries of 0.3 s\\)"):
        call_service(client, Trigger.Request(), 0.3, "reset")
    assert server.requests == SEND_ATTEMPTS


class ActionPeer:
    """A real ExecuteSubgoal server whose first `lose` goal acceptances never reach the client, as when it
    has not yet matched the client's response reader; the goals run all the same, as rclpy 9 runs them
    (it only warns "failed to send response"). A goal runs until released (with feedback, or silently), or
    ends at once. It counts the goals it runs."""

    def __init__(
        self,
        monkeypatch: pytest.MonkeyPatch,
        lose: int,
        accept: bool = True,
        feedback: bool = True,
        until_released: bool = True,
    ):
        self.node = rclpy.create_node("lossy_server", namespace="waiting")
        self.runs = 0
        self.release = threading.Event()
        self._feedback = feedback
        self._until_released = until_released
        self.server = ActionServer(
            self.node,
            ExecuteSubgoal,
            "execute_subgoal",
            execute_callback=self._execute,
            goal_callback=lambda _goal: GoalResponse.ACCEPT if accept else GoalResponse.REJECT,
            callback_group=ReentrantCallbackGroup(),
            result_timeout=RESULT_KEPT_S,
        )
        handle_type = type(self.server._handle)
        send = handle_type.send_goal_response
        lost = iter(range(lose))

        def send_or_lose(handle: Any, *args: Any) -> None:
            if handle is not self.server._handle or next(lost, None) is None:
                send(handle, *args)

        monkeypatch.setattr(handle_type, "send_goal_response", send_or_lose)
        # several threads, as run_node spins our servers: a running goal does not hold up their answers
        self._executor = HandOffExecutor(num_threads=4)
        self._executor.add_node(self.node)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._spin, daemon=True, name="spin lossy_server")
        self._thread.start()

    def _spin(self) -> None:
        while not self._stop.is_set():
            self._executor.spin_once(timeout_sec=0.05)

    def _execute(self, goal_handle: ServerGoalHandle) -> ExecuteSubgoal.Result:
        self.runs += 1
        while self._until_released and not self.release.wait(0.05):
            if self._feedback:
                goal_handle.publish_feedback(ExecuteSubgoal.Feedback(steps=self.runs))
        goal_handle.succeed()
        return ExecuteSubgoal.Result(success=True, message=f"run {self.runs}")

    def close(self) -> None:
        self.release.set()
        self._stop.set()
        self._thread.join(timeout=5)
        self._executor.shutdown()
        self.node.destroy_node()


@pytest.fixture
def peer(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, ros_context: None
) -> Iterator[ActionPeer]:
    started = ActionPeer(monkeypatch, **request.param)
    yield started
    started.close()


def _client(test_node: Node) -> ActionClient:
    client: ActionClient = ActionClient(test_node, ExecuteSubgoal, "/waiting/execute_subgoal")
    assert client.wait_for_server(timeout_sec=DISCOVERY_S)
    return client


def assert_ran_once(peer: ActionPeer, handle: ClientGoalHandle) -> None:
    response = wait_for(handle.get_result_async(), DISCOVERY_S, "result")
    assert response.status == GoalStatus.STATUS_SUCCEEDED and response.result.message == "run 1"
    assert peer.runs == 1


@pytest.mark.parametrize("peer", [{"lose": 1}], indirect=True)
def test_a_running_goal_whose_acceptance_was_lost_is_adopted(peer: ActionPeer, test_node: Node) -> None:
    """Regression: the controller ran a goal whose acceptance was lost; send_goal's repeats were refused
    while it ran, and once its result had expired (10 s) a third copy ran it again (CI, stop 16)."""
    feedback: list[Any] = []
    handle = send_goal(_client(test_node), ExecuteSubgoal.Goal(), 30.0, "lossy", feedback.append)
    assert handle.accepted and feedback and not peer.release.is_set()  # adopted from its feedback
    peer.release.set()
    assert_ran_once(peer, handle)


@pytest.mark.parametrize("peer", [{"lose": 1, "feedback": False, "until_released": False}], indirect=True)
def test_a_finished_goal_whose_acceptance_was_lost_is_adopted(peer: ActionPeer, test_node: Node) -> None:
    """A goal too short for feedback: the refused repeat says the server holds it, and its result is kept."""
    handle = send_goal(_client(test_node), ExecuteSubgoal.Goal(), 0.5, "lossy")
    assert handle.accepted
    assert_ran_once(peer, handle)


@pytest.mark.parametrize("peer", [{"lose": 1, "accept": False}], indirect=True)
def test_a_rejection_whose_first_answer_was_lost_stays_a_rejection(peer: ActionPeer, test_node: Node) -> None:
    handle = send_goal(_client(test_node), ExecuteSubgoal.Goal(), 0.5, "lossy")
    assert not handle.accepted and peer.runs == 0


@pytest.mark.parametrize("peer", [{"lose": 1, "feedback": False}], indirect=True)
def test_giving_up_stops_asking_the_server_about_a_silent_goal(
    peer: ActionPeer, test_node: Node, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A node shutting down while send_goal asks the server whether it holds a silent, running goal (its
    acceptance lost, its repeat refused) stops asking; before, it waited out the 2-s check regardless."""
    client = _client(test_node)
    asking = threading.Event()
    ask = client._get_result_async

    def ask_and_note(goal_handle: ClientGoalHandle) -> Any:
        asking.set()
        return ask(goal_handle)

    monkeypatch.setattr(client, "_get_result_async", ask_and_note)
    with pytest.raises(PeerTimeoutError, match="stopped waiting"):
        send_goal(client, ExecuteSubgoal.Goal(), 0.5, "lossy", give_up=asking.is_set)
    assert peer.runs == 1
