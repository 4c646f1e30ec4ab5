"""A process whose combined output is collected line by line, for tests that start real programs."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path


class Captured:
    """`Popen` in its own session with stdout and stderr read into `lines` by a background thread."""

    def __init__(self, command: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> None:
        self.proc = subprocess.Popen(
            list(command),
            cwd=cwd,
            env=None if env is None else dict(env),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.rstrip("\n"))

    @property
    def output(self) -> str:
        return "\n".join(self.lines)

    def wait(self, timeout: float) -> int:
        code = self.proc.wait(timeout=timeout)
        self._reader.join(timeout=timeout)
        return code

    def stop(self, timeout: float) -> int:
        """Ctrl-C as a user would; the whole process group is killed if that does not end it in time."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                return self.wait(timeout)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        return self.wait(timeout)
