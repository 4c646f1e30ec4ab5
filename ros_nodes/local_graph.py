"""Graphs that stay on this machine: what the benchmarks and the test suite give the nodes they start and
their own rclpy, as the launch files' `discovery_range:=LOCALHOST` gives the launched nodes.

On a shared network two runs in the same ROS_DOMAIN_ID would otherwise see each other's topics (kilted's
default discovery range is the subnet). rcl reads the range from the environment when a context starts.
"""

from __future__ import annotations

import os

LOCAL_DISCOVERY = {"ROS_AUTOMATIC_DISCOVERY_RANGE": "LOCALHOST"}


def local_graph_env(domain_id: int) -> dict[str, str]:
    """Environment of the processes of a graph in `domain_id`: discovery on this machine, live output."""
    return dict(os.environ, ROS_DOMAIN_ID=str(domain_id), PYTHONUNBUFFERED="1", **LOCAL_DISCOVERY)


def init_local_ros(domain_id: int) -> None:
    """rclpy for this process in `domain_id`, discovering only this machine's participants."""
    import rclpy

    os.environ.update(LOCAL_DISCOVERY)
    rclpy.init(domain_id=domain_id)
