"""BackgroundSpin keeps a node hearing while the calling thread makes and destroys its entities."""

from __future__ import annotations

import rclpy
from hgpo_msgs.action import ExecuteSubgoal
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
