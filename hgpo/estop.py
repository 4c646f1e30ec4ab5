"""`hgpo estop press|release`: the operator's e-stop, straight to arm_bridge (as node /hgpo/operator, enclave
/hgpo/operator), so that stopping the arm never depends on the planner or the controller being alive."""

from __future__ import annotations

import argparse
import os
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

OPERATOR_ENCLAVE = "/hgpo/operator"


def _until(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline, tick = time.monotonic() + timeout_s, threading.Event()
    while not predicate():
        if time.monotonic() >= deadline:
            return False
        tick.wait(0.02)
    return True


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo estop",
        description="Press or release the arm's emergency stop on /hgpo/arm_bridge, as node /hgpo/operator. "
        "press: true on /hgpo/estop, then waits until the bridge reports the latch on /hgpo/estop_state. "
        "release: false on /hgpo/estop, then /hgpo/reset_estop until the bridge accepts it. Runs in "
        "$ROS_DOMAIN_ID, as the graph does.",
    )
    parser.add_argument("action", choices=("press", "release"), help="stop the arm, or release the stop")
    parser.add_argument(
        "--keystore",
        type=Path,
        help="a graph launched with security:=true: join it with the operator enclave of this SROS2 keystore",
    )
    parser.add_argument(
        "--timeout", type=float, default=10.0, help="seconds to wait for the bridge (%(default)s)"
    )
    args = parser.parse_args(argv)
    if args.keystore is not None:
        os.environ.update(
            ROS_SECURITY_ENABLE="true",
            ROS_SECURITY_STRATEGY="Enforce",
            ROS_SECURITY_KEYSTORE=str(args.keystore),
        )
    import rclpy

    from ros_nodes.background_spin import BackgroundSpin
    from ros_nodes.estop import EstopSwitch
    from ros_nodes.waiting import PeerTimeoutError

    rclpy.init(args=["hgpo_estop", "--ros-args", "--enclave", OPERATOR_ENCLAVE])
    node = rclpy.create_node("operator", namespace="hgpo")
    spin = BackgroundSpin(node)
    try:
        switch = EstopSwitch(node)
        if not _until(switch.connected, args.timeout):
            print(
                f"hgpo estop: error: no arm_bridge on /hgpo/estop within {args.timeout:g} s "
                f"(ROS_DOMAIN_ID={os.environ.get('ROS_DOMAIN_ID', '0')})",
                file=sys.stderr,
            )
            return 1
        if args.action == "press":
            switch.set(True)
            if not _until(lambda: switch.monitor.latched, args.timeout):
                print("hgpo estop: error: the bridge did not report the latch", file=sys.stderr)
                return 1
            print("emergency stop latched by /hgpo/arm_bridge: the arm holds still")
            return 0
        try:
            response = switch.release(args.timeout)
        except PeerTimeoutError as error:
            print(f"hgpo estop: error: {error}", file=sys.stderr)
            return 1
        if not response.success or not _until(lambda: not switch.monitor.latched, args.timeout):
            print(f"hgpo estop: error: not released: {response.message}", file=sys.stderr)
            return 1
        print(f"emergency stop released: {response.message}")
        return 0
    finally:
        spin.close()
        node.destroy_node()
        rclpy.try_shutdown()
