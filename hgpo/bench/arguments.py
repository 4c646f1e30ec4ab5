"""The options every benchmark shares: where its JSON goes, and the ROS domain of the graph it launches."""

from __future__ import annotations

import argparse
from pathlib import Path

MAX_DOMAIN_ID = 101
"""The highest ROS_DOMAIN_ID DDS maps onto ports on every platform."""


def domain_id(text: str) -> int:
    """An argparse type: a ROS domain id, 0..101."""
    value = int(text)
    if not 0 <= value <= MAX_DOMAIN_ID:
        raise argparse.ArgumentTypeError(f"a ROS domain id is within 0..{MAX_DOMAIN_ID}, got {value}")
    return value


def add_json_argument(parser: argparse.ArgumentParser, default: Path) -> None:
    parser.add_argument("--json", type=Path, default=default, help="where to write the figures (%(default)s)")


def add_graph_arguments(parser: argparse.ArgumentParser, json: Path, domain: int) -> None:
    """--json and --domain-id, for a benchmark that launches a ROS graph in a domain of its own."""
    add_json_argument(parser, json)
    parser.add_argument("--domain-id", type=domain_id, default=domain, help="ROS domain for the graph")
