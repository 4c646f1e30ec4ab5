"""The `hgpo` command: one entry point that dispatches to each subcommand's own module.

Subcommands are imported lazily so that, for example, training on a GPU box never imports rclpy.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable

# name -> ("module:function", one-line help). Each function takes argv (list[str]) and returns an exit code.
COMMANDS: dict[str, tuple[str, str]] = {
    "launch": (
        "ros_nodes.launcher.cli:main",
        "run an XML launch file: sim | real | alfworld | FILE.launch.xml",
    ),
    "bench": ("hgpo.bench:main", "benchmarks: print a table and write JSON"),
}


def _usage() -> str:
    width = max(len(name) for name in COMMANDS)
    lines = ["usage: hgpo COMMAND [ARGS ...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in COMMANDS.items()]
    lines += ["", "`hgpo COMMAND --help` describes each command."]
    return "\n".join(lines)


def _resolve(target: str) -> Callable[[list[str]], int]:
    module, func = target.split(":")
    return getattr(importlib.import_module(module), func)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage())
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        print(f"hgpo: unknown command {name!r}; known: {', '.join(COMMANDS)}\n", file=sys.stderr)
        print(_usage(), file=sys.stderr)
        return 2
    return int(_resolve(COMMANDS[name][0])(rest) or 0)


if __name__ == "__main__":
    sys.exit(main())
