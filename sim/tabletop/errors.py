"""Errors raised for bad task names, subgoals and object names; each message lists what is valid."""

from __future__ import annotations

from collections.abc import Iterable


def _known(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "none"


class _UnknownNameError(ValueError):
    """A name that is not among the known ones; pickles with both, so that it reaches a command from a Ray
    worker as itself."""

    kind = "name"

    def __init__(self, name: str, known: Iterable[str]) -> None:
        self.name, self.known = name, tuple(known)
        super().__init__(f"unknown {self.kind} {name!r}; known {self.kind}s: {_known(self.known)}")

    def __reduce__(self) -> tuple[type, tuple[str, tuple[str, ...]]]:
        return type(self), (self.name, self.known)


class UnknownTaskError(_UnknownNameError):
    """A task name that is not in the registry."""

    kind = "task"


class SubgoalError(ValueError):
    """A subgoal that cannot be executed in the current scene."""


class UnknownSkillError(_UnknownNameError, SubgoalError):
    """A skill name that is not in the vocabulary."""

    kind = "skill"


class UnknownObjectError(_UnknownNameError, SubgoalError):
    """An object name that is not in the scene."""

    kind = "object"


class ArityError(SubgoalError):
    """A subgoal with the wrong number of arguments."""


class ArgumentTypeError(SubgoalError):
    """A subgoal argument of the wrong category, or the same object given twice."""
