"""What a launch file resolves to: the nodes to start, as the parser makes them and the runner runs them."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

OUTPUTS = ("screen", "log", "both")


@dataclass(frozen=True)
class ParamFile:
    """`<param from="FILE.yaml"/>`, passed as `--params-file FILE`."""

    path: Path


@dataclass(frozen=True)
class ParamValue:
    """`<param name value/>`, passed as `-p name:=value`: the node types the text as YAML, as ROS 2 does."""

    name: str
    value: str


@dataclass(frozen=True)
class NodeSpec:
    """One enabled `<node>` after substitution: all that is needed to start it and to report on it."""

    package: str
    executable: str
    executable_path: Path
    name: str | None  # None: the node keeps its own default name (no __node remap), as in ROS 2
    namespace: str | None  # absolute; None when neither the node nor an enclosing scope sets one
    params: tuple[ParamFile | ParamValue, ...]  # document order: a later value of a parameter wins
    remaps: tuple[tuple[str, str], ...]
    output: str  # one of OUTPUTS, as ROS 2's `output` ("log" when not given)
    on_exit_shutdown: bool  # on_exit="shutdown": this node's exit ends the launch
    ros_args: tuple[str, ...] = ()  # the node's `ros_args` attribute, split into words as ROS 2 splits it
    env: tuple[tuple[str, str], ...] = ()  # `<set_env>` in effect for the node, in the order they were set

    def command(self) -> list[str]:
        """The argv ROS 2's Node action builds: EXE [--ros-args ros_args] --ros-args -r __node:= -r __ns:=
        params remaps."""
        cmd = [str(self.executable_path)]
        if self.ros_args:
            cmd += ["--ros-args", *self.ros_args]
        cmd.append("--ros-args")
        if self.name is not None:
            cmd += ["-r", f"__node:={self.name}"]
        if self.namespace is not None:
            cmd += ["-r", f"__ns:={self.namespace}"]
        for param in self.params:
            if isinstance(param, ParamFile):
                cmd += ["--params-file", str(param.path)]
            else:
                # rcl refuses `-p name:=`; ROS 2's launch hands an empty value over as the empty string.
                value = param.value or "''"
                cmd += ["-p", f"{param.name}:={value}"]
        for source, target in self.remaps:
            cmd += ["-r", f"{source}:={target}"]
        return cmd

    def environment(self, base: Mapping[str, str]) -> dict[str, str]:
        """The node's environment: `base` (the launcher's) with the `<set_env>` values in effect over it."""
        return {**base, **dict(self.env)}
