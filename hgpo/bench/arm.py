"""`hgpo bench arm`: the real-arm graph with fake hardware, measured from outside as a controller sees it.

For each fake-arm rate, launches `real.launch.xml use_fake_hardware:=true run_task:=false` in a DDS domain
of its own and plays the controller: publishes `cmd_twist` at 25 Hz and reads `/joint_states` and
`scene_state`. Figures, from header stamps (one clock, one machine):

* latency: a twist's stamp -> the stamp of the first joint state that moves (bench -> arm_bridge -> fake arm,
  which applies it at its next tick);
* tracking: a 2 s straight-line twist, the end effector's achieved velocity against the command and the RMS
  deviation from a straight line; the joint-state rate achieved against the nominal one;
* e-stop: the `estop` message's stamp -> the stamp of the first joint state with every joint still.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from hgpo.bench.arguments import add_graph_arguments
from hgpo.bench.graph import _stop, interval_stats
from hgpo.bench.report import table, write_json
from ros_nodes.local_graph import init_local_ros, local_graph_env

CONTROL_PERIOD_S = 0.04  # the controller's 25 Hz
SPEED = 0.1  # m/s, the twist of every trial
STILL = 1e-9  # rad/s: the fake arm reports exact zeros when it stands


@dataclass(frozen=True)
class BenchArmConfig:
    rates: tuple[float, ...] = (50.0, 500.0)
    trials: int = 15  # latency trials per rate; e-stop trials are a third of them (at least 2)
    command_interface: str = "forward_velocity"
    domain_id: int = 1 + os.getpid() % 100
    json: Path = Path("runs/bench/arm.json")


@dataclass(frozen=True)
class JointSample:
    stamp: float
    speed: float  # largest |joint velocity| of the arm joints


class Observer:
    """The bench's node: what arrives, kept with its header stamps, and the controller's publishers."""

    def __init__(self, domain_id: int) -> None:
        import rclpy
        from geometry_msgs.msg import TwistStamped
        from hgpo_msgs.msg import SceneState
        from hgpo_msgs.srv import ResetScene
        from sensor_msgs.msg import JointState

        from ros_nodes.background_spin import BackgroundSpin
        from ros_nodes.estop import EstopSwitch

        self._rclpy, self._twist_type = rclpy, TwistStamped
        self._reset_scene_type = ResetScene
        init_local_ros(domain_id)
        self.node = rclpy.create_node("hgpo_bench_arm", namespace="hgpo")
        self.joints: list[JointSample] = []
        self.scenes: list[tuple[float, np.ndarray]] = []
        self._lock = threading.Lock()
        self.node.create_subscription(JointState, "/joint_states", self._on_joints, 1000)
        self.node.create_subscription(SceneState, "scene_state", self._on_scene, 1000)
        self.twist_pub = self.node.create_publisher(TwistStamped, "cmd_twist", 10)
        self.estop_switch = EstopSwitch(self.node)
        self.reset_scene: Any = self.node.create_client(ResetScene, "reset_scene")
        self._spin = BackgroundSpin(self.node)

    @staticmethod
    def _stamp(msg: Any) -> float:
        return msg.header.stamp.sec + msg.header.stamp.nanosec * 1e-9

    def _on_joints(self, msg: Any) -> None:
        speed = float(np.max(np.abs(msg.velocity[:7]))) if len(msg.velocity) else 0.0
        with self._lock:
            self.joints.append(JointSample(self._stamp(msg), speed))

    def _on_scene(self, msg: Any) -> None:
        p = msg.ee_pose.position
        with self._lock:
            self.scenes.append((self._stamp(msg), np.array([p.x, p.y, p.z])))

    def now(self) -> float:
        return self.node.get_clock().now().nanoseconds * 1e-9

    def wait(self, what: str, predicate: Any, timeout_s: float = 10.0) -> None:
        deadline, tick = time.monotonic() + timeout_s, threading.Event()
        while not predicate():
            if time.monotonic() > deadline:
                raise RuntimeError(f"timed out after {timeout_s} s waiting for {what}")
            tick.wait(0.01)

    def ready(self, timeout_s: float) -> None:
        self.wait(
            "the graph (arm_bridge and fake_arm)",
            lambda: (
                self.twist_pub.get_subscription_count() > 0
                and self.estop_switch.connected()
                and self.reset_scene.service_is_ready()
                and len(self.scenes) > 0
            ),
            timeout_s,
        )
        from ros_nodes.waiting import call_service

        response = call_service(
            self.reset_scene, self._reset_scene_type.Request(task="reach"), 10.0, "reset_scene"
        )
        if not response.success:
            raise RuntimeError(f"reset_scene: {response.message}")

    def stream(self, velocity: np.ndarray, seconds: float, stop: threading.Event | None = None) -> float:
        """Twists at the controller's rate for `seconds` (or until `stop`); returns the first one's stamp."""
        first, tick = None, threading.Event()
        for _ in range(round(seconds / CONTROL_PERIOD_S)):
            if stop is not None and stop.is_set():
                break
            msg = self._twist_type()
            msg.header.stamp = self.node.get_clock().now().to_msg()
            first = first if first is not None else self._stamp(msg)
            msg.twist.linear.x, msg.twist.linear.y, msg.twist.linear.z = (float(v) for v in velocity)
            self.twist_pub.publish(msg)
            tick.wait(CONTROL_PERIOD_S)
        assert first is not None
        return first

    def first_joint(self, after: float, moving: bool, timeout_s: float = 30.0) -> JointSample:
        """The first joint state stamped after `after` that moves (or, with moving=False, stands)."""
        found: list[JointSample] = []

        def look() -> bool:
            with self._lock:
                found[:] = [s for s in self.joints if s.stamp >= after and (s.speed > STILL) == moving][:1]
            return bool(found)

        # Generous: on a loaded machine this process may read a 500 Hz topic seconds late (stamps still tell).
        self.wait("a joint state that " + ("moves" if moving else "stands"), look, timeout_s)
        return found[0]

    def settle(self) -> None:
        """Until the arm has stood for a while after the last command (command timeout 0.1 s)."""
        after = self.now() + 0.2
        self.first_joint(after, moving=False)

    def estop(self, asserted: bool) -> float:
        stamp = self.now()
        self.estop_switch.set(asserted)
        return stamp

    def clear_estop(self) -> None:
        self.estop_switch.release(timeout_s=10.0)
        self.wait("the latch to clear", lambda: not self.estop_switch.monitor.latched)

    def close(self) -> None:
        self._spin.close()
        self.node.destroy_node()
        self._rclpy.try_shutdown()


def tracking(
    scenes: list[tuple[float, np.ndarray]], start: float, end: float, velocity: np.ndarray
) -> dict[str, float]:
    """Achieved end-effector velocity over [start, end] (least squares) and the path's RMS deviation."""
    window = [(t, p) for t, p in scenes if start <= t <= end]
    if len(window) < 10:
        return {"velocity_error_mm_s": float("nan"), "path_rms_mm": float("nan"), "samples": len(window)}
    t = np.array([w[0] for w in window])
    p = np.array([w[1] for w in window])
    design = np.stack([t - t[0], np.ones_like(t)], axis=1)
    coef, *_ = np.linalg.lstsq(design, p, rcond=None)
    residual = p - design @ coef
    return {
        "velocity_error_mm_s": float(np.linalg.norm(coef[0] - velocity) * 1e3),
        "path_rms_mm": float(np.sqrt(np.mean(np.sum(residual**2, axis=1))) * 1e3),
        "samples": len(window),
    }


def measure_rate(config: BenchArmConfig, rate_hz: float, log_path: Path) -> dict[str, Any]:
    env = local_graph_env(config.domain_id)
    with open(log_path, "w") as log:
        launch = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "hgpo.cli",
                "launch",
                "real",
                "use_fake_hardware:=true",
                "run_task:=false",
                f"arm_rate_hz:={rate_hz}",
                f"command_interface:={config.command_interface}",
            ],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        observer = Observer(config.domain_id)
        try:
            observer.ready(timeout_s=60.0)
            latencies = []
            for trial in range(config.trials):
                observer.settle()
                direction = SPEED * np.array([0.0, 1.0 if trial % 2 == 0 else -1.0, 0.0])
                sent = observer.stream(direction, 0.3)
                latencies.append(observer.first_joint(sent, moving=True).stamp - sent)
            observer.settle()
            velocity = np.array([0.0, SPEED, 0.0])
            start = observer.now()
            observer.stream(velocity, 2.0)
            end = observer.now()
            track = tracking(observer.scenes, start + 0.3, end, velocity)
            observer.settle()
            observer.stream(-velocity, 2.0)
            with observer._lock:
                stamps = np.array([s.stamp for s in observer.joints if start <= s.stamp <= end])
            rate = interval_stats(np.diff(stamps), rate_hz)
            stops = []
            for trial in range(max(2, config.trials // 3)):
                observer.settle()
                stop = threading.Event()
                direction = SPEED * np.array([0.0, 1.0 if trial % 2 == 0 else -1.0, 0.0])
                streamer = threading.Thread(target=observer.stream, args=(direction, 3.0, stop))
                streamer.start()
                try:
                    observer.first_joint(observer.now() + 0.2, moving=True)
                    pressed = observer.estop(True)
                    stops.append(observer.first_joint(pressed, moving=False).stamp - pressed)
                finally:
                    stop.set()
                    streamer.join()
                observer.clear_estop()
        finally:
            observer.close()
            _stop(launch)
    latency = np.array(latencies) * 1e3
    stop_ms = np.array(stops) * 1e3
    return {
        "rate_hz": rate_hz,
        "joint_states": rate,
        "latency_ms": {
            "p50": float(np.median(latency)),
            "p95": float(np.percentile(latency, 95)),
            "max": float(latency.max()),
            "n": len(latency),
        },
        "tracking": track,
        "estop_to_zero_ms": {
            "p50": float(np.median(stop_ms)),
            "max": float(stop_ms.max()),
            "n": len(stop_ms),
        },
    }


def main(argv: list[str]) -> int:
    default = BenchArmConfig()
    parser = argparse.ArgumentParser(
        prog="hgpo bench arm", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--rates",
        type=float,
        nargs="+",
        default=list(default.rates),
        metavar="HZ",
        help="fake arm rates to compare (default: %(default)s)",
    )
    parser.add_argument(
        "--trials", type=int, default=default.trials, help="latency trials per rate (default: %(default)s)"
    )
    parser.add_argument(
        "--command-interface",
        default=default.command_interface,
        choices=["servo", "forward_velocity", "forward_position"],
    )
    add_graph_arguments(parser, default.json, default.domain_id)
    args = parser.parse_args(argv)
    if args.trials < 1 or not all(r > 0 for r in args.rates):
        parser.error("--trials must be at least 1 and --rates positive")
    config = BenchArmConfig(tuple(args.rates), args.trials, args.command_interface, args.domain_id, args.json)
    config.json.parent.mkdir(parents=True, exist_ok=True)
    results = []
    for rate in config.rates:
        print(
            f"fake arm at {rate:g} Hz ({config.command_interface}), ROS domain {config.domain_id} ...",
            flush=True,
        )
        try:
            results.append(measure_rate(config, rate, config.json.with_suffix(f".{rate:g}hz.launch.log")))
        except (RuntimeError, TimeoutError) as err:  # PeerTimeoutError is a RuntimeError
            print(
                f"hgpo bench arm: error: {err} (launch log: {config.json.with_suffix('')}.*.launch.log)",
                file=sys.stderr,
            )
            return 2
    print(f"\nFake arm behind arm_bridge ({config.command_interface}); twists of {SPEED} m/s at 25 Hz")
    print(
        table(
            [
                "arm Hz",
                "joint_states Hz",
                "jitter p99 ms",
                "latency p50 ms",
                "latency p95 ms",
                "velocity err mm/s",
                "path rms mm",
                "e-stop→still p50 ms",
                "e-stop→still max ms",
            ],
            [
                [
                    r["rate_hz"],
                    r["joint_states"]["rate_hz"],
                    r["joint_states"]["jitter_p99_ms"],
                    r["latency_ms"]["p50"],
                    r["latency_ms"]["p95"],
                    r["tracking"]["velocity_error_mm_s"],
                    r["tracking"]["path_rms_mm"],
                    r["estop_to_zero_ms"]["p50"],
                    r["estop_to_zero_ms"]["max"],
                ]
                for r in results
            ],
        )
    )
    write_json(config.json, "arm", config, {"rates": results})
    print(f"\nwrote {config.json}")
    return 0
