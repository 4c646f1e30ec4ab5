"""cdr bytes of ROS 2 messages without rclpy: mcap_ros2's encoder, driven by the definition the file embeds.

The recorder node gets cdr from DDS as it is; an in-process run (`hgpo run-task --record`) has message
objects (rosidl's generated classes, which need no rclpy, built by ros_nodes/conversions.py as the nodes
build them) and serializes them here. The bytes follow the embedded definition field by field, so every
reader of the file decodes them as it decodes a graph's recording (tests/bag: rclpy deserializes them).
"""

from __future__ import annotations

import array
from collections.abc import Callable
from typing import Any

import numpy as np

# mcap_ros2's encoder behind its Writer: that Writer is a container of its own, and ours is BagWriter.
from mcap_ros2._dynamic import serialize_dynamic

from ros_nodes.bag.definitions import parser_names


def plain(value: Any) -> Any:
    """A rosidl message as nested dicts and lists (the shapes mcap_ros2 encodes; rosidl keeps fixed-size
    arrays as numpy arrays, which it refuses)."""
    fields = getattr(value, "get_fields_and_field_types", None)
    if fields is not None:
        return {name: plain(getattr(value, name)) for name in fields()}
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, list | tuple):
        return [plain(item) for item in value]
    if isinstance(value, array.array):
        return value.tolist()
    return value


class CdrEncoder:
    """Serializes messages of one type, as `definition` (message_definition's text) lays them out."""

    def __init__(self, type_name: str, definition: str) -> None:
        name, text = parser_names(type_name, definition)
        encoders = serialize_dynamic(name, text)
        self._encode: Callable[[Any], bytes] = encoders[name]

    def __call__(self, message: Any) -> bytes:
        return self._encode(plain(message))
