"""A ROS 2 type name ("pkg/msg/Name", "pkg/action/A_FeedbackMessage") -> its generated Python class."""

from __future__ import annotations

import importlib


def message_class(type_name: str) -> type:
    """Import the class rosidl generated for `type_name`; a clear error when its package is not installed."""
    pieces = type_name.split("/")
    if len(pieces) != 3 or not all(pieces):
        raise ValueError(f"type name {type_name!r} is not of the form pkg/msg/Name or pkg/action/Name")
    package, kind, name = pieces
    try:
        module = importlib.import_module(f"{package}.{kind}")
    except ImportError:
        raise ValueError(f"{type_name}: Python package {package}.{kind} is not installed") from None
    found = getattr(module, name, None)
    if found is None:  # an action's parts live in its module, e.g. hgpo_msgs.action._execute_subgoal
        action, _, _part = name.partition("_")
        owner = getattr(module, action, None)
        found = getattr(importlib.import_module(owner.__module__), name, None) if owner else None
    if not isinstance(found, type):
        raise ValueError(f"{type_name}: no such type in {package}.{kind}")
    return found
