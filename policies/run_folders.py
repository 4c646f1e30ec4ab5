"""New run folders named by the time they start, never shared: two runs started within the same second
(two evaluations launched together, two recorders) get `NAME` and `NAME-1`, not one folder they both write."""

from __future__ import annotations

import contextlib
import time
from pathlib import Path


def time_stamp() -> str:
    return time.strftime("%Y%m%d-%H%M%S")


def new_run_folder(base: Path, name: str) -> Path:
    """Create and return `base/name`, or `base/name-N` for the first N free; the mkdir is the claim."""
    for suffix in ("", *(f"-{i}" for i in range(1, 100))):
        folder = base / f"{name}{suffix}"
        try:
            folder.mkdir(parents=True)
            return folder
        except FileExistsError:
            continue
    raise ValueError(f"cannot make a new run folder {name} under {base}: 100 exist")


def release(folder: Path) -> None:
    """Give back a folder claimed by `new_run_folder` for a run that failed to start; one with files stays."""
    with contextlib.suppress(OSError):
        folder.rmdir()
