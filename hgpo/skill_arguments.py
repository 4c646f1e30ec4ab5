"""--skills and --skill-dir, for the commands that execute subgoals in-process (`hgpo eval-planner`,
`hgpo tabletop-demos`): which skill policy carries them out, as the controller node would."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from policies.control import SkillPolicy


def add_skill_arguments(parser: argparse.ArgumentParser, default: str) -> None:
    parser.add_argument(
        "--skills",
        default=default,
        choices=("onnx", "expert"),
        help="the controller's skill policy: onnx (learned where --skill-dir has a policy file, else the "
        "expert, as `hgpo launch sim` runs) or expert (scripted only) (default: %(default)s)",
    )
    parser.add_argument(
        "--skill-dir", type=Path, help="skills onnx: folder of SKILL/policy.onnx files (default: the shipped)"
    )


def skill_policy(args: argparse.Namespace) -> SkillPolicy:
    """The policy the options name; ValueError or PolicyFileError for a bad folder or file."""
    from policies.control import SkillPolicyConfig, make_skill_policy

    return make_skill_policy(args.skills, SkillPolicyConfig(model_dir=args.skill_dir))
