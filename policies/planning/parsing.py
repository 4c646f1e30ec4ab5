"""The text form of subgoals, `skill(arg, ...)` or `done()`, as pure functions: formatting, parsing model
output, and checking a parsed subgoal against a domain's valid set."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from policies.planning.domain import Subgoal

DONE = "done()"
"""What the model says when the instruction is carried out."""

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_CALL = re.compile(r"(?P<skill>[A-Za-z_][A-Za-z0-9_]*)\s*\((?P<args>[A-Za-z0-9_ .,'\"`-]*)\)")
_ARG = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_ .-]*")
_QUOTES = "'\"`"


class ParseError(ValueError):
    """Model output that is not one subgoal in the form `skill(arg, ...)` or `done()`; says what was wrong."""


def format_subgoal(subgoal: Subgoal | None) -> str:
    """`skill(a, b)` for a subgoal, `done()` for None (the planner's 'nothing left to do')."""
    return DONE if subgoal is None else f"{subgoal.skill}({', '.join(subgoal.args)})"


def _clean(text: str) -> str:
    """The first non-empty line, without list markers, code fences and a trailing full stop."""
    for line in text.strip().strip("`").splitlines():
        line = line.strip().strip("`").strip()
        if line:
            line = re.sub(r"^(\d+[.)]|[-*])\s+", "", line)
            return line.removesuffix(".").strip()
    return ""


def parse_subgoal(text: str) -> Subgoal | None:
    """Parse model output into a subgoal, or None for `done()`.

    Accepts one call on the first non-empty line (surrounding whitespace, code fences, a list marker and a
    trailing full stop are tolerated; quotes around an argument are dropped). Raises ParseError otherwise.
    """
    line = _clean(text)
    if not line:
        raise ParseError("empty output: answer with one subgoal such as skill(arg) or done()")
    match = _CALL.fullmatch(line)
    if match is None:
        raise ParseError(f"{line[:80]!r} is not of the form skill(arg, ...) or done()")
    skill, raw_args = match["skill"], match["args"].strip()
    args = tuple(arg.strip().strip(_QUOTES).strip() for arg in raw_args.split(",")) if raw_args else ()
    if any(not arg for arg in args):
        raise ParseError(f"{line[:80]!r} has an empty argument")
    if skill == "done":
        if args:
            raise ParseError(f"{line[:80]!r}: done() takes no arguments")
        return None
    return Subgoal(skill, args)


def is_well_formed(subgoal: Subgoal) -> bool:
    """Whether a subgoal can be written as text and parsed back unchanged (a contract check for domains)."""
    if not _NAME.fullmatch(subgoal.skill) or subgoal.skill == "done":
        return False
    return all(_ARG.fullmatch(arg) and arg == arg.strip() for arg in subgoal.args)


@dataclass(frozen=True)
class Validation:
    """The outcome of checking one model output: the subgoal when valid, else why not (model-readable)."""

    subgoal: Subgoal | None
    valid: bool
    error: str = ""


def validate_output(
    text: str, valid: Sequence[Subgoal], explain: Callable[[Subgoal], str], finish_allowed: bool = True
) -> Validation:
    """Parse `text` and check it against the valid subgoals (and whether done() is allowed now); `explain`
    says why a parsed subgoal is invalid."""
    try:
        subgoal = parse_subgoal(text)
    except ParseError as err:
        return Validation(None, False, str(err))
    if subgoal is None and not finish_allowed:
        return Validation(None, False, "done() is not possible yet: choose a subgoal")
    if subgoal is None or subgoal in set(valid):
        return Validation(subgoal, True)
    return Validation(subgoal, False, explain(subgoal))
