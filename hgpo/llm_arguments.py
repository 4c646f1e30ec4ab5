"""The LLM planner's options for commands that build one beside another planner (`hgpo alfworld eval`,
the DAgger learner of `hgpo alfworld demos` and `hgpo tabletop-demos`; `hgpo eval-planner` builds on
`llm_config_from`): the planner node's YAML, then --model/--adapter/--threads and --set over it, so a
command plans as the node does unless told otherwise."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml  # type: ignore[import-untyped]

from hgpo.overrides import add_set_argument, parse_sets

if TYPE_CHECKING:
    from policies.planning import LLMConfig


def add_llm_arguments(parser: argparse.ArgumentParser, which: str, config: Path) -> None:
    """--config (the node's parameter file, default `config`), --model, --adapter, --threads and --set."""
    parser.add_argument(
        "--config",
        type=Path,
        default=config,
        help=f"planner node parameters whose `llm` block configures {which} (%(default)s)",
    )
    parser.add_argument("--model", help=f"{which}: base model (alias, folder or cached hub name)")
    parser.add_argument(
        "--adapter", help=f"{which}: LoRA adapter folder, e.g. from `hgpo train-planner` (its adapter/)"
    )
    parser.add_argument("--threads", type=int, help=f"{which}: torch threads")
    add_set_argument(parser, f"the `llm` settings of {which}", "max_new_tokens=48")


def llm_settings_from_yaml(path: Path) -> dict[str, Any]:
    """The `llm` block of the planner node's parameter file (the node's own settings, one source)."""
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as err:
        raise ValueError(f"cannot read planner settings from {path}: {err}") from err
    for node in data.values():
        if isinstance(node, dict) and isinstance(node.get("ros__parameters"), dict):
            llm = node["ros__parameters"].get("llm", {})
            if not isinstance(llm, dict):
                raise ValueError(f"{path}: `llm` must be a mapping of LLM planner settings")
            return llm
    raise ValueError(f"{path} has no `<node>: ros__parameters:` block")


def llm_config_from(config: Path, flags: dict[str, Any], sets: dict[str, Any]) -> LLMConfig:
    """The `llm` block of `config`, then the flags that were given (None: not given), then --set; checked
    by `LLMConfig.from_mapping` (ValueError naming a bad or unknown setting)."""
    from policies.planning import LLMConfig

    given = {name: value for name, value in flags.items() if value is not None}
    return LLMConfig.from_mapping({**llm_settings_from_yaml(config), **given, **sets})


def llm_config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> LLMConfig:
    """The options of `add_llm_arguments` as one config; a bad setting is a usage error."""
    flags = {name: getattr(args, name) for name in ("model", "adapter", "threads")}
    try:
        return llm_config_from(args.config, flags, parse_sets(args.set, parser))
    except ValueError as err:
        parser.error(str(err))
