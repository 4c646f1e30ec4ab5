"""BackgroundSpin keeps a node hearing while the calling thread makes and destroys its entities."""

from __future__ import annotations

import pytest
import rclpy
from hgpo_msgs.action import ExecuteSubgoal
from rclpy._rclpy_pybind11 import RCLError
from rclpy.action import ActionClient
from rclpy.node import Node
from std_msgs.msg import Float64
from std_srvs.srv import Trigger

from ros_nodes.background_spin import BackgroundSpin
from tests.ros.helpers import DISCOVERY_S, wait_until


def test_node_keeps_hearing_while_entities_come_and_go(chatter: str) -> None:
    """Regression: a subscription or client destroyed, or an ActionClient built, from this thread while the
    executor spun used to end the spin thread (InvalidHandle / AttributeError), and the node went deaf."""
    node: Node = rclpy.create_node("spin_listener", namespace="spin")
    spin = BackgroundSpin(node)
    try:
        for _ in range(200):
            heard: list[Float64] = []
            sub = node.create_subscription(Float64, chatter, heard.append, 10)
            action = ActionClient(node, ExecuteSubgoal, "nobody")
            client = node.create_client(Trigger, "nobody")
            wait_until(lambda heard=heard: heard, DISCOVERY_S, "a message on a fresh subscription")
            action.destroy()
            node.destroy_client(client)
            node.destroy_subscription(sub)
        assert spin.alive
        heard = []
        node.create_subscription(Float64, chatter, heard.append, 10)
        wait_until(lambda: len(heard) >= 10, DISCOVERY_S, "ten messages after all that")
    finally:
        spin.close()
        node.destroy_node()


def test_an_action_client_destroyed_mid_wait_set_does_not_deafen_the_node(
    chatter: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Regression: under load (CI beside two evaluations), an ActionClient destroyed while the executor added
    it to the wait set raised RCLError in the spin thread, which ended it; the node then heard nothing. The
    race is rare, so rclpy's own error is raised here at that very call, once."""
    add_to_wait_set = ActionClient.add_to_wait_set
    raised: list[bool] = []
    rcl_message = "Failed to add 'rcl_action_client_t' to wait set: action client pointer is invalid"

    def destroyed_meanwhile(self: ActionClient, wait_set: object) -> None:
        if not raised:
            raised.append(True)
            raise RCLError(rcl_message)
        add_to_wait_set(self, wait_set)

    monkeypatch.setattr(ActionClient, "add_to_wait_set", destroyed_meanwhile)
    node: Node = rclpy.create_node("spin_listener_rcl", namespace="spin")
    ActionClient(node, ExecuteSubgoal, "nobody")
    spin = BackgroundSpin(node)
    try:
        heard: list[Float64] = []
        node.create_subscription(Float64, chatter, heard.append, 10)
        wait_until(lambda: len(heard) >= 3, DISCOVERY_S, "messages after the wait set failed once")
        assert raised and spin.alive
    finally:
        spin.close()
        node.destroy_node()
