"""`hgpo export-onnx CHECKPOINT OUT.onnx`: a trained skill actor to the ONNX file the controller runs."""

from __future__ import annotations

import argparse
import sys

from policies.skills.checkpoint import CheckpointError
from policies.skills.export import PARITY_SAMPLES, PARITY_TOLERANCE, ExportRefusedError, export_checkpoint
from policies.skills.onnx_contract import CONTRACT, CONTRACT_VERSION


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(
        prog="hgpo export-onnx",
        description=(
            "Export a skill checkpoint (from hgpo train-skills, SAC or PPO) to an ONNX policy file: inputs "
            "obs and goal, output action, normalization inside, the training contract in its metadata. The "
            "file is written only when onnxruntime matches torch within the tolerance."
        ),
    )
    parser.add_argument("checkpoint", help="checkpoint (.pt) written by hgpo train-skills")
    parser.add_argument("out", help="policy file to write, e.g. policies/pretrained/skills/reach/policy.onnx")
    parser.add_argument(
        "--samples", type=int, default=PARITY_SAMPLES, help="random inputs of the parity check (%(default)s)"
    )
    parser.add_argument(
        "--tolerance",
        type=float,
        default=PARITY_TOLERANCE,
        help="largest max |onnxruntime - torch| accepted (%(default)s)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the parity inputs (%(default)s)")
    args = parser.parse_args(argv)
    if args.samples < 1 or not args.tolerance >= 0:
        parser.error("--samples must be >= 1 and --tolerance >= 0")
    try:
        report = export_checkpoint(args.checkpoint, args.out, args.samples, args.tolerance, args.seed)
    except (CheckpointError, ExportRefusedError) as err:
        print(f"hgpo export-onnx: {err}", file=sys.stderr)
        return 1
    info = report.info
    print(
        f"wrote {report.path} ({report.size_bytes / 1024:.1f} KiB), contract {CONTRACT} v{CONTRACT_VERSION}"
    )
    print(f"  skills        {', '.join(info.skills)}")
    print(f"  obs           {', '.join(f'{name}[{size}]' for name, size in info.obs_layout)}")
    print(f"  goal          {', '.join(f'{name}[{size}]' for name, size in info.goal_layout)}")
    print(f"  action scale  {info.action_scale} m/s, control period {info.control_period_s} s")
    print(f"  training run  {info.run_id or '(unnamed)'}")
    error = f"{report.max_abs_error:.2e} over {report.samples} samples"
    print(f"  parity        max |onnxruntime - torch| = {error}")
    return 0
