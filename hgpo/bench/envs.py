"""`hgpo bench envs`: env steps per second of the batched skill environments by skill, batch size, threads.

Random actions, auto-resets included (they are part of every training run), randomization as asked.
One env step is one control step of one environment (25 Hz, 20 physics steps on the tabletop).
`--expert` adds the physics check beside each speed figure: one episode per env played by the scripted
expert (computed on the host from each env's true scene, so slow beyond a few thousand envs), whose success
rate falls when resting blocks drift or grasps slip.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from hgpo.bench.arguments import add_json_argument
from hgpo.bench.report import table, write_json
from sim.skill_env import BACKENDS, DEFAULT_RANDOMIZATION_FILE, RandomizationConfig, make_skill_env


@dataclass(frozen=True)
class BenchEnvsConfig:
    backend: str = "mujoco"
    skills: tuple[str, ...] = ("reach", "push", "pick_and_place")
    num_envs: tuple[int, ...] = (1, 4, 16)
    threads: tuple[int, ...] = (0,)  # 0: one per available core (the env's default)
    seconds: float = 5.0  # measured wall time per configuration, after a warm-up step
    randomize: bool = False  # the shipped randomization.yaml
    expert: bool = False  # the physics check: one expert episode per env after the speed measurement
    json: Path = Path("runs/bench/envs.json")


def measure(config: BenchEnvsConfig, skill: str, num_envs: int, threads: int) -> dict[str, Any]:
    options: dict[str, Any] = {"num_threads": threads} if config.backend == "mujoco" else {}
    randomization = RandomizationConfig.load(DEFAULT_RANDOMIZATION_FILE) if config.randomize else None
    rng = np.random.default_rng(0)
    with make_skill_env(
        config.backend, skill, num_envs, seed=0, randomization=randomization, **options
    ) as env:
        env.reset()
        env.step(rng.uniform(-1, 1, (num_envs, env.action_dim)))
        steps, resets = 0, 0
        started = time.perf_counter()
        while (elapsed := time.perf_counter() - started) < config.seconds:
            result = env.step(rng.uniform(-1, 1, (num_envs, env.action_dim)))
            steps += num_envs
            resets += int(result.truncated.sum() + result.terminated.sum())
        used = getattr(env, "num_threads", 1)  # the mujoco backend says how many it used
        check = expert_check(env) if config.expert else {}
    return {
        "skill": skill,
        "num_envs": num_envs,
        "threads": int(used),
        "env_steps": steps,
        "episodes_ended": resets,
        "seconds": elapsed,
        "env_steps_per_s": steps / elapsed,
        "real_time_factor": steps * env.control_dt / elapsed,
        **check,
    }


def expert_check(env: Any) -> dict[str, Any]:
    """One episode per env from a fresh reset, actions by the scripted expert: its success rate."""
    if not hasattr(env, "expert_actions"):
        raise ValueError(f"the {env.backend} backend has no scripted expert to check its physics with")
    env.reset(seed=1)
    for _ in range(env.max_episode_steps):
        result = env.step(env.expert_actions())
    ended = result.truncated | result.terminated
    return {
        "expert_episodes": int(ended.sum()),
        "expert_success": float(result.info["success"][ended].mean()),
    }


def _parse(argv: list[str]) -> BenchEnvsConfig:
    default = BenchEnvsConfig()
    parser = argparse.ArgumentParser(prog="hgpo bench envs", description=__doc__)
    parser.add_argument("--backend", choices=list(BACKENDS), default=default.backend, help="(%(default)s)")
    parser.add_argument(
        "--skills", nargs="+", default=list(default.skills), metavar="SKILL", help="(%(default)s)"
    )
    parser.add_argument(
        "--num-envs", nargs="+", type=int, default=list(default.num_envs), metavar="N", help="(%(default)s)"
    )
    parser.add_argument(
        "--threads",
        nargs="+",
        type=int,
        default=list(default.threads),
        metavar="T",
        help="mujoco stepping threads; 0 = one per core (%(default)s)",
    )
    parser.add_argument(
        "--seconds", type=float, default=default.seconds, help="wall time per configuration (%(default)s)"
    )
    parser.add_argument("--randomize", action="store_true", help="use the shipped randomization.yaml")
    parser.add_argument(
        "--expert",
        action="store_true",
        help="physics check: then one episode per env by the scripted expert (its success rate is reported)",
    )
    add_json_argument(parser, default.json)
    args = parser.parse_args(argv)
    known = BACKENDS[args.backend].skills
    for skill in args.skills:
        if skill not in known:
            parser.error(f"backend {args.backend!r} has no skill {skill!r}; known: {', '.join(known)}")
    if min(args.num_envs) < 1 or min(args.threads) < 0 or args.seconds <= 0:
        parser.error("--num-envs must be >= 1, --threads >= 0 and --seconds > 0")
    return BenchEnvsConfig(
        backend=args.backend,
        skills=tuple(args.skills),
        num_envs=tuple(args.num_envs),
        threads=tuple(args.threads),
        seconds=args.seconds,
        randomize=args.randomize,
        expert=args.expert,
        json=args.json,
    )


def main(argv: list[str]) -> int:
    config = _parse(argv)
    cases = [(s, n, t) for s in config.skills for n in config.num_envs for t in config.threads]
    results = [measure(config, *case) for case in tqdm(cases, desc="bench envs", unit="case", leave=False)]
    print(
        f"\n{config.backend} skill environments, random actions, "
        f"{'randomized' if config.randomize else 'nominal'}, {config.seconds:g} s per case"
    )
    check = ["expert success"] if config.expert else []
    print(
        table(
            ["skill", "num_envs", "threads", "env steps/s", "real-time factor", *check],
            [
                [r["skill"], r["num_envs"], r["threads"], round(r["env_steps_per_s"]), r["real_time_factor"]]
                + ([f"{r['expert_success']:.2f} of {r['expert_episodes']}"] if config.expert else [])
                for r in results
            ],
        )
    )
    write_json(config.json, "envs", config, {"cases": results})
    print(f"\nwrote {config.json}")
    return 0
