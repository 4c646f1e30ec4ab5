"""Export a trained actor to an ONNX policy file, verified against torch before it is written.

The file is built beside the destination under a temporary name, checked by onnxruntime against the torch
actor on random inputs, and only then renamed into place: a refused or failed export leaves nothing behind
(and leaves an existing file at the destination untouched).

The exporter is torch's default (dynamo) one, which needs `onnxscript` (pinned in requirements.txt): the
TorchScript-based path is deprecated in torch 2.x and we gain nothing from it for an MLP.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
import torch
from torch import nn

from policies.skills.checkpoint import PolicyInfo
from policies.skills.onnx_contract import INPUTS, OUTPUT, metadata_from_info
from policies.skills.trained_actor import TrainedActor, load_trained_actor

PARITY_SAMPLES = 1000
PARITY_TOLERANCE = 1e-4


class ExportRefusedError(RuntimeError):
    """onnxruntime and torch disagree by more than the tolerance: nothing was written."""


class ExportGraph(nn.Module):
    """The deployment graph: (obs, goal) -> action, normalizers inside (rsl_rl's `as_onnx` in spirit)."""

    def __init__(self, actor: TrainedActor) -> None:
        super().__init__()
        self.actor = actor

    def forward(self, obs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        return self.actor(obs, goal)


@dataclass(frozen=True)
class ExportReport:
    path: Path
    info: PolicyInfo
    samples: int
    max_abs_error: float
    size_bytes: int


def parity_inputs(actor: TrainedActor, samples: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Random float32 (obs, goal) spread over ±3 standard deviations of the actor's own statistics,
    so the check covers the range the policy sees and the normalizers' clipping."""
    rng = np.random.default_rng(seed)
    obs_mean, obs_std, goal_mean, goal_std = (t.detach().numpy() for t in actor.input_statistics())
    out = []
    for mean, std in ((obs_mean, obs_std), (goal_mean, goal_std)):
        out.append((mean + 3.0 * std * rng.standard_normal((samples, mean.shape[0]))).astype(np.float32))
    return out[0], out[1]


def max_parity_error(path: Path, actor: TrainedActor, samples: int = PARITY_SAMPLES, seed: int = 0) -> float:
    """max |onnxruntime − torch| of the actions over `samples` random inputs, batched and one at a time."""
    obs, goal = parity_inputs(actor, samples, seed)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    with torch.no_grad():
        expected = actor(torch.from_numpy(obs), torch.from_numpy(goal)).numpy()
    batched = session.run([OUTPUT], {INPUTS[0]: obs, INPUTS[1]: goal})[0]
    single = session.run([OUTPUT], {INPUTS[0]: obs[:1], INPUTS[1]: goal[:1]})[0]
    return float(max(np.abs(batched - expected).max(), np.abs(single - expected[:1]).max()))


def export_actor(
    actor: TrainedActor,
    info: PolicyInfo,
    out: str | os.PathLike[str],
    samples: int = PARITY_SAMPLES,
    tolerance: float = PARITY_TOLERANCE,
    seed: int = 0,
) -> ExportReport:
    """Write `out` (a policy file of the contract in `onnx_contract`) if parity holds; else raise
    ExportRefusedError and write nothing."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    actor = actor.eval()
    fd, tmp_name = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".tmp", dir=out.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        batch = torch.export.Dim("batch", min=1)
        obs_mean, _, goal_mean, _ = actor.input_statistics()
        example = (torch.zeros(2, obs_mean.shape[0]), torch.zeros(2, goal_mean.shape[0]))
        with _quiet_exporter():
            torch.onnx.export(
                ExportGraph(actor).eval(),
                example,
                str(tmp),
                input_names=list(INPUTS),
                output_names=[OUTPUT],
                dynamic_shapes={"obs": {0: batch}, "goal": {0: batch}},
                external_data=False,
                dynamo=True,
                verbose=False,
            )
        model = onnx.load(str(tmp))
        onnx.helper.set_model_props(model, metadata_from_info(info))
        onnx.checker.check_model(model)
        onnx.save(model, str(tmp))
        error = max_parity_error(tmp, actor, samples, seed)
        if not error <= tolerance:
            raise ExportRefusedError(
                f"refused to write {out}: max |onnxruntime - torch| = {error:.3g} over {samples} samples "
                f"exceeds {tolerance:g}"
            )
        tmp.chmod(0o644)  # mkstemp makes it private; a policy file is an ordinary file
        tmp.replace(out)
    finally:
        tmp.unlink(missing_ok=True)
    return ExportReport(out, info, samples, error, out.stat().st_size)


@contextlib.contextmanager
def _quiet_exporter() -> Iterator[None]:
    """Silence the exporter's chatter that says nothing about our graph (absent torchvision ops, pytree
    deprecations, axis renaming); its errors still raise."""
    logger = logging.getLogger("torch.onnx")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            warnings.simplefilter("ignore", FutureWarning)
            yield
    finally:
        logger.setLevel(level)


def export_checkpoint(
    checkpoint: str | os.PathLike[str],
    out: str | os.PathLike[str],
    samples: int = PARITY_SAMPLES,
    tolerance: float = PARITY_TOLERANCE,
    seed: int = 0,
) -> ExportReport:
    """`hgpo export-onnx`: the actor of any train-skills checkpoint (SAC or PPO), then export_actor."""
    actor, info = load_trained_actor(checkpoint)
    return export_actor(actor, info, out, samples, tolerance, seed)
