"""The `hgpo` command: one entry point that dispatches to each subcommand's own module.

Subcommands are imported lazily so that, for example, training on a GPU box never imports rclpy.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Mapping

# name -> ("module:function", one-line help). Each function takes argv (list[str]) and returns an exit code.
Commands = Mapping[str, tuple[str, str]]

COMMANDS: Commands = {
    "launch": (
        "ros_nodes.launcher.cli:main",
        "run an XML launch file of launch/ (e.g. sim) or FILE.launch.xml",
    ),
    "run-task": (
        "hgpo.run_task:main",
        "run one tabletop task in-process, without ROS (--render for a video)",
    ),
    "bag": ("hgpo.bag:main", "recordings (MCAP): info (topics, counts, rates), replay (re-publish over DDS)"),
    "bench": ("hgpo.bench:main", "benchmarks: print a table and write JSON"),
    "estop": (
        "hgpo.estop:main",
        "press or release the arm's emergency stop, straight to arm_bridge (node and enclave /hgpo/operator)",
    ),
    "security": (
        "hgpo.security:main",
        "SROS2 keystore for the real graph: create-keystore (CA, governance), create-enclaves (permissions)",
    ),
    "eval-planner": (
        "hgpo.eval_planner:main",
        "a planner (llm or expert) on the tabletop tasks in-process: success, invalid outputs, latency",
    ),
    "alfworld": ("hgpo.alfworld:main", "ALFWorld: make-games, eval (success per task type), demos"),
    "tabletop-demos": (
        "hgpo.tabletop_demos:main",
        "expert planner decisions on tabletop tasks as JSONL records (the planner's own prompts) for BC",
    ),
    "train-planner": (
        "hgpo.train_planner:main",
        "train the LLM planner's LoRA adapter: bc, grpo, gigpo, hgpo or dpo on tabletop or alfworld",
    ),
    "export-adapter": (
        "hgpo.export_adapter:main",
        "write a planner training run's last checkpoint as a LoRA adapter folder (adapter/ is BC's best)",
    ),
    "train-skills": (
        "hgpo.train_skills:main",
        "train goal-conditioned skills with SAC + HER: run folders, checkpoints and a success table",
    ),
    "eval-skills": (
        "hgpo.eval_skills:main",
        "success rate of a skill policy (checkpoint or ONNX) over N episodes, optionally randomized",
    ),
    "export-onnx": (
        "hgpo.export_onnx:main",
        "export a skill actor checkpoint to an ONNX policy file, checked against torch",
    ),
}


def _usage(prog: str, commands: Commands) -> str:
    width = max(len(name) for name in commands)
    lines = [f"usage: {prog} COMMAND [ARGS ...]", "", "commands:"]
    lines += [f"  {name:<{width}}  {help_}" for name, (_, help_) in commands.items()]
    lines += ["", f"`{prog} COMMAND --help` describes each command."]
    return "\n".join(lines)


def dispatch(prog: str, commands: Commands, argv: list[str]) -> int:
    """Run `commands[argv[0]]` with the rest of argv; usage on --help, an error listing them on a typo."""
    if not argv or argv[0] in ("-h", "--help"):
        print(_usage(prog, commands))
        return 0
    name, rest = argv[0], argv[1:]
    if name not in commands:
        print(f"{prog}: unknown command {name!r}; known: {', '.join(commands)}\n", file=sys.stderr)
        print(_usage(prog, commands), file=sys.stderr)
        return 2
    module, func = commands[name][0].split(":")
    return int(getattr(importlib.import_module(module), func)(rest) or 0)


def main(argv: list[str] | None = None) -> int:
    return dispatch("hgpo", COMMANDS, sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
