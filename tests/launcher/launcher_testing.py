"""Helpers of the launcher tests: a throwaway ament prefix whose `demo_pkg` executables are Python scripts."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

DEMO_NODE = Path(__file__).with_name("demo_node.py")
REPO = Path(__file__).resolve().parents[2]
TIMEOUT_S = 20.0


class Demo:
    """An ament prefix laid out as colcon installs (share/ament_index, lib/<pkg>/<exec>) plus helpers."""

    def __init__(self, root: Path) -> None:
        self.prefix = root / "prefix"
        self.pids = root / "pids"  # DEMO_DIR of the demo nodes
        self.pids.mkdir()
        self.add_package("demo_pkg")
        self.add_executable("demo_pkg", "demo_node", f"#!{sys.executable}\n{DEMO_NODE.read_text()}")

    def add_package(self, package: str) -> Path:
        marker = self.prefix / "share" / "ament_index" / "resource_index" / "packages" / package
        marker.parent.mkdir(parents=True, exist_ok=True)
        marker.touch()
        share = self.prefix / "share" / package
        share.mkdir(parents=True, exist_ok=True)
        return share

    def add_executable(self, package: str, name: str, text: str, mode: int = 0o755) -> Path:
        path = self.prefix / "lib" / package / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        path.chmod(mode)
        return path

    def write(self, name: str, text: str) -> Path:
        path = self.prefix.parent / name
        path.write_text(text)
        return path

    def launch_file(self, body: str, name: str = "test.launch.xml") -> Path:
        return self.write(name, f'<?xml version="1.0"?>\n<launch>\n{body}\n</launch>\n')

    def pid(self, node: str) -> int:
        """The pid a demo node wrote once it was up (it handles signals from then on)."""
        path = self.pids / f"{node}.pid"
        wait_until(path.exists, f"{node} to start")
        return int(path.read_text())


def wait_until(condition: Callable[[], bool], what: str, timeout: float = TIMEOUT_S) -> None:
    """Poll `condition` until it holds; fail the test after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(0.02)


def alive(pid: int) -> bool:
    """True while `pid` runs; a zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"
