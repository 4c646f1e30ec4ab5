"""The emergency stop's topics as every node sees them: latched (transient-local) Bool messages.

`arm_bridge` subscribes to `estop` (true = stop, false = released) and publishes its latch on
`estop_state`; the planner and controller watch `estop_state` and start no subgoal while it is true.
The operator's switch (`EstopSwitch`: `hgpo estop`, the arm benchmark) talks to the bridge alone, so a stop
never waits on the planner or the controller.
"""

from __future__ import annotations

import threading
import time

from rclpy.client import Client
from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool
from std_srvs.srv import Trigger

from ros_nodes.waiting import call_service

ESTOP_TOPIC = "estop"
ESTOP_STATE_TOPIC = "estop_state"
RESET_ESTOP_SERVICE = "reset_estop"


def latched_qos() -> QoSProfile:
    """The last message is kept for subscribers that join later, as a latched topic in ROS 1."""
    return QoSProfile(
        depth=1, reliability=ReliabilityPolicy.RELIABLE, durability=DurabilityPolicy.TRANSIENT_LOCAL
    )


class EmergencyStopError(RuntimeError):
    """Work was refused or stopped because the emergency stop is latched."""


class EstopMonitor:
    """The bridge's latched e-stop state, for nodes that must not start motion while it holds."""

    def __init__(self, node: Node) -> None:
        self.latched = False
        self._topic = node.resolve_topic_name(ESTOP_STATE_TOPIC)
        self._reset = node.resolve_service_name(RESET_ESTOP_SERVICE)
        node.create_subscription(Bool, ESTOP_STATE_TOPIC, self._on_state, latched_qos())

    def _on_state(self, msg: Bool) -> None:
        self.latched = bool(msg.data)

    def check(self, what: str) -> None:
        """Raise EmergencyStopError naming `what` and how to reset, while the stop is latched."""
        if self.latched:
            raise EmergencyStopError(
                f"{what} refused: emergency stop latched ({self._topic}); release it and call the "
                f"std_srvs/Trigger service {self._reset} first"
            )


class EstopSwitch:
    """The operator's side: press and release the stop on the bridge, and see its latch."""

    RETRY_S = 0.02

    def __init__(self, node: Node) -> None:
        self.monitor = EstopMonitor(node)
        self._pub = node.create_publisher(Bool, ESTOP_TOPIC, latched_qos())
        self._reset: Client[Trigger.Request, Trigger.Response] = node.create_client(
            Trigger, RESET_ESTOP_SERVICE
        )

    def connected(self) -> bool:
        """A bridge reads the stop and serves its reset."""
        return self._pub.get_subscription_count() > 0 and self._reset.service_is_ready()

    def set(self, pressed: bool) -> None:
        self._pub.publish(Bool(data=pressed))

    def release(self, timeout_s: float) -> Trigger.Response:
        """`false`, then reset_estop until the bridge accepts it (the release, a topic, may reach it after the
        call, a service) or `timeout_s` has passed; the bridge's last answer."""
        self.set(False)
        deadline = time.monotonic() + timeout_s
        while True:
            response = call_service(self._reset, Trigger.Request(), timeout_s, RESET_ESTOP_SERVICE)
            if response.success or time.monotonic() >= deadline:
                return response
            threading.Event().wait(self.RETRY_S)
