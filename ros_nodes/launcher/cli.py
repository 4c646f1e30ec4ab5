"""`hgpo launch sim|real|alfworld|FILE.launch.xml [name:=value ...]`: our stand-in for `ros2 launch`."""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
import time
from pathlib import Path

from ros_nodes.launcher.errors import LaunchError
from ros_nodes.launcher.packages import package_share
from ros_nodes.launcher.parse import describe_arguments, parse_cli_args, parse_launch_file
from ros_nodes.launcher.runner import GRACE_S, run
from ros_nodes.launcher.spec import NodeSpec

# A source checkout: the repository root is the folder above the `ros_nodes` package.
REPO_ROOT = Path(__file__).resolve().parents[2]
_SUFFIX = ".launch.xml"


def main(argv: list[str]) -> int:
    """Run (or with --print, show) a launch file; `argv` is what follows `hgpo launch`."""
    # `make setup` installs the packages into the venv and nothing is sourced (PLATFORM.md), so the venv is
    # the ament prefix unless a ROS 2 setup script has set one; the nodes inherit it.
    if not os.environ.get("AMENT_PREFIX_PATH"):
        os.environ["AMENT_PREFIX_PATH"] = sys.prefix
    parser = _parser()
    try:
        options = parser.parse_intermixed_args(argv)
    except SystemExit as done:  # --help, or a usage error argparse has already printed
        return done.code if isinstance(done.code, int) else 2
    try:
        path = resolve_launch_file(options.target)
        if options.show_args:
            print(f"Arguments (pass as name:=value) of {path}:\n{describe_arguments(path)}")
            return 0
        nodes = parse_launch_file(path, parse_cli_args(options.args))
    except LaunchError as error:
        print(f"hgpo launch: error: {error}", file=sys.stderr)
        return 2
    if options.print:
        _print_commands(path, nodes)
        return 0
    if not nodes:
        print(f"hgpo launch: {path} starts no nodes with these arguments", file=sys.stderr)
        return 0
    return run(nodes, log_dir=_log_dir(), grace_s=options.grace)


def resolve_launch_file(target: str) -> Path:
    """A path as given, or a short name NAME as `$(find-pkg-share hgpo)/launch/NAME.launch.xml`.

    Without an installed `hgpo` package (a source checkout before `make setup`), NAME is looked up in the
    repository's `launch/` folder instead.
    """
    if target.endswith(".xml") or os.sep in target:
        path = Path(target)
        if not path.is_file():
            raise LaunchError(f"launch file {path} does not exist")
        return path
    tried = []
    with contextlib.suppress(LaunchError):  # not installed: only the checkout's folder
        tried.append(package_share("hgpo") / "launch" / f"{target}{_SUFFIX}")
    tried.append(REPO_ROOT / "launch" / f"{target}{_SUFFIX}")
    for path in tried:
        if path.is_file():
            return path
    raise LaunchError(
        f"no launch file named '{target}': tried {', '.join(map(str, tried))}; "
        "give the name of a file in launch/ (e.g. sim) or a path to a FILE.launch.xml"
    )


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="hgpo launch",
        description="Run a ROS 2 XML launch file the way `ros2 launch` would: each node as a process, its "
        "output prefixed with [name], Ctrl-C stops them all. Supported XML: <arg>, <let>, <set_env>, "
        "<group>, <push-ros-namespace>, <node> (ros_args too) with <param> and <remap>, if/unless, $(var), "
        "$(env), $(find-pkg-share).",
    )
    parser.add_argument(
        "target",
        help="NAME, e.g. sim (launch/NAME.launch.xml of package hgpo), or a path to a FILE.launch.xml",
    )
    parser.add_argument("args", nargs="*", metavar="name:=value", help="launch arguments the file declares")
    parser.add_argument(
        "-s",
        "--show-args",
        action="store_true",
        help="list the file's arguments and defaults, then exit (ros2 launch -s)",
    )
    parser.add_argument(
        "--print",
        action="store_true",
        help="print the resolved command of each node, with the environment <set_env> gives it, and "
        "exit without starting anything",
    )
    parser.add_argument(
        "--grace",
        type=float,
        default=GRACE_S,
        metavar="SECONDS",
        help="on shutdown, wait this long after SIGINT before SIGTERM, then before SIGKILL",
    )
    return parser


def _print_commands(path: Path, nodes: list[NodeSpec]) -> None:
    print(f"# {path}: {len(nodes)} node(s)")
    for node in nodes:
        flags = f"output={node.output}" + (", on_exit=shutdown" if node.on_exit_shutdown else "")
        print(f"# {node.name or node.executable} ({flags})")
        print(shlex.join([f"{name}={value}" for name, value in node.env] + node.command()))


def _log_dir() -> Path:
    """A fresh folder under ROS 2's log location (ROS_LOG_DIR, else ROS_HOME/log, else ~/.ros/log)."""
    base = os.environ.get("ROS_LOG_DIR") or Path(os.environ.get("ROS_HOME") or Path.home() / ".ros") / "log"
    return Path(base) / f"{time.strftime('%Y-%m-%d-%H-%M-%S')}-hgpo-launch-{os.getpid()}"
