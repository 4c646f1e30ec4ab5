"""`hgpo export-adapter RUN OUT`: a planner training run's last checkpoint as a LoRA adapter folder.

A run's adapter/ is its result: for BC the step of best validation loss. Validation on logged decisions does
not always rank adapters as games do, so the weights where training ended can be worth evaluating too:

    hgpo export-adapter runs/planner/<bc run> runs/planner/<bc run>-last
    hgpo alfworld eval --planner llm --adapter runs/planner/<bc run>-last
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo export-adapter", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("run", type=Path, help="run folder of hgpo train-planner (holds checkpoints/last/)")
    parser.add_argument("out", type=Path, help="adapter folder to write (new or empty), for --adapter")
    args = parser.parse_args(argv)
    from policies.planner_training.runner import export_last
    from policies.planning.backends import ModelError

    try:
        counters = export_last(args.run, args.out)
    except (FileNotFoundError, FileExistsError, ModelError, ValueError) as err:
        print(f"hgpo export-adapter: error: {err}", file=sys.stderr)
        return 2
    where = ", ".join(f"{key} {value}" for key, value in counters.items() if key in ("step", "iteration"))
    print(f"wrote {args.out}: the adapter of {args.run} at its last checkpoint ({where})")
    return 0
