"""Re-publishing a recording over DDS at its recorded pace or scaled: a viewer or a new node sees an old run.

The file's cdr bytes go out as they are (rclpy publishes serialized messages), with the recorded types and
the QoS their publishers offered (transient local where it was, e.g. an action's status).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import rclpy
import yaml
from rclpy.node import Node
from rclpy.publisher import Publisher
from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy

from ros_nodes.bag.reader import BagError, open_bag
from ros_nodes.message_types import message_class

DEPTH = 1000


@dataclass
class ReplayReport:
    messages: int
    topics: int
    recorded_s: float  # the recording's span, first to last message replayed
    wall_s: float  # what re-publishing took, from the first message to the last


def _topic_table(path: Path, topics: Sequence[str] | None) -> dict[str, tuple[str, QoSProfile]]:
    """Topic -> (type, QoS) of every channel with messages (one pass over the file)."""
    found: dict[str, tuple[str, QoSProfile]] = {}
    for record in open_bag(path).messages():
        if record.topic in found or (topics and record.topic not in topics):
            continue
        found[record.topic] = (
            record.type_name,
            _qos(record.channel.metadata.get("offered_qos_profiles", "")),
        )
    missing = sorted(set(topics or ()) - set(found))
    if missing:
        raise BagError(f"{path}: no messages on {', '.join(missing)}; it has {', '.join(sorted(found))}")
    return found


def _qos(offered_yaml: str) -> QoSProfile:
    offered = yaml.safe_load(offered_yaml) or []
    latched = any(o.get("durability") == "transient_local" for o in offered)
    best_effort = bool(offered) and all(o.get("reliability") == "best_effort" for o in offered)
    return QoSProfile(
        depth=DEPTH,
        reliability=ReliabilityPolicy.BEST_EFFORT if best_effort else ReliabilityPolicy.RELIABLE,
        durability=DurabilityPolicy.TRANSIENT_LOCAL if latched else DurabilityPolicy.VOLATILE,
    )


def replay(
    path: Path,
    rate: float = 1.0,
    topics: Sequence[str] | None = None,
    delay_s: float = 1.0,
    wait_for_subscribers_s: float = 0.0,
    stop: threading.Event | None = None,
) -> ReplayReport:
    """Publish the file's messages in file order at `rate` times the recorded pace; rclpy must be initialized.

    `delay_s` gives discovery time before the first message; with `wait_for_subscribers_s`, publishing starts
    once every topic has a subscriber (or that many seconds passed).
    """
    if not rate > 0:
        raise ValueError(f"rate must be positive, got {rate}")
    table = _topic_table(path, topics)
    node = Node("bag_replay")
    stop = stop or threading.Event()
    try:
        publishers: dict[str, Publisher] = {
            topic: node.create_publisher(message_class(type_name), topic, qos)
            for topic, (type_name, qos) in table.items()
        }
        deadline = time.monotonic() + wait_for_subscribers_s
        while time.monotonic() < deadline and not stop.is_set():
            if all(pub.get_subscription_count() > 0 for pub in publishers.values()):
                break
            stop.wait(0.02)
        stop.wait(delay_s)
        count, first_ns, last_ns, started = 0, 0, 0, 0.0
        for record in open_bag(path).messages():
            publisher = publishers.get(record.topic)
            if publisher is None:
                continue
            if count == 0:
                first_ns, started = record.log_time_ns, time.monotonic()
            due = started + (record.log_time_ns - first_ns) / 1e9 / rate
            if stop.wait(max(0.0, due - time.monotonic())):
                break
            publisher.publish(record.data)
            count, last_ns = count + 1, record.log_time_ns
        wall = time.monotonic() - started if count else 0.0
        return ReplayReport(count, len(publishers), (last_ns - first_ns) / 1e9, wall)
    finally:
        node.destroy_node()


def replay_main(
    path: Path, rate: float, topics: Sequence[str] | None, delay_s: float, wait_s: float
) -> ReplayReport:
    """`replay` in a process of its own: init, Ctrl-C stops publishing, shutdown."""
    rclpy.init()
    try:
        return replay(path, rate, topics, delay_s, wait_s)
    finally:
        rclpy.try_shutdown()
