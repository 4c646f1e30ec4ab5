"""Fixtures for tests that start real nodes: an isolated DDS domain, a launched graph, a test-side node."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS tests need the venv built by `make setup`")
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HGPO = [sys.executable, "-m", "hgpo.cli"]


@pytest.fixture(scope="session")
def ros_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment of this test run's nodes: a DDS domain of its own, logs in a temp folder."""
    domain = str(100 + os.getpid() % 100)
    env = dict(
        os.environ,
        ROS_DOMAIN_ID=domain,
        ROS_LOG_DIR=str(tmp_path_factory.mktemp("ros_log")),
        PYTHONUNBUFFERED="1",
        RCUTILS_COLORIZED_OUTPUT="0",
    )
    os.environ.update(ROS_DOMAIN_ID=domain, ROS_LOG_DIR=env["ROS_LOG_DIR"])
    return env


class Launched:
    """A launched graph; its combined output is collected for assertions."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*HGPO, "launch", *args],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
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
        self._reader.join(timeout=5)
        return code

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                return self.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
        return self.wait(timeout=20)


@pytest.fixture
def launch(ros_env: dict[str, str]) -> Iterator[Callable[..., Launched]]:
    started: list[Launched] = []

    def start(*args: str) -> Launched:
        started.append(Launched(list(args), ros_env))
        return started[-1]

    yield start
    for launched in started:
        launched.stop()


@pytest.fixture(scope="session")
def test_node(ros_env: dict[str, str]) -> Iterator[Node]:
    """An rclpy node in this process, spun on a background executor for the whole session."""
    rclpy.init(domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    node = rclpy.create_node("hgpo_test_client", namespace="hgpo")
    executor = MultiThreadedExecutor(num_threads=2)
    executor.add_node(node)
    thread = threading.Thread(target=executor.spin, daemon=True)
    thread.start()
    yield node
    executor.shutdown()
    thread.join(timeout=5)
    node.destroy_node()
    rclpy.try_shutdown()
