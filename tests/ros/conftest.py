"""Fixtures for tests that start real nodes: an isolated DDS domain, a launched graph, a test-side node."""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS tests need the venv built by `make setup`")
from rclpy.action import ActionClient  # noqa: E402
from rclpy.client import Client  # noqa: E402
from rclpy.executors import MultiThreadedExecutor  # noqa: E402
from rclpy.node import Node  # noqa: E402
from rclpy.publisher import Publisher  # noqa: E402
from rclpy.subscription import Subscription  # noqa: E402

from tests.processes import Captured  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HGPO = [sys.executable, "-m", "hgpo.cli"]


@pytest.fixture(scope="session")
def ros_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment of this test run's nodes: a DDS domain of its own, logs in a temp folder."""
    # 1..50 here and 51..100 for whole-graph tests: ROS advises domains <= 101 on Linux (ports of higher
    # ones can fall into the ephemeral range).
    domain = str(1 + os.getpid() % 50)
    env = dict(
        os.environ,
        ROS_DOMAIN_ID=domain,
        ROS_LOG_DIR=str(tmp_path_factory.mktemp("ros_log")),
        PYTHONUNBUFFERED="1",
        RCUTILS_COLORIZED_OUTPUT="0",
    )
    os.environ.update(ROS_DOMAIN_ID=domain, ROS_LOG_DIR=env["ROS_LOG_DIR"])
    return env


class Launched(Captured):
    """`hgpo launch ARGS` in the background."""

    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        super().__init__([*HGPO, "launch", *args], cwd=REPO, env=env)


@pytest.fixture
def launch(ros_env: dict[str, str]) -> Iterator[Callable[..., Launched]]:
    """Whole graphs a test launches, in a DDS domain apart from the session's so that they never meet the
    module-wide graph under the same names."""
    started: list[Launched] = []
    env = dict(ros_env, ROS_DOMAIN_ID=str(int(ros_env["ROS_DOMAIN_ID"]) + 50))

    def start(*args: str) -> Launched:
        started.append(Launched(list(args), env))
        return started[-1]

    yield start
    for launched in started:
        launched.stop(timeout=20)


@pytest.fixture(scope="session")
def session_node(ros_env: dict[str, str]) -> Iterator[Node]:
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


@pytest.fixture
def test_node(session_node: Node) -> Iterator[Node]:
    """The session's node; what a test creates on it is destroyed after the test, so that subscriptions
    (scenes at 100 Hz) and action clients do not pile up and slow its executor down for later tests."""
    before = {id(e) for e in _entities(session_node)}
    yield session_node
    for entity in _entities(session_node):
        if id(entity) in before:
            continue
        if isinstance(entity, ActionClient):
            entity.destroy()
        elif isinstance(entity, Subscription):
            session_node.destroy_subscription(entity)
        elif isinstance(entity, Publisher):
            session_node.destroy_publisher(entity)
        elif isinstance(entity, Client):
            session_node.destroy_client(entity)


def _entities(node: Node) -> list[object]:
    return [*node.subscriptions, *node.publishers, *node.clients, *node.waitables]
