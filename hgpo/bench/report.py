"""What every benchmark ends with: a plain-text table on screen and the same figures as JSON on disk."""

from __future__ import annotations

import dataclasses
import json
import platform
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def _cell(value: Any) -> str:
    """Floats to three significant digits, but never in exponent form past 999 (4800 s, not 4.8e+03)."""
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 1000 else f"{value:.3g}"
    return str(value)


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[_cell(c) for c in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    lines = [
        "  ".join(
            cell.rjust(w) if i else cell.ljust(w) for i, (cell, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in cells
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(path: Path, name: str, config: Any, results: dict[str, Any]) -> None:
    """Results with what produced them: the benchmark's config (its dataclass, paths written as text, or a
    mapping) and the machine."""
    if dataclasses.is_dataclass(config) and not isinstance(config, type):
        config = {k: (str(v) if isinstance(v, Path) else v) for k, v in dataclasses.asdict(config).items()}
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "benchmark": name,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "machine": {
            "platform": platform.platform(),
            "python": platform.python_version(),
            "processor": platform.processor() or platform.machine(),
        },
        "config": config,
        "results": results,
    }
    path.write_text(json.dumps(record, indent=2) + "\n")
