"""`hgpo bench policy`: what a learned skill costs at deployment.

1. Inference latency of one action, single sample, one thread: the ONNX file under onnxruntime, the same
   actor in torch (eager, no_grad), and the whole `onnx` backend step the controller pays per tick
   (observation and goal built from a SceneState, then onnxruntime).
2. The controller node's achieved rate and jitter in the launched sim graph at each requested control
   rate (50 and 200 Hz by default), measured from its twist stamps as `hgpo bench graph` does.

Without --checkpoint the latency is measured on a fresh actor of the trainer's default size (weights do
not change the cost of an MLP); the graph runs `policy:=onnx` when shipped policies exist, else the expert.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from hgpo.bench.report import table, write_json


@dataclass(frozen=True)
class BenchPolicyConfig:
    checkpoint: Path | None = None  # an actor checkpoint; None: a fresh actor of ActorConfig's default size
    calls: int = 5000  # timed calls per runtime, after `warmup` untimed ones
    warmup: int = 200
    rates_hz: tuple[float, ...] = (50.0, 200.0)  # controller rates to run the graph at; () skips the graph
    tasks: tuple[str, ...] = ("stack",)
    model_dir: Path | None = None  # policy folder of the graph's controller; None: the shipped one
    seeds: int = 2
    json: Path = Path("runs/bench/policy.json")


def percentiles_us(call: Callable[[], object], calls: int, warmup: int) -> dict[str, float]:
    for _ in range(warmup):
        call()
    times = np.empty(calls)
    for i in range(calls):
        start = time.perf_counter()
        call()
        times[i] = time.perf_counter() - start
    times *= 1e6
    return {"p50_us": float(np.percentile(times, 50)), "p99_us": float(np.percentile(times, 99)), "n": calls}


def latency(config: BenchPolicyConfig, folder: Path) -> dict[str, dict[str, float]]:
    import torch

    from policies.control.onnx_skill_policy import OnnxSkillPolicy
    from policies.skills.checkpoint import PolicyInfo, load_actor
    from policies.skills.export import export_actor
    from policies.skills.networks import ActorConfig, GoalConditionedActor
    from policies.skills.onnx_policy import OnnxPolicy
    from sim.skill_env import GOAL_LAYOUT, OBSERVATION_LAYOUT, policy_inputs
    from sim.tabletop import Subgoal, TabletopWorld, WorldConfig, make_task

    torch.set_num_threads(1)
    if config.checkpoint is not None:
        actor, info = load_actor(config.checkpoint)
    else:
        torch.manual_seed(0)
        actor = GoalConditionedActor(ActorConfig(len(OBSERVATION_LAYOUT), len(GOAL_LAYOUT))).eval()
        layout = (tuple((n, 1) for n in OBSERVATION_LAYOUT), tuple((n, 1) for n in GOAL_LAYOUT))
        info = PolicyInfo(("reach",), layout[0], layout[1], 0.25, 0.04, "bench-fresh-actor")
    skill = info.skills[0]
    path = folder / skill / "policy.onnx"
    export_actor(actor, info, path)
    state = TabletopWorld(WorldConfig()).reset(make_task("stack", 0))
    planner_skill = {"reach": "reach", "pick_and_place": "pick", "push": "push"}[skill]
    block = state.names("block")[0]
    subgoal = Subgoal(planner_skill, (block, state.names("plate")[0]) if skill == "push" else (block,))
    _, obs, goal = policy_inputs(subgoal, state)
    onnx_policy, backend = OnnxPolicy(path), OnnxSkillPolicy(folder)
    obs_t, goal_t = torch.from_numpy(obs)[None], torch.from_numpy(goal)[None]

    def torch_call() -> object:
        with torch.no_grad():
            return actor(obs_t, goal_t)

    print(
        f"latency of {skill} ({'fresh actor' if config.checkpoint is None else config.checkpoint}), "
        f"hidden {actor.config.hidden}, {config.calls} calls each",
        flush=True,
    )
    return {
        "onnxruntime": percentiles_us(lambda: onnx_policy.act(obs, goal), config.calls, config.warmup),
        "torch": percentiles_us(torch_call, config.calls, config.warmup),
        "onnx backend tick": percentiles_us(lambda: backend.act(subgoal, state), config.calls, config.warmup),
    }


def graph_rates(config: BenchPolicyConfig, folder: Path) -> dict[str, dict]:
    from hgpo.bench.graph import BenchGraphConfig, run
    from policies.control.onnx_skill_policy import SHIPPED_MODEL_DIR

    model_dir = config.model_dir or SHIPPED_MODEL_DIR
    policy = "onnx" if any(model_dir.glob("*/policy.onnx")) else "expert"
    folder.mkdir(parents=True, exist_ok=True)
    results = {}
    for rate in config.rates_hz:
        print(
            f"graph: controller at {rate:g} Hz, policy {policy}, tasks {', '.join(config.tasks)}", flush=True
        )
        graph = BenchGraphConfig(
            tasks=config.tasks,
            seeds=config.seeds,
            json=folder / f"graph_{rate:g}hz.json",
            control_rate_hz=rate,
            launch_args=(f"policy:={policy}", f"model_dir:={model_dir.resolve()}"),
        )
        run_results = run(graph)
        results[f"{rate:g}"] = {
            "policy": policy,
            "solved": sum(e["success"] for e in run_results["episodes"]),
            "episodes": len(run_results["episodes"]),
            **run_results["controller_cmd_twist"],
        }
    return results


def main(argv: list[str]) -> int:
    default = BenchPolicyConfig()
    parser = argparse.ArgumentParser(
        prog="hgpo bench policy", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--checkpoint", type=Path, help="actor checkpoint (default: a fresh default-size actor)"
    )
    parser.add_argument("--calls", type=int, default=default.calls, help="timed calls (%(default)s)")
    parser.add_argument(
        "--rates",
        type=float,
        nargs="*",
        default=list(default.rates_hz),
        help="controller rates (Hz) to run the graph at; none: skip the graph (%(default)s)",
    )
    parser.add_argument(
        "--model-dir", type=Path, help="policy folder of the graph's controller (default: the shipped one)"
    )
    parser.add_argument("--tasks", nargs="+", default=list(default.tasks), help="graph tasks (%(default)s)")
    parser.add_argument("--seeds", type=int, default=default.seeds, help="graph seeds per task (%(default)s)")
    parser.add_argument("--json", type=Path, default=default.json, help="where to write the figures")
    args = parser.parse_args(argv)
    if args.calls < 10 or args.seeds < 1 or any(r <= 0 for r in args.rates):
        parser.error("--calls must be >= 10, --seeds >= 1 and rates positive")
    config = BenchPolicyConfig(
        checkpoint=args.checkpoint,
        calls=args.calls,
        rates_hz=tuple(args.rates),
        seeds=args.seeds,
        tasks=tuple(args.tasks),
        model_dir=args.model_dir,
        json=args.json,
    )
    config.json.parent.mkdir(parents=True, exist_ok=True)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            results: dict[str, dict] = {"latency": latency(config, Path(tmp))}
        if config.rates_hz:
            results["controller"] = graph_rates(config, config.json.parent / "policy_graph")
    except (ValueError, RuntimeError, TimeoutError) as err:  # CheckpointError, PolicyFileError: ValueError
        print(f"hgpo bench policy: error: {err}", file=sys.stderr)
        return 2
    print("\nSingle-sample inference, 1 thread")
    print(
        table(
            ["runtime", "p50 µs", "p99 µs", "calls"],
            [[name, r["p50_us"], r["p99_us"], r["n"]] for name, r in results["latency"].items()],
        )
    )
    if "controller" in results:
        print("\nController node in the sim graph (cmd_twist stamps while subgoals run)")
        print(
            table(
                [
                    "target Hz",
                    "policy",
                    "achieved Hz",
                    "jitter p50 ms",
                    "jitter p99 ms",
                    "ticks",
                    "tasks solved",
                ],
                [
                    [
                        float(rate),
                        r["policy"],
                        r["rate_hz"],
                        r["jitter_p50_ms"],
                        r["jitter_p99_ms"],
                        r["n"],
                        f"{r['solved']}/{r['episodes']}",
                    ]
                    for rate, r in results["controller"].items()
                ],
            )
        )
    write_json(config.json, "policy", config, results)
    print(f"\nwrote {config.json}")
    return 0
