"""--workers and --ray-address, for the commands that play many independent episodes (`hgpo eval-planner`,
`hgpo alfworld eval|demos`, `hgpo tabletop-demos`, the rollouts of `hgpo train-planner`): the episodes
sharded over Ray actors on this machine or a cluster (policies/sharding.py). Without either option nothing
imports Ray."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policies.sharding import Workers

SAME_OUTPUT = (
    "each with its own world and planner (a model copy each: mind the memory); the output is the one this "
    "command writes without workers"
)
"""What --workers promises on the evaluation and demonstration commands."""


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be >= 1, got {value}")
    return value


def add_worker_arguments(parser: argparse.ArgumentParser, promise: str = SAME_OUTPUT) -> None:
    """`promise`: what the workers do and keep, for --workers' help."""
    parser.add_argument(
        "--workers",
        type=_positive,
        metavar="N",
        help=f"play the episodes in N Ray worker processes, {promise} (default: in this process, without "
        "Ray; with --ray-address: one per CPU of the cluster)",
    )
    parser.add_argument(
        "--ray-address",
        metavar="ADDR",
        help="run the workers on this Ray cluster (`ray start --head` prints its address, e.g. "
        "10.0.0.5:6379; every node needs this project installed) instead of this machine",
    )


def workers_from(args: argparse.Namespace) -> Workers | None:
    """The options as a `Workers`, or None (in this process) when neither was given."""
    if args.workers is None and args.ray_address is None:
        return None
    from policies.sharding import Workers

    return Workers(count=args.workers, address=args.ray_address)
