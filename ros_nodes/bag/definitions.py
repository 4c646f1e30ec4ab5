"""Message definitions as rosbag2 embeds them: the type's .msg text, then each dependency's after a separator.

rosbag2 (and so Foxglove and `mcap_ros2`) expect the `ros2msg` schema encoding: the top-level definition,
then for every type it uses, directly or not, a line of 80 '=', a line `MSG: pkg/msg/Name` and that type's
text. Definitions come from the installed interface packages' share folders (`share/PKG/msg/NAME.msg`);
action topics' types (`PKG/action/A_FeedbackMessage`, `_Goal`, `_Result`, `_Feedback`) from the sections of
`share/PKG/action/A.action`, as rosidl generates them.
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

SEPARATOR = "=" * 80
PRIMITIVES = frozenset(
    [
        "bool",
        "byte",
        "char",
        "float32",
        "float64",
        "int8",
        "uint8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "uint64",
        "string",
        "wstring",
    ]
)
_ACTION_PART = re.compile(r"(?P<action>\w+)_(?P<part>Goal|Result|Feedback|FeedbackMessage)")
_ACTION_SECTIONS = {"Goal": 0, "Result": 1, "Feedback": 2}
# What rosidl adds around an action's feedback: the goal's id (unique_identifier_msgs/UUID) before it.
_FEEDBACK_MESSAGE = "unique_identifier_msgs/UUID goal_id\n{action}_Feedback feedback\n"


class DefinitionError(LookupError):
    """A type whose definition text is not installed where we looked; the message says where."""


def share_roots(prefixes: str | None = None) -> list[Path]:
    """The `share` folders of AMENT_PREFIX_PATH's prefixes (default: the environment's, else this Python's
    prefix, where `make setup` installs the interface packages)."""
    value = prefixes if prefixes is not None else os.environ.get("AMENT_PREFIX_PATH") or sys.prefix
    return [Path(prefix) / "share" for prefix in value.split(os.pathsep) if prefix]


def message_definition(type_name: str, roots: Sequence[Path] | None = None) -> str:
    """The concatenated definition of `type_name` ("pkg/msg/Name", "pkg/action/A_FeedbackMessage", ...)."""
    search = list(share_roots() if roots is None else roots)
    text = _own_text(type_name, search)
    parts = [text]
    seen = {type_name}
    pending = _dependencies(type_name, text, search)
    while pending:
        dependency = pending.pop(0)
        if dependency in seen:
            continue
        seen.add(dependency)
        dep_text = _own_text(dependency, search)
        parts.append(f"{SEPARATOR}\nMSG: {dependency}\n{dep_text}")
        pending += _dependencies(dependency, dep_text, search)
    return "\n".join(part.rstrip("\n") + "\n" for part in parts)


def _split(type_name: str) -> tuple[str, str, str]:
    pieces = type_name.split("/")
    if len(pieces) != 3 or not all(pieces):
        raise DefinitionError(f"type name {type_name!r} is not of the form pkg/msg/Name or pkg/action/Name")
    return pieces[0], pieces[1], pieces[2]


def _find(roots: Sequence[Path], relative: str) -> Path | None:
    return next((root / relative for root in roots if (root / relative).is_file()), None)


def _own_text(type_name: str, roots: Sequence[Path]) -> str:
    package, kind, name = _split(type_name)
    if kind == "msg":
        path = _find(roots, f"{package}/msg/{name}.msg")
        if path is not None:
            return path.read_text()
    elif kind == "action" and (match := _ACTION_PART.fullmatch(name)):
        action, part = match["action"], match["part"]
        path = _find(roots, f"{package}/action/{action}.action")
        if path is not None:
            if part == "FeedbackMessage":
                return _FEEDBACK_MESSAGE.format(action=action)
            sections = re.split(r"^---\s*$", path.read_text(), flags=re.MULTILINE)
            return sections[_ACTION_SECTIONS[part]].strip("\n") + "\n"
    raise DefinitionError(
        f"no definition of {type_name} under {', '.join(map(str, roots)) or '(no share folders)'}: "
        "is its interface package installed (make setup) and AMENT_PREFIX_PATH set?"
    )


def field_types(text: str) -> list[str]:
    """The non-primitive field types a .msg text names, as written (`Pose`, `geometry_msgs/Pose`)."""
    found = []
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if len(words) < 2 or "=" in words[1]:  # blank, comment, or a constant (always primitive)
            continue
        base = re.sub(r"\[[^\]]*\]$", "", words[0]).split("<=", 1)[0]
        if base not in PRIMITIVES:
            found.append(base)
    return found


def _dependencies(type_name: str, text: str, roots: Sequence[Path]) -> list[str]:
    package = _split(type_name)[0]
    return [_resolve(written, package, roots) for written in field_types(text)]


def _resolve(written: str, package: str, roots: Sequence[Path]) -> str:
    """A field type as written inside `package`'s interfaces -> its full name."""
    if written == "Header":  # the one bare name that means another package's type
        return "std_msgs/msg/Header"
    owner, _, name = written.rpartition("/")
    owner = owner.split("/")[0] if owner else package
    match = _ACTION_PART.fullmatch(name)
    is_message = _find(roots, f"{owner}/msg/{name}.msg") is not None
    if not is_message and match and _find(roots, f"{owner}/action/{match['action']}.action") is not None:
        return f"{owner}/action/{name}"
    return f"{owner}/msg/{name}"


# rosidl names an action's parts A_Goal, A_Result, A_Feedback, A_FeedbackMessage; mcap_ros2's .msg parser
# accepts only [A-Z][A-Za-z0-9]* as a message name, so they are renamed (AGoal, ...) for its codecs alone.
_PARSER_UNSAFE = re.compile(r"\b([A-Z][A-Za-z0-9]*)_(Goal|Result|Feedback|FeedbackMessage)\b")


def parser_names(type_name: str, definition: str) -> tuple[str, str]:
    """`type_name` and its definition with action parts renamed as mcap_ros2's codecs accept them (the
    cdr bytes do not depend on names); other types as they are."""
    if "_" not in type_name.rsplit("/", 1)[-1]:
        return type_name, definition
    return _PARSER_UNSAFE.sub(r"\1\2", type_name), _PARSER_UNSAFE.sub(r"\1\2", definition)
