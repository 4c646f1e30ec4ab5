"""recorder: every topic under a namespace, as discovered, into an MCAP file `ros2 bag` and Foxglove read.

Thin: discovery and subscriptions here, the file format in `ros_nodes.bag`. Messages arrive as cdr bytes
(`raw=True`) and are written as they are, with the type's definition embedded once per type. Action topics
(`.../_action/feedback`, `.../_action/status`) are topics like any other and are recorded; services are not.
A subscription matches its publishers' QoS (best effort or transient local where every publisher offers it).
Ctrl-C / SIGTERM close the file; a crash or SIGKILL leaves it readable up to the last flush
(`flush_period_s`).
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

from rclpy.node import Node
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
from rclpy.subscription import Subscription
from rclpy.topic_endpoint_info import TopicEndpointInfo

from policies.run_folders import new_run_folder, time_stamp
from ros_nodes.bag.definitions import DefinitionError, message_definition
from ros_nodes.bag.writer import BagWriter, OfferedQos
from ros_nodes.message_types import message_class
from ros_nodes.node_main import Parameters, run_node

FILE_NAME = "recording.mcap"


class Recorder(Node):
    def __init__(self) -> None:
        super().__init__("recorder")
        p = Parameters(self)
        base = p(
            "output_dir", "runs/sim", "the recording goes to OUTPUT_DIR/<YYYYmmdd-HHMMSS>/recording.mcap"
        )
        self.prefix = p("prefix", "/hgpo", "record every topic whose name starts with this namespace")
        self.depth = p("queue_depth", 1000, "subscription queue depth: what a busy recorder may fall behind")
        discovery_s = p.positive("discovery_period_s", 0.25, "look for new topics this often (s)")
        flush_s = p.positive(
            "flush_period_s", 1.0, "close a chunk this often (s): what a killed recorder can lose at most"
        )
        self.prefix = self.prefix.rstrip("/")
        self.writer = BagWriter(new_run_folder(Path(base), time_stamp()) / FILE_NAME)
        self._recorded: dict[str, Subscription] = {}
        self._skipped: set[str] = set()
        self.get_logger().info(f"recording topics under {self.prefix or '/'} to {self.writer.path.resolve()}")
        self.create_timer(discovery_s, self.discover)
        self.create_timer(flush_s, self.writer.flush)
        self.discover()

    def discover(self) -> None:
        """Subscribe to each new topic under the prefix once a publisher offers it."""
        for topic, types in self.get_topic_names_and_types():
            if topic in self._recorded or topic in self._skipped or not self._under_prefix(topic):
                continue
            publishers = self.get_publishers_info_by_topic(topic)
            if not publishers:
                continue  # subscribed once someone publishes: then its QoS is known
            if len(types) > 1:
                self.get_logger().warning(f"{topic} has several types {types}: recording {types[0]}")
            try:  # a type whose definition or Python class is not installed here is skipped, said once
                definition, msg_class = message_definition(types[0]), message_class(types[0])
            except (DefinitionError, ValueError) as error:
                self._skipped.add(topic)
                self.get_logger().warning(f"not recording {topic}: {error}")
                continue
            offered = [_offered(info) for info in publishers]
            self.writer.add_topic(topic, types[0], definition, offered)
            self._recorded[topic] = self.create_subscription(
                msg_class,
                topic,
                functools.partial(self._on_message, topic),
                self._qos(offered),
                raw=True,
            )

    def _under_prefix(self, topic: str) -> bool:
        return not self.prefix or topic == self.prefix or topic.startswith(self.prefix + "/")

    def _qos(self, offered: list[OfferedQos]) -> QoSProfile:
        """Reliable / transient local only where every publisher offers it, or some would not match."""
        reliable = all(o.reliability == "reliable" for o in offered)
        latched = all(o.durability == "transient_local" for o in offered)
        return QoSProfile(
            depth=self.depth,
            reliability=ReliabilityPolicy.RELIABLE if reliable else ReliabilityPolicy.BEST_EFFORT,
            durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
        )

    def _on_message(self, topic: str, data: bytes, info: dict[str, int]) -> None:
        if not self.writer.closed:
            self.writer.write(topic, data, info["received_timestamp"], info["source_timestamp"])

    def destroy_node(self) -> None:
        """Close the file (summary and footer) once spinning stopped: Ctrl-C leaves a complete recording."""
        if not self.writer.closed:
            self.writer.close()
            total = sum(self.writer.counts.values())
            size = self.writer.path.stat().st_size
            print(
                f"recorder: {total} messages on {len(self.writer.counts)} topics, {size / 1e6:.2f} MB in "
                f"{self.writer.path.resolve()}",
                flush=True,
            )
        super().destroy_node()


def _offered(info: TopicEndpointInfo) -> OfferedQos:
    qos = info.qos_profile
    return OfferedQos(
        reliability="best_effort" if qos.reliability == ReliabilityPolicy.BEST_EFFORT else "reliable",
        durability="transient_local" if qos.durability == DurabilityPolicy.TRANSIENT_LOCAL else "volatile",
        depth=qos.depth,
    )


def main() -> int:
    return run_node(Recorder)


if __name__ == "__main__":
    sys.exit(main())
