"""Substitutions in attribute values, read with the rules of ROS 2's launch frontend grammar.

Supported: `$(var NAME)`, `$(env NAME)`, `$(env NAME DEFAULT)` and `$(find-pkg-share PKG)`, nested in one
another and with quoted arguments. As in ROS 2, arguments are separated by exactly one space, a backslash
escapes the next character, and a `$` that does not start a substitution must be written `\\$`.
Parsing and resolving are separate so that a syntax error anywhere in a file is reported before anything runs.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TypeAlias

from ros_nodes.launcher.errors import LaunchError
from ros_nodes.launcher.packages import package_share

_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")


@dataclass(frozen=True)
class Substitution:
    """One `$(kind arg ...)`; each argument is itself a template."""

    kind: str
    args: tuple[Template, ...]


# Literal text and substitutions, concatenated when resolved.
Template: TypeAlias = tuple[str | Substitution, ...]


@dataclass(frozen=True)
class _Kind:
    usage: str
    min_args: int
    max_args: int
    perform: Callable[[list[str], Mapping[str, str], Mapping[str, str]], str]


def _var(args: list[str], configs: Mapping[str, str], environ: Mapping[str, str]) -> str:
    name = args[0]
    if name not in configs:
        defined = ", ".join(sorted(configs)) or "none"
        raise LaunchError(f"$(var {name}): no <arg> or <let> named '{name}' is in scope (defined: {defined})")
    return configs[name]


def _env(args: list[str], configs: Mapping[str, str], environ: Mapping[str, str]) -> str:
    name = args[0]
    if name in environ:
        return environ[name]
    if len(args) == 2:
        return args[1]
    raise LaunchError(
        f"$(env {name}): environment variable '{name}' is not set; give a default as $(env {name} VALUE)"
    )


def _find_pkg_share(args: list[str], configs: Mapping[str, str], environ: Mapping[str, str]) -> str:
    return str(package_share(args[0]))


_KINDS: dict[str, _Kind] = {
    "var": _Kind("$(var NAME)", 1, 1, _var),
    "env": _Kind("$(env NAME) or $(env NAME DEFAULT)", 1, 2, _env),
    "find-pkg-share": _Kind("$(find-pkg-share PKG)", 1, 1, _find_pkg_share),
}
SUPPORTED = ", ".join(kind.usage for kind in _KINDS.values())


def parse_template(text: str) -> Template:
    """Parse an attribute value; raises LaunchError on a syntax error or an unsupported substitution."""
    return _Parser(text).template()


def resolve(template: Template, configs: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """Substitute launch configurations (`<arg>`/`<let>` values), environment variables and package paths."""
    return "".join(part if isinstance(part, str) else _perform(part, configs, environ) for part in template)


def resolve_words(template: Template, configs: Mapping[str, str], environ: Mapping[str, str]) -> list[str]:
    """A command-line attribute (`ros_args`) as ROS 2's `_parse_cmdline` splits it: the literal text into
    shell-like words, while a substitution's value is never split and joins the literal text it touches."""
    words: list[str] = []
    word: list[str] = []

    def end_word() -> None:
        if word:
            words.append("".join(word))
            word.clear()

    for part in template:
        if isinstance(part, Substitution):
            word.append(_perform(part, configs, environ))
            continue
        tokens = shlex.split(part)
        if not tokens:
            end_word()
            continue
        if part[0].isspace():
            end_word()
        word.append(tokens[0])
        if len(tokens) > 1:
            end_word()
            words.extend(tokens[1:-1])
            word.append(tokens[-1])
        if part[-1].isspace():
            end_word()
    end_word()
    return words


def _perform(sub: Substitution, configs: Mapping[str, str], environ: Mapping[str, str]) -> str:
    args = [resolve(arg, configs, environ) for arg in sub.args]
    return _KINDS[sub.kind].perform(args, configs, environ)


class _Parser:
    """Recursive descent over one attribute value."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def template(self) -> Template:
        return tuple(self._fragments(stop="", forbidden="", quoted_args=True))

    def _error(self, what: str, pos: int | None = None) -> LaunchError:
        column = (self.pos if pos is None else pos) + 1
        return LaunchError(f"{what} at column {column} of {self.text!r} (supported: {SUPPORTED})")

    def _peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def _fragments(self, stop: str, forbidden: str, quoted_args: bool) -> list[str | Substitution]:
        parts: list[str | Substitution] = []
        literal: list[str] = []
        while (char := self._peek()) and char not in stop:
            if char == "\\" and self.pos + 1 < len(self.text):
                literal.append(self.text[self.pos + 1])
                self.pos += 2
            elif self.text.startswith("$(", self.pos):
                if literal:
                    parts.append("".join(literal))
                    literal = []
                parts.append(self._substitution(quoted_args))
            elif char == "$":
                raise self._error("a '$' that does not start a substitution must be escaped as '\\$'")
            elif char in forbidden:
                raise self._error(f"unexpected {char!r} in an unquoted substitution argument")
            else:
                literal.append(char)
                self.pos += 1
        if literal:
            parts.append("".join(literal))
        return parts

    def _substitution(self, quoted_args: bool) -> Substitution:
        start = self.pos
        self.pos += 2
        match = _NAME.match(self.text, self.pos)
        if match is None:
            raise self._error("expected a substitution name after '$('")
        kind = match.group()
        self.pos = match.end()
        args: list[Template] = []
        while self._peek() == " ":
            self.pos += 1
            args.append(self._argument(quoted_args))
        if self._peek() != ")":
            raise self._error(f"expected ')' to close $({kind} ...) or one space before its next argument")
        self.pos += 1
        if kind not in _KINDS:
            raise self._error(f"unsupported substitution $({kind} ...)", start)
        spec = _KINDS[kind]
        if not spec.min_args <= len(args) <= spec.max_args:
            raise self._error(f"$({kind}) expects {spec.usage}, got {len(args)} argument(s)", start)
        return Substitution(kind, tuple(args))

    def _argument(self, quoted_args: bool) -> Template:
        quote = self._peek()
        if quote in ("'", '"'):
            if not quoted_args:
                raise self._error("a quoted argument cannot be nested inside a quoted argument")
            self.pos += 1
            parts = self._fragments(stop=quote, forbidden="", quoted_args=False)
            if self._peek() != quote:
                raise self._error(f"missing closing {quote}")
            self.pos += 1
            return tuple(parts)
        parts = self._fragments(stop=" )", forbidden="'\"(", quoted_args=quoted_args)
        if not parts:
            raise self._error("empty argument (separate arguments with exactly one space)")
        return tuple(parts)
