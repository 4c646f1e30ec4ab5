"""The number format a local model computes in: `float32`, `bfloat16`, or `auto` (bfloat16 where the device
multiplies it natively, float32 elsewhere).

A CPU with AMX or AVX512-BF16 (Intel Sapphire Rapids and later, AMD Zen 4 and later) prefills a prompt in
bfloat16 faster than in float32, but torch runs its single-token passes slower (docs/planner_latency.md);
a CPU without them emulates bfloat16 and is slower throughout, so `auto` decides per machine.
"""

from __future__ import annotations

import torch

from policies.planning.llm_config import DTYPES


def native_bfloat16(device: torch.device) -> bool:
    """Whether `device` multiplies bfloat16 matrices in hardware."""
    if device.type == "cuda":
        return bool(torch.cuda.is_bf16_supported())
    if device.type != "cpu":
        return False
    # torch.cpu's probes are private (torch 2.13) but the only portable ones; a torch without them says no.
    probes = ("_is_amx_tile_supported", "_is_avx512_bf16_supported")
    return any(bool(getattr(torch.cpu, probe, lambda: False)()) for probe in probes)


def resolve_dtype(name: str, device: str | torch.device) -> torch.dtype:
    """The torch dtype that `name` means on `device` (ValueError for an unknown name)."""
    if name not in DTYPES:
        raise ValueError(f"unknown dtype {name!r}; known: {', '.join(DTYPES)}")
    if name == "auto":
        return torch.bfloat16 if native_bfloat16(torch.device(device)) else torch.float32
    return torch.float32 if name == "float32" else torch.bfloat16
