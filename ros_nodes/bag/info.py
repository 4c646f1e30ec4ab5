"""`hgpo bag info`'s figures: per topic its type, message count, rate and time span; the whole duration."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from ros_nodes.bag.reader import open_bag


@dataclass
class TopicInfo:
    type_name: str
    count: int = 0
    first_ns: int = 0
    last_ns: int = 0

    @property
    def rate_hz(self) -> float:
        span = (self.last_ns - self.first_ns) / 1e9
        return (self.count - 1) / span if self.count > 1 and span > 0 else 0.0


@dataclass
class BagInfo:
    path: Path
    size_bytes: int
    complete: bool
    stopped_at: str
    topics: dict[str, TopicInfo] = field(default_factory=dict)

    @property
    def messages(self) -> int:
        return sum(t.count for t in self.topics.values())

    @property
    def start_ns(self) -> int:
        return min((t.first_ns for t in self.topics.values() if t.count), default=0)

    @property
    def end_ns(self) -> int:
        return max((t.last_ns for t in self.topics.values() if t.count), default=0)

    @property
    def duration_s(self) -> float:
        return (self.end_ns - self.start_ns) / 1e9

    def as_json(self) -> dict[str, object]:
        return {
            "path": str(self.path),
            "size_bytes": self.size_bytes,
            "complete": self.complete,
            "stopped_at": self.stopped_at,
            "duration_s": self.duration_s,
            "messages": self.messages,
            "topics": {name: {**asdict(t), "rate_hz": t.rate_hz} for name, t in sorted(self.topics.items())},
        }

    def table(self) -> str:
        state = "closed" if self.complete else f"not closed ({self.stopped_at or 'no footer'})"
        lines = [
            f"file:      {self.path}",
            f"size:      {self.size_bytes / 1e6:.2f} MB ({state})",
            f"duration:  {self.duration_s:.2f} s",
            f"messages:  {self.messages}",
            "",
        ]
        width = max((len(name) for name in self.topics), default=5)
        type_width = max((len(t.type_name) for t in self.topics.values()), default=4)
        lines.append(f"{'topic':<{width}}  {'type':<{type_width}}  {'count':>7}  {'rate (Hz)':>9}")
        for name, topic in sorted(self.topics.items()):
            lines.append(
                f"{name:<{width}}  {topic.type_name:<{type_width}}  {topic.count:>7}  {topic.rate_hz:>9.1f}"
            )
        return "\n".join(lines)


def bag_info(path: Path) -> BagInfo:
    """Read the whole file once (a truncated one too) and count what it holds."""
    bag = open_bag(path)
    topics: dict[str, TopicInfo] = {}
    for record in bag.messages():
        topic = topics.get(record.topic)
        if topic is None:
            topic = topics[record.topic] = TopicInfo(record.type_name, first_ns=record.log_time_ns)
        topic.count += 1
        topic.first_ns = min(topic.first_ns, record.log_time_ns)
        topic.last_ns = max(topic.last_ns, record.log_time_ns)
    return BagInfo(path, path.stat().st_size, bag.complete, bag.stopped_at, topics)
