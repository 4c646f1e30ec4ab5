"""Supervises the nodes of a launch as child processes, the way `ros2 launch` does.

Each node runs in its own process group, so the launcher alone decides how nodes stop. On Ctrl-C (SIGINT) or
SIGTERM every node gets that signal; when a node marked on_exit="shutdown" exits, the others get SIGINT. Nodes
still running a grace period later get SIGTERM, then SIGKILL (ROS 2's sigterm/sigkill timeouts), and at the
end every group is killed, so nothing, not even a node's own children, outlives the launch. The one thread
waits on all output pipes and on signals (SIGCHLD included, via the signal wakeup pipe) with a selector.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import IO, TextIO

from ros_nodes.launcher.spec import NodeSpec

LOG_FILE = "launch.log"
GRACE_S = 5.0  # ROS 2's sigterm_timeout and sigkill_timeout
_COLORS = ("\033[36m", "\033[32m", "\033[33m", "\033[35m", "\033[34m", "\033[91m")
_RESET = "\033[0m"
# (to screen, to the log file) per output mode and stream, routed as ROS 2's launch routes them.
_ROUTES = {
    "screen": {"stdout": (True, False), "stderr": (True, False)},
    "log": {"stdout": (False, True), "stderr": (True, True)},
    "both": {"stdout": (True, True), "stderr": (True, True)},
}
_FINAL_DRAIN_S = 1.0  # after the last SIGKILL, how long to wait for output still in the pipes
_READ_SIZE = 65536


def run(
    nodes: Sequence[NodeSpec], *, log_dir: Path, grace_s: float = GRACE_S, out: TextIO | None = None
) -> int:
    """Start `nodes`, relay their output prefixed with `[name]` until the launch ends; return its exit code.

    The code is that of the on_exit="shutdown" node that ended the launch (so `make sim` fails with its task);
    otherwise 1 if a node could not start, died before the shutdown or had to be killed with SIGKILL, else 0,
    also after Ctrl-C as with `ros2 launch`. Lines of nodes with output="log" or "both" also go to
    `log_dir`/launch.log. Must run in the main thread, which receives the signals.
    """
    return _Supervisor(nodes, log_dir, grace_s, sys.stdout if out is None else out).run()


@dataclass
class _Stream:
    """One output pipe of a node and the unfinished line read from it so far."""

    child: _Child
    name: str  # stdout | stderr
    pipe: IO[bytes]
    partial: bytes = b""
    open: bool = True


@dataclass
class _Child:
    spec: NodeSpec
    label: str
    color: str
    proc: subprocess.Popen[bytes]
    streams: list[_Stream] = field(default_factory=list)
    exited: bool = False


def _labels(nodes: Sequence[NodeSpec]) -> list[str]:
    """Line prefixes: the node name (else the executable); a repeated one gets -2, -3, ... to stay apart."""
    seen: dict[str, int] = {}
    labels = []
    for node in nodes:
        base = node.name or node.executable
        seen[base] = seen.get(base, 0) + 1
        labels.append(base if seen[base] == 1 else f"{base}-{seen[base]}")
    return labels


def _describe(returncode: int) -> str:
    if returncode >= 0:
        return f"exit code {returncode}"
    try:
        return f"signal {signal.Signals(-returncode).name}"
    except ValueError:
        return f"signal {-returncode}"


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):  # the whole group is gone already
        os.killpg(pgid, sig)


def _wake_only(signum: int, frame: FrameType | None) -> None:
    """Python-level handler; the signal number has already been written to the wakeup pipe."""


class _SignalPipe:
    """Delivers SIGINT, SIGTERM and SIGCHLD as bytes on a pipe that the selector watches."""

    _HANDLED = (signal.SIGINT, signal.SIGTERM, signal.SIGCHLD)

    def __enter__(self) -> int:
        self._read_fd, self._write_fd = os.pipe()
        for fd in (self._read_fd, self._write_fd):
            os.set_blocking(fd, False)
        self._previous_fd = signal.set_wakeup_fd(self._write_fd, warn_on_full_buffer=False)
        self._previous = {sig: signal.signal(sig, _wake_only) for sig in self._HANDLED}
        return self._read_fd

    def __exit__(self, *exc_info: object) -> None:
        for sig, handler in self._previous.items():
            if handler is not None:
                signal.signal(sig, handler)
        signal.set_wakeup_fd(self._previous_fd)
        os.close(self._read_fd)
        os.close(self._write_fd)


class _Supervisor:
    """One launch: starts the nodes, relays their output, reacts to their exits and to signals."""

    def __init__(self, nodes: Sequence[NodeSpec], log_dir: Path, grace_s: float, out: TextIO) -> None:
        self._nodes = nodes
        self._log_dir = log_dir
        self._grace_s = grace_s
        self._out = out
        self._color = out.isatty() and "NO_COLOR" not in os.environ
        self._log: TextIO | None = None
        self._selector = selectors.DefaultSelector()
        self._children: list[_Child] = []
        self._stages: list[signal.Signals] = []  # signals of the shutdown sequence, once it has begun
        self._stage = -1
        self._deadline: float | None = None  # when to send the next stage's signal
        self._code: int | None = None  # exit code of the on_exit="shutdown" node that ended the launch
        self._failed = False

    def run(self) -> int:
        with _SignalPipe() as wake_fd:
            self._selector.register(wake_fd, selectors.EVENT_READ, None)
            try:
                self._start_all()
                while not all(child.exited for child in self._children):
                    self._step(wake_fd)
            finally:
                self._finish(wake_fd)
        if self._code is not None:
            return self._code
        return 1 if self._failed else 0

    def _say(self, message: str) -> None:
        self._out.write(f"[launch] {message}\n")
        self._out.flush()

    def _start_all(self) -> None:
        if any(node.output != "screen" for node in self._nodes):
            self._log_dir.mkdir(parents=True, exist_ok=True)
            path = self._log_dir / LOG_FILE
            self._log = path.open("a", buffering=1)
            self._say(f'output of nodes with output="log" or "both" is written to {path}')
        env = dict(os.environ)
        env.setdefault("PYTHONUNBUFFERED", "1")  # as ROS 2's launch does, so Python nodes' lines arrive live
        for index, (spec, label) in enumerate(zip(self._nodes, _labels(self._nodes), strict=True)):
            try:
                proc = subprocess.Popen(
                    spec.command(),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    env=spec.environment(env),
                    process_group=0,
                )
            except OSError as error:
                self._say(f"cannot start '{label}' ({spec.executable_path}): {error.strerror}; stopping")
                self._failed = True
                self._shutdown(signal.SIGINT)
                return
            child = _Child(spec, label, _COLORS[index % len(_COLORS)], proc)
            for name, pipe in (("stdout", proc.stdout), ("stderr", proc.stderr)):
                assert pipe is not None
                os.set_blocking(pipe.fileno(), False)
                stream = _Stream(child, name, pipe)
                child.streams.append(stream)
                self._selector.register(pipe, selectors.EVENT_READ, stream)
            self._children.append(child)
            self._say(f"started '{label}' with pid {proc.pid}")

    def _step(self, wake_fd: int) -> None:
        timeout = None if self._deadline is None else max(0.0, self._deadline - time.monotonic())
        for key, _ in self._selector.select(timeout):
            if key.data is None:
                for signum in os.read(wake_fd, 512):
                    if signum in (signal.SIGINT, signal.SIGTERM):
                        self._interrupted(signal.Signals(signum))
            else:
                self._read(key.data)
        self._reap()
        if self._deadline is not None and time.monotonic() >= self._deadline:
            self._escalate()

    def _interrupted(self, sig: signal.Signals) -> None:
        if self._stages:
            self._say(f"{sig.name} again: not waiting any longer")
            self._escalate()
        else:
            self._say(f"{sig.name} received: stopping all nodes")
            self._shutdown(sig)

    def _shutdown(self, first: signal.Signals) -> None:
        self._stages = [first, *(sig for sig in (signal.SIGTERM, signal.SIGKILL) if sig != first)]
        self._escalate()

    def _escalate(self) -> None:
        if self._stage + 1 >= len(self._stages):
            return
        self._stage += 1
        sig = self._stages[self._stage]
        alive = [child for child in self._children if not child.exited]
        if self._stage > 0 and alive:
            self._failed |= sig == signal.SIGKILL
            labels = ", ".join(f"'{child.label}'" for child in alive)
            previous = self._stages[self._stage - 1].name
            self._say(f"{labels} still running after {previous}: sending {sig.name}")
        for child in alive:
            _signal_group(child.proc.pid, sig)
        self._deadline = None if sig == signal.SIGKILL else time.monotonic() + self._grace_s

    def _reap(self) -> None:
        for child in self._children:
            if not child.exited and child.proc.poll() is not None:
                child.exited = True
                for stream in child.streams:
                    while stream.open and self._read(stream):
                        pass  # all it wrote before exiting, so its last lines come before the report
                self._exited(child)

    def _exited(self, child: _Child) -> None:
        code = child.proc.returncode
        how = _describe(code)
        if child.spec.on_exit_shutdown and not self._stages:
            self._code = code if code >= 0 else 128 - code
            self._say(f"'{child.label}' exited with {how} and has on_exit=\"shutdown\": stopping the launch")
            self._shutdown(signal.SIGINT)
        elif code != 0 and not self._stages:
            self._failed = True
            self._say(
                f"'{child.label}' died unexpectedly with {how} (pid {child.proc.pid}); "
                "the other nodes keep running"
            )
        else:
            self._say(f"'{child.label}' exited with {how}")

    def _read(self, stream: _Stream) -> bool:
        """Relay what the pipe holds; False when it held nothing (or reached its end)."""
        try:
            data = os.read(stream.pipe.fileno(), _READ_SIZE)
        except BlockingIOError:
            return False
        if not data:
            self._close(stream)
            return False
        *lines, stream.partial = (stream.partial + data).split(b"\n")
        for line in lines:
            self._line(stream, line)
        return True

    def _close(self, stream: _Stream) -> None:
        if stream.partial:
            self._line(stream, stream.partial)
            stream.partial = b""
        self._selector.unregister(stream.pipe)
        stream.pipe.close()
        stream.open = False

    def _line(self, stream: _Stream, raw: bytes) -> None:
        child = stream.child
        text = raw.decode(errors="replace").rstrip("\r")
        to_screen, to_log = _ROUTES[child.spec.output][stream.name]
        if to_screen:
            label = f"{child.color}[{child.label}]{_RESET}" if self._color else f"[{child.label}]"
            self._out.write(f"{label} {text}\n")
            self._out.flush()
        if to_log and self._log is not None:
            self._log.write(f"[{child.label}] {text}\n")

    def _finish(self, wake_fd: int) -> None:
        """Leave nothing behind: kill every node's group, reap, and relay the output still in the pipes."""
        for child in self._children:
            _signal_group(child.proc.pid, signal.SIGKILL)
        for child in self._children:
            child.proc.wait()
        deadline = time.monotonic() + _FINAL_DRAIN_S
        streams = [stream for child in self._children for stream in child.streams]
        while any(stream.open for stream in streams) and (left := deadline - time.monotonic()) > 0:
            for key, _ in self._selector.select(left):
                if key.data is None:
                    os.read(wake_fd, 512)  # signals change nothing any more
                else:
                    self._read(key.data)
        for stream in streams:
            if stream.open:
                self._close(stream)
        self._selector.close()
        if self._log is not None:
            self._log.close()
