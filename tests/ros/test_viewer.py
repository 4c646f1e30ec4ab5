"""The live view (`view:=true`) over Foxglove's WebSocket protocol, read by a plain WebSocket client."""

from __future__ import annotations

import json
import struct
import time
from collections import defaultdict
from collections.abc import Iterator

import pytest
from action_msgs.msg import GoalStatus
from hgpo_msgs.action import RunTask
from websockets.sync.client import ClientConnection, connect

from tests.ros.conftest import Launched
from tests.ros.helpers import DISCOVERY_S, ActionCall, free_port, wait_until

TASK_TIMEOUT_S = 180.0
SUBPROTOCOL = "foxglove.sdk.v1"  # what foxglove-sdk 0.30 speaks (the Foxglove app offers it)
TOPICS = ("/view/scene", "/view/status", "/view/decisions", "/view/controller_rate")


@pytest.fixture
def viewed_graph(ros_env: dict[str, str]) -> Iterator[tuple[Launched, int]]:
    port = free_port()
    args = ["sim", "run_task:=false", "planner:=expert", "view:=true", f"view_port:={port}"]
    launched = Launched(args, ros_env)
    yield launched, port
    launched.stop(timeout=30)


def subscribe_all(ws: ClientConnection) -> dict[int, str]:
    """Subscription id -> topic for every view topic, from the server's advertisements."""
    channels: dict[str, int] = {}
    deadline = time.monotonic() + DISCOVERY_S
    while set(TOPICS) - set(channels) and time.monotonic() < deadline:
        message = ws.recv(timeout=DISCOVERY_S)
        if isinstance(message, str) and json.loads(message)["op"] == "advertise":
            channels.update({c["topic"]: c["id"] for c in json.loads(message)["channels"]})
    assert set(TOPICS) <= set(channels), f"advertised: {sorted(channels)}"
    ids = dict(enumerate(TOPICS))
    subscriptions = [{"id": i, "channelId": channels[topic]} for i, topic in ids.items()]
    ws.send(json.dumps({"op": "subscribe", "subscriptions": subscriptions}))
    return ids


def test_live_view_streams_the_scene_during_a_task(viewed_graph, test_node) -> None:
    launched, port = viewed_graph
    wait_until(lambda: f"ws://127.0.0.1:{port}" in launched.output, DISCOVERY_S * 2, "the viewer's server")
    received: dict[str, list[tuple[float, bytes]]] = defaultdict(list)
    with connect(f"ws://127.0.0.1:{port}", subprotocols=[SUBPROTOCOL], open_timeout=DISCOVERY_S) as ws:
        ids = subscribe_all(ws)
        goal = RunTask.Goal(task="pick_place", reset=True, seed=4)
        call = ActionCall(test_node, RunTask, "/hgpo/run_task", goal)
        deadline = time.monotonic() + TASK_TIMEOUT_S
        while not call.done() and time.monotonic() < deadline:
            message = ws.recv(timeout=DISCOVERY_S)
            if isinstance(message, bytes) and message[0] == 0x01:  # opcode MessageData
                subscription, _log_time = struct.unpack_from("<IQ", message, 1)
                received[ids[subscription]].append((time.monotonic(), message[13:]))
        status, result = call.result(DISCOVERY_S)
    assert status == GoalStatus.STATUS_SUCCEEDED, (result.message, launched.output)
    scenes = received["/view/scene"]
    span = scenes[-1][0] - scenes[0][0]
    assert span > 2.0 and (len(scenes) - 1) / span >= 10.0, f"{len(scenes)} scene updates in {span:.1f} s"
    last_scene = scenes[-1][1]
    for entity in (b"arm", b"red_block", b"left_plate", b"gripper", b"target"):
        assert entity in last_scene, entity
    statuses = [json.loads(payload) for _, payload in received["/view/status"]]
    assert any(s["instruction"] and s["status"] == "succeeded" for s in statuses), statuses
    decisions = b"".join(payload for _, payload in received["/view/decisions"])
    assert b"pick(" in decisions and b"succeeded" in decisions
    rates = [json.loads(payload)["rate_hz"] for _, payload in received["/view/controller_rate"]]
    assert max(rates) >= 15.0, rates  # the controller's 25 Hz while a subgoal runs
