"""Fixtures for tests that start real nodes: an isolated DDS domain, a launched graph, a test-side node."""

from __future__ import annotations

import itertools
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

rclpy = pytest.importorskip("rclpy", reason="ROS tests need the venv built by `make setup`")
from rclpy.node import Node  # noqa: E402
from std_msgs.msg import Float64  # noqa: E402

from ros_nodes.background_spin import BackgroundSpin  # noqa: E402
from ros_nodes.local_graph import LOCAL_DISCOVERY  # noqa: E402
from tests.processes import Captured  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
HGPO = [sys.executable, "-m", "hgpo.cli"]
_TEST_NODES = itertools.count()


@pytest.fixture(scope="session")
def ros_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Environment of this test run's nodes and of its own rclpy: a DDS domain of its own, discovery kept on
    this machine (as the launch files keep theirs), logs in a temp folder."""
    # 1..50 here and 51..100 for whole-graph tests: ROS advises domains <= 101 on Linux (ports of higher
    # ones can fall into the ephemeral range).
    domain = str(1 + os.getpid() % 50)
    env = dict(
        os.environ,
        ROS_DOMAIN_ID=domain,
        ROS_LOG_DIR=str(tmp_path_factory.mktemp("ros_log")),
        PYTHONUNBUFFERED="1",
        PYTHONFAULTHANDLER="1",  # a node that crashes in native code shows where
        RCUTILS_COLORIZED_OUTPUT="0",
        **LOCAL_DISCOVERY,
    )
    os.environ.update(ROS_DOMAIN_ID=domain, ROS_LOG_DIR=env["ROS_LOG_DIR"], **LOCAL_DISCOVERY)
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
def ros_context(ros_env: dict[str, str]) -> Iterator[None]:
    """rclpy initialized once for the session, in the session's DDS domain."""
    rclpy.init(domain_id=int(ros_env["ROS_DOMAIN_ID"]))
    yield
    rclpy.try_shutdown()


@pytest.fixture
def test_node(ros_context: None) -> Iterator[Node]:
    """A node of the test's own, spun in the background; destroyed, with all the test made on it, only after
    its executor stopped, so that nothing piles up for later tests and no teardown races a spin."""
    node = rclpy.create_node(f"hgpo_test_{next(_TEST_NODES)}", namespace="hgpo")
    spin = BackgroundSpin(node)
    yield node
    assert spin.alive, "the test node's executor died during the test"
    spin.close()
    node.destroy_node()


@pytest.fixture
def chatter(ros_context: None) -> Iterator[str]:
    """The name of a topic a 200 Hz publisher in this process talks on, so that a listener's wait sets are
    always busy."""
    node = rclpy.create_node("talker", namespace="chatter")
    pub = node.create_publisher(Float64, "chatter", 10)
    node.create_timer(0.005, lambda: pub.publish(Float64(data=1.0)))
    spin = BackgroundSpin(node)
    yield "/chatter/chatter"
    spin.close()
    node.destroy_node()


@pytest.fixture
def start_node(ros_env: dict[str, str]) -> Iterator[Callable[..., Captured]]:
    """Single nodes started straight from their installed executables, in a namespace of a test's own."""
    started: list[Captured] = []

    def start(executable: str, namespace: str, *params: str) -> Captured:
        args = [
            os.path.join(sys.prefix, "lib", "hgpo", executable),
            "--ros-args",
            "-r",
            f"__ns:=/{namespace}",
        ]
        for param in params:
            args += ["-p", param]
        started.append(Captured(args, cwd=REPO, env=ros_env))
        return started[-1]

    yield start
    for proc in started:
        proc.stop(timeout=20)
