"""`--set KEY=VALUE`, the one way every training and evaluation command overrides a config field that has
no flag of its own: dotted keys for nested fields, values parsed as YAML, checked by the config's loader."""

from __future__ import annotations

import argparse
from typing import Any

import yaml  # type: ignore[import-untyped]

from sim.config_mapping import nest


def add_set_argument(parser: argparse.ArgumentParser, what: str, example: str) -> None:
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"{what}: any field, dotted for nested ones, value in YAML (e.g. {example}); repeatable",
    )


def parse_sets(items: list[str], parser: argparse.ArgumentParser) -> dict[str, Any]:
    """The nested mapping that `--set` items describe; a malformed item is a usage error."""
    overrides: dict[str, Any] = {}
    for item in items:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--set {item!r}: write KEY=VALUE")
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError as err:
            parser.error(f"--set {item!r}: the value is not YAML ({err})")
        nest(overrides, key.strip(), value)
    return overrides
