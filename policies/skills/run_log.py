"""A training run's metrics on disk: JSON lines, a CSV twin, TensorBoard scalars and a PNG of the curves.

Rows are appended as they come (`metrics.jsonl` survives a crash); the CSV and the plot are rewritten from
those rows at every checkpoint, so a resumed run keeps one continuous record.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from torch.utils.tensorboard import SummaryWriter

PLOTTED = (("eval/success_rate", "evaluation success rate"), ("eval/return", "evaluation return"))


class RunLog:
    """Appends metric rows keyed by env step; `flush` rewrites metrics.csv and curves.png.

    `plotted` names the (metric, title) curves of curves.png and `step_key` the x axis (planner training
    counts iterations, not env steps)."""

    def __init__(
        self,
        run_dir: Path,
        plotted: tuple[tuple[str, str], ...] = PLOTTED,
        step_key: str = "env_steps",
    ) -> None:
        self.run_dir = run_dir
        self.plotted = plotted
        self.step_key = step_key
        self.jsonl = run_dir / "metrics.jsonl"
        self.rows: list[dict[str, Any]] = []
        if self.jsonl.exists():
            self.rows = [json.loads(line) for line in self.jsonl.read_text().splitlines() if line.strip()]
        self.writer = SummaryWriter(str(run_dir / "tensorboard"))

    def log(self, step: int, metrics: Mapping[str, float]) -> None:
        row = {self.step_key: step, **{k: float(v) for k, v in metrics.items()}}
        self.rows.append(row)
        with self.jsonl.open("a") as out:
            out.write(json.dumps(row) + "\n")
        for name, value in metrics.items():
            self.writer.add_scalar(name, float(value), step)

    def truncate(self, step: int) -> None:
        """Drop rows logged after `step` (a resumed run restarts from its last checkpoint)."""
        self.rows = [row for row in self.rows if row[self.step_key] <= step]
        self.jsonl.write_text("".join(json.dumps(row) + "\n" for row in self.rows))

    def flush(self) -> None:
        self.writer.flush()
        columns = sorted({key for row in self.rows for key in row} - {self.step_key})
        with (self.run_dir / "metrics.csv").open("w", newline="") as out:
            writer = csv.DictWriter(out, [self.step_key, *columns])
            writer.writeheader()
            writer.writerows(self.rows)
        self._plot()

    def close(self) -> None:
        self.flush()
        self.writer.close()

    def _plot(self) -> None:
        import matplotlib

        matplotlib.use("Agg")
        from matplotlib import pyplot as plt

        figure, axes = plt.subplots(1, len(self.plotted), figsize=(5 * len(self.plotted), 3.5), squeeze=False)
        for axis, (key, title) in zip(axes[0], self.plotted, strict=True):
            points = [(row[self.step_key], row[key]) for row in self.rows if key in row]
            if points:
                steps, values = zip(*points, strict=True)
                axis.plot(steps, values, marker=".")
            axis.set_title(title)
            axis.set_xlabel(self.step_key.replace("_", " "))
            axis.grid(alpha=0.3)
        figure.tight_layout()
        figure.savefig(self.run_dir / "curves.png", dpi=80)
        plt.close(figure)
