"""A trainer's checkpoint on disk: `last.pt` (exportable: actor entries plus SAC state) and `replay.npz`.

`last.pt` carries the three entries `policies.skills.checkpoint.load_actor` reads (actor weights with
normalizers, its constructor arguments, and PolicyInfo: skill, layouts, control period, run id), so
`hgpo export-onnx runs/.../checkpoints/last.pt` works on it as it is. The replay buffers go beside it so a
resumed run continues with the experience it had. Both are written to a temporary name and renamed, so an
interrupted save leaves the previous checkpoint intact.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from policies.skills.checkpoint import CheckpointError, read_checkpoint
from policies.skills.her_buffer import HerReplayBuffer

CHECKPOINT_FORMAT = "hgpo.skills.sac/1"
"""Bumped whenever the keys below change meaning, so an old file fails loudly."""
TRAINING_KEYS = ("sac", "env_steps", "updates", "train_time_s", "config", "torch_rng", "rng")


def _write_buffers(path: Path, buffers: dict[str, HerReplayBuffer]) -> None:
    arrays: dict[str, np.ndarray] = {}
    for prefix, buffer in buffers.items():
        for name, value in buffer.state_dict().items():
            arrays[f"{prefix}/{name}"] = np.array(json.dumps(value)) if name == "rng" else np.asarray(value)
    tmp = path.with_name(f".{path.name}.tmp.npz")
    np.savez(tmp, **arrays)
    tmp.replace(path)


def save_training_checkpoint(
    path: Path, state: dict[str, Any], buffer: HerReplayBuffer, demos: HerReplayBuffer | None
) -> None:
    """Write `state` to `path` and the replay buffers to `replay.npz` beside it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    buffers = {"replay": buffer, **({"demos": demos} if demos is not None else {})}
    _write_buffers(path.with_name("replay.npz"), buffers)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save(state, tmp)
    tmp.replace(path)


def _read_buffer(arrays: Any, prefix: str) -> dict[str, Any]:
    state: dict[str, Any] = {}
    for key in arrays.files:
        if key.startswith(f"{prefix}/"):
            name, value = key.split("/", 1)[1], arrays[key]
            state[name] = json.loads(str(value)) if name == "rng" else value
    return state


def load_training_checkpoint(
    path: Path,
) -> tuple[dict[str, Any], dict[str, Any] | None, dict[str, Any] | None]:
    """(state, replay buffer state or None, demo buffer state or None); CheckpointError says what is wrong."""
    state = read_checkpoint(path, "hgpo train-skills writes checkpoints/last.pt")
    if not isinstance(state, dict) or state.get("format") != CHECKPOINT_FORMAT:
        found = state.get("format") if isinstance(state, dict) else type(state).__name__
        raise CheckpointError(
            f"{path} is not a SAC training checkpoint of format {CHECKPOINT_FORMAT} (found {found!r}); "
            "resume only runs written by this version of hgpo train-skills"
        )
    missing = [key for key in TRAINING_KEYS if key not in state]
    if missing:
        raise CheckpointError(f"{path}: training checkpoint lacks {', '.join(missing)}")
    replay = path.with_name("replay.npz")
    if not replay.exists():
        return state, None, None
    try:
        with np.load(replay) as arrays:
            buffer = _read_buffer(arrays, "replay")
            demos = _read_buffer(arrays, "demos") or None
    except (OSError, ValueError, KeyError) as err:
        raise CheckpointError(f"replay buffer {replay} is unreadable: {err}") from err
    return state, buffer, demos
