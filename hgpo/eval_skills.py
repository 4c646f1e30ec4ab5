"""`hgpo eval-skills --policy FILE --skill NAME --episodes N [--randomize] --json OUT`: success of a policy.

`--randomize-only KNOB ...` randomizes only those knobs of the default config (the others at identity): what
one source of randomization costs a policy.

FILE is a training checkpoint (`.pt`, e.g. runs/skills/RUN/checkpoints/last.pt) or an exported ONNX policy
(`.onnx`). The policy's recorded observation and goal layouts must match the env's, so a policy is never
evaluated on inputs it was not trained on.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from policies.skills.checkpoint import CheckpointError
from policies.skills.evaluation import evaluate
from policies.skills.loaded_policy import check_layouts, load_policy
from sim.skill_env import DEFAULT_RANDOMIZATION_FILE, RandomizationConfig, make_skill_env


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo eval-skills",
        description="Evaluate a skill policy (checkpoint or ONNX file) over N episodes with deterministic "
        "actions; prints the success rate and writes it as JSON.",
    )
    parser.add_argument("--policy", required=True, type=Path, help="checkpoint (.pt) or ONNX policy (.onnx)")
    parser.add_argument("--skill", help="skill to evaluate (default: the policy's own)")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument(
        "--backend", default="mujoco", help="env backend: mujoco, mjx, gymnasium, robosuite, isaacgym"
    )
    parser.add_argument("--randomize", action="store_true", help="domain randomization (the default config)")
    parser.add_argument(
        "--randomize-only",
        nargs="+",
        metavar="KNOB",
        help="randomize only these knobs of the default config, e.g. observation_noise_m",
    )
    parser.add_argument("--num-envs", type=int, default=10, help="envs stepped as one batch")
    parser.add_argument("--seed", type=int, default=12345, help="seed of the evaluation episodes")
    parser.add_argument(
        "--max-episode-steps", type=int, help="episode length (default: the backend's own for the skill)"
    )
    parser.add_argument("--json", type=Path, help="write the result here")
    args = parser.parse_args(argv)
    if args.episodes < 1 or args.num_envs < 1:
        parser.error("--episodes and --num-envs must be >= 1")

    try:
        policy, info = load_policy(args.policy)
    except (CheckpointError, ValueError) as err:
        print(f"hgpo eval-skills: {err}", file=sys.stderr)
        return 1
    skill = args.skill or info.skills[0]
    try:
        options = {} if args.max_episode_steps is None else {"max_episode_steps": args.max_episode_steps}
        num_envs = min(args.num_envs, args.episodes)
        randomization: RandomizationConfig | Path | None = None
        if args.randomize_only:
            randomization = RandomizationConfig.load().only(*args.randomize_only)
        elif args.randomize:
            randomization = DEFAULT_RANDOMIZATION_FILE
        env = make_skill_env(
            args.backend, skill, num_envs=num_envs, seed=args.seed, randomization=randomization, **options
        )
        check_layouts(info, env, str(args.policy))
    except (ValueError, ImportError) as err:
        print(f"hgpo eval-skills: {err}", file=sys.stderr)
        return 2
    start = time.perf_counter()
    with env:
        result = evaluate(env, policy, args.episodes, seed=args.seed)
    record = {
        "policy": str(args.policy),
        "skill": skill,
        "backend": args.backend,
        "randomize": bool(args.randomize_only) or args.randomize,
        "randomized_knobs": args.randomize_only or ("all" if args.randomize else []),
        "seed": args.seed,
        "max_episode_steps": env.max_episode_steps,
        **result.as_dict(),
        "wall_time_s": round(time.perf_counter() - start, 2),
    }
    condition = "nominal"
    if args.randomize_only:
        condition = f"randomized: {', '.join(args.randomize_only)} only"
    elif args.randomize:
        condition = "randomized"
    print(
        f"{skill} on {args.backend} ({condition}): success {result.success_rate:.2f} over {result.episodes} "
        f"episodes, mean return {result.mean_return:.1f}, mean length {result.mean_length:.0f}"
    )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(record, indent=2) + "\n")
        print(f"wrote {args.json}")
    return 0
