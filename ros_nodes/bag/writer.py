"""An MCAP file of ROS 2 messages as rosbag2 writes it: profile `ros2`, schemas in `ros2msg`, cdr messages.

Crash safety: messages go into compressed chunks; `flush()` closes the chunk in progress and hands it to the
operating system, so a recorder that flushes every second and is then killed (SIGKILL, a crash) leaves a
file whose complete chunks `reader` still reads, losing at most the last second. `close()` (Ctrl-C,
SIGTERM) writes the summary and footer, and the file is complete.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import yaml
from mcap.writer import CompressionType, Writer

PROFILE = "ros2"
SCHEMA_ENCODING = "ros2msg"
MESSAGE_ENCODING = "cdr"
# rosbag2's "infinite" duration in its offered_qos_profiles metadata.
_INFINITE = {"sec": 9223372036, "nsec": 854775807}


@dataclass(frozen=True)
class OfferedQos:
    """A publisher's QoS as rosbag2 stores it in a channel's `offered_qos_profiles` (what `ros2 bag play`
    offers again on replay)."""

    reliability: str = "reliable"  # or best_effort
    durability: str = "volatile"  # or transient_local
    history: str = "keep_last"
    depth: int = 10

    def as_yaml_entry(self) -> dict[str, object]:
        return {
            "history": self.history,
            "depth": self.depth,
            "reliability": self.reliability,
            "durability": self.durability,
            "deadline": dict(_INFINITE),
            "lifespan": dict(_INFINITE),
            "liveliness": "automatic",
            "liveliness_lease_duration": dict(_INFINITE),
            "avoid_ros_namespace_conventions": False,
        }


def offered_qos_yaml(profiles: list[OfferedQos]) -> str:
    return yaml.safe_dump([profile.as_yaml_entry() for profile in profiles], sort_keys=False)


class BagWriter:
    """Writes one recording; topics are added as they are discovered, messages as cdr bytes."""

    def __init__(self, path: Path, chunk_size: int = 1024 * 1024) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._file = path.open("xb")  # never overwrite an earlier recording
        self._mcap = Writer(self._file, chunk_size=chunk_size, compression=CompressionType.ZSTD)
        self._mcap.start(profile=PROFILE, library="hgpo recorder (mcap python)")
        self._schemas: dict[str, int] = {}
        self._channels: dict[str, int] = {}
        self.types: dict[str, str] = {}
        self.counts: Counter[str] = Counter()
        self.closed = False

    def add_topic(self, topic: str, type_name: str, definition: str, qos: list[OfferedQos]) -> None:
        """Register `topic` of `type_name` ("pkg/msg/Name") with its concatenated definition."""
        if topic in self._channels:
            raise ValueError(f"topic {topic} is already recorded (as {self.types[topic]})")
        if type_name not in self._schemas:
            self._schemas[type_name] = self._mcap.register_schema(
                name=type_name, encoding=SCHEMA_ENCODING, data=definition.encode()
            )
        self._channels[topic] = self._mcap.register_channel(
            topic=topic,
            message_encoding=MESSAGE_ENCODING,
            schema_id=self._schemas[type_name],
            metadata={"offered_qos_profiles": offered_qos_yaml(qos)},
        )
        self.types[topic] = type_name

    def write(self, topic: str, data: bytes, log_time_ns: int, publish_time_ns: int) -> None:
        """One serialized message received at `log_time_ns`, sent at `publish_time_ns` (ROS time, ns)."""
        self._mcap.add_message(
            channel_id=self._channels[topic],
            log_time=log_time_ns,
            publish_time=publish_time_ns,
            data=data,
            sequence=self.counts[topic],
        )
        self.counts[topic] += 1

    def flush(self) -> None:
        """Close the chunk in progress and pass it to the operating system (it survives a killed process)."""
        self._mcap.flush()

    def close(self) -> None:
        """Write the summary and footer; the file is then complete. Idempotent."""
        if self.closed:
            return
        self.closed = True
        self._mcap.finish()
        self._file.close()

    @property
    def bytes_written(self) -> int:
        return self._file.tell() if not self._file.closed else self.path.stat().st_size
