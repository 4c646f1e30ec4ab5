"""Errors raised for bad task names, subgoals and object names; each message lists what is valid."""

from __future__ import annotations

from collections.abc import Iterable


def _known(names: Iterable[str]) -> str:
    return ", ".join(sorted(names)) or "none"


class UnknownTaskError(ValueError):
    """A task name that is not in the registry."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        super().__init__(f"unknown task {name!r}; known tasks: {_known(known)}")


class SubgoalError(ValueError):
    """A subgoal that cannot be executed in the current scene."""


class UnknownSkillError(SubgoalError):
    """A skill name that is not in the vocabulary."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        super().__init__(f"unknown skill {name!r}; known skills: {_known(known)}")


class UnknownObjectError(SubgoalError):
    """An object name that is not in the scene."""

    def __init__(self, name: str, known: Iterable[str]) -> None:
        super().__init__(f"unknown object {name!r}; known objects: {_known(known)}")


class ArityError(SubgoalError):
    """A subgoal with the wrong number of arguments."""


class ArgumentTypeError(SubgoalError):
    """A subgoal argument of the wrong category, or the same object given twice."""
