"""The LLM planner's options for commands that build one beside another planner (`hgpo alfworld eval`,
the DAgger learner of `hgpo alfworld demos` and `hgpo tabletop-demos`): the planner node's YAML, then
--model/--adapter/--threads over it, so a command plans as the node does unless told otherwise."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policies.planning import LLMConfig


def add_llm_arguments(parser: argparse.ArgumentParser, which: str, config: Path) -> None:
    """--config (the node's parameter file, default `config`), --model, --adapter and --threads."""
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


def llm_config(args: argparse.Namespace, parser: argparse.ArgumentParser) -> LLMConfig:
    """The YAML's `llm` block with the command line over it; a bad setting is a usage error."""
    from hgpo.eval_planner import llm_settings_from_yaml
    from policies.planning import LLMConfig

    given = {name: getattr(args, name) for name in ("model", "adapter", "threads")}
    try:
        settings = llm_settings_from_yaml(args.config)
        return LLMConfig.from_mapping({**settings, **{k: v for k, v in given.items() if v is not None}})
    except ValueError as err:
        parser.error(str(err))
