"""Reading a recording back, in file order, whether it was closed or its recorder was killed.

A closed file ends with a footer. A file whose recorder died ends inside a chunk or between records: every
complete chunk before that point is read, and `Bag.complete` is False (the file is recoverable, not lost).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mcap.exceptions import EndOfFile, McapError
from mcap.records import Channel, Footer, Message, Schema
from mcap.stream_reader import StreamReader
from mcap_ros2.decoder import DecoderFactory

from ros_nodes.bag.definitions import parser_names


class BagError(Exception):
    """A file that is not a recording we can read; the message says which and why."""


@dataclass
class Record:
    """One recorded message: its topic, type name, cdr bytes and times (ns)."""

    topic: str
    type_name: str
    data: bytes
    log_time_ns: int
    publish_time_ns: int
    channel: Channel
    schema: Schema | None


@dataclass
class Bag:
    """A recording opened for one pass over its messages (`messages()`); `complete` is known after it."""

    path: Path
    complete: bool = False
    stopped_at: str = ""  # why reading stopped early (a truncated file), else empty
    _read: bool = field(default=False, repr=False)

    def messages(self) -> Iterator[Record]:
        if self._read:
            raise RuntimeError("a Bag reads its file once; open it again for another pass")
        self._read = True
        schemas: dict[int, Schema] = {}
        channels: dict[int, Channel] = {}
        try:
            with self.path.open("rb") as stream:
                for record in StreamReader(stream).records:
                    if isinstance(record, Schema):
                        schemas[record.id] = record
                    elif isinstance(record, Channel):
                        channels[record.id] = record
                    elif isinstance(record, Message):
                        channel = channels[record.channel_id]
                        schema = schemas.get(channel.schema_id)
                        yield Record(
                            topic=channel.topic,
                            type_name=schema.name if schema else "",
                            data=record.data,
                            log_time_ns=record.log_time,
                            publish_time_ns=record.publish_time,
                            channel=channel,
                            schema=schema,
                        )
                    elif isinstance(record, Footer):
                        self.complete = True
        except EndOfFile:
            self.stopped_at = "the file ends inside a record (its recorder was killed): read up to there"
        except McapError as error:
            if not channels:
                raise BagError(f"{self.path}: not a readable MCAP file: {error}") from None
            self.stopped_at = f"unreadable past this point: {error}"


def open_bag(path: Path) -> Bag:
    if not path.is_file():
        raise BagError(f"{path}: no such file")
    return Bag(path)


def _decodable(schema: Schema) -> Schema:
    name, text = parser_names(schema.name, schema.data.decode())
    return Schema(id=schema.id, name=name, encoding=schema.encoding, data=text.encode())


class Ros2Decoder:
    """Decodes cdr messages with the definitions embedded in the file (mcap_ros2's decoder), no ROS needed."""

    def __init__(self) -> None:
        self._factory = DecoderFactory()
        self._decoders: dict[int, Callable[[bytes], Any]] = {}

    def decode(self, record: Record) -> Any:
        decoder = self._decoders.get(record.channel.id)
        if decoder is None:
            schema = _decodable(record.schema) if record.schema else None
            found = self._factory.decoder_for(record.channel.message_encoding, schema)
            if found is None:
                raise BagError(f"{record.topic}: not a ROS 2 cdr channel with a ros2msg schema")
            decoder = self._decoders[record.channel.id] = found
        return decoder(record.data)
