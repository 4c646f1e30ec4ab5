"""call_service resends a request whose answer never came, as a server that drops its response makes it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import rclpy
from rclpy.callback_groups import ReentrantCallbackGroup
from rclpy.node import Node
from rclpy.task import Future
from std_srvs.srv import Trigger

from ros_nodes.background_spin import BackgroundSpin
from ros_nodes.waiting import SEND_ATTEMPTS, PeerTimeoutError, call_service
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
