"""The emergency stop's topics as every node sees them: latched (transient-local) Bool messages.

`arm_bridge` subscribes to `estop` (true = stop, false = released) and publishes its latch on
`estop_state`; the planner and controller watch `estop_state` and start no subgoal while it is true.
"""

from __future__ import annotations

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from std_msgs.msg import Bool

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
