"""ROS names as DDS topic names, the way rmw_fastrtps (and the DDS permissions SROS2 writes) spell them.

A topic `/a/b` is the DDS topic `rt/a/b`; a service `/a/s` is a request topic `rq/a/sRequest` and a reply
topic `rr/a/sReply`; an action `/a/x` is the services `_action/send_goal`, `_action/cancel_goal` and
`_action/get_result` and the topics `_action/feedback`, `_action/status` under `/a/x`. Permissions grant
on these names, so a grant written for a ROS name covers exactly what the rmw creates for it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ACTION_SERVICES = ("send_goal", "cancel_goal", "get_result")
ACTION_TOPICS = ("feedback", "status")
ROS_DISCOVERY_TOPIC = "ros_discovery_info"  # rmw_fastrtps's graph cache: every participant writes, reads it


def topic(name: str) -> str:
    return f"rt{name}"


def request(service: str) -> str:
    return f"rq{service}Request"


def reply(service: str) -> str:
    return f"rr{service}Reply"


@dataclass
class Grants:
    """The DDS topics one enclave may publish (write) and subscribe to (read)."""

    publish: set[str] = field(default_factory=set)
    subscribe: set[str] = field(default_factory=set)

    def publishes(self, name: str) -> None:
        self.publish.add(topic(name))

    def subscribes(self, name: str) -> None:
        self.subscribe.add(topic(name))

    def serves(self, service: str) -> None:
        """A service server reads requests and writes replies."""
        self.subscribe.add(request(service))
        self.publish.add(reply(service))

    def calls(self, service: str) -> None:
        """A service client writes requests and reads replies."""
        self.publish.add(request(service))
        self.subscribe.add(reply(service))

    def executes(self, action: str) -> None:
        """An action server: its three services served, feedback and status published."""
        for service in ACTION_SERVICES:
            self.serves(f"{action}/_action/{service}")
        for name in ACTION_TOPICS:
            self.publishes(f"{action}/_action/{name}")

    def sends(self, action: str) -> None:
        """An action client: the three services called, feedback and status read."""
        for service in ACTION_SERVICES:
            self.calls(f"{action}/_action/{service}")
        for name in ACTION_TOPICS:
            self.subscribes(f"{action}/_action/{name}")
