"""`hgpo bench NAME`: benchmarks that print a table and write JSON."""

from __future__ import annotations

from hgpo.cli import Commands, dispatch

BENCHMARKS: Commands = {
    "skills": (
        "hgpo.bench.skills:main",
        "our SAC+HER vs stable-baselines3 on Fetch: time and env steps to a target success",
    ),
    "envs": ("hgpo.bench.envs:main", "env steps per second of the batched skill environments"),
    "sim": ("hgpo.bench.sim:main", "expert success per tabletop task and the simulator's real-time factor"),
    "graph": (
        "hgpo.bench.graph:main",
        "the launched ROS graph: topic rates, jitter, real-time factor, task time",
    ),
    "arm": (
        "hgpo.bench.arm:main",
        "the real-arm graph on fake hardware: command latency, 50 vs 500 Hz arm, e-stop to standstill",
    ),
    "faults": (
        "hgpo.bench.faults:main",
        "each node of the sim graph SIGKILLed mid-subgoal: detection, arm stop, caller, next task",
    ),
    "soak": (
        "hgpo.bench.soak:main",
        "N tasks back to back through the sim graph: success, memory growth, lost or duplicated results",
    ),
    "alfworld": ("hgpo.bench.alfworld:main", "ALFWorld commands/s, resets, expert success and episode time"),
    "planner": (
        "hgpo.bench.planner:main",
        "planner training: rollouts one at a time vs batched, updates with and without the shared prefix",
    ),
    "policy": (
        "hgpo.bench.policy:main",
        "skill policy latency (ONNX vs torch) and the controller's rate and jitter at 50 and 200 Hz",
    ),
    "workers": (
        "hgpo.bench.workers:main",
        "alfworld eval in one process vs on N Ray workers: wall time, speed-up, identical per-game results",
    ),
}


def main(argv: list[str]) -> int:
    return dispatch("hgpo bench", BENCHMARKS, argv)
