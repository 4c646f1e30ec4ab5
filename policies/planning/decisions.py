"""Planner decisions as self-contained records — prompt, raw outputs, parsed subgoal, result, latency — kept
in memory for metrics and appended to a run folder's `decisions.jsonl`: the raw material of planner training.
"""

from __future__ import annotations

import json
import threading
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TypedDict


class Message(TypedDict):
    """One chat message, as chat templates and OpenAI-compatible APIs take it."""

    role: str
    content: str


@dataclass(frozen=True)
class Attempt:
    """One model call within a decision: the prompt it saw, what it said, and whether that was valid."""

    messages: tuple[Message, ...]
    prompt_text: str  # the exact text the model was given (chat template applied), or the messages as JSON
    output: str
    valid: bool
    error: str  # why the output was invalid, as the model was told; empty when valid
    latency_ms: float
    reused_tokens: int = 0  # prompt tokens whose keys and values a backend's prefix cache held (transformers)


@dataclass(frozen=True)
class DecisionTrace:
    """What a model-based planner reports about its last decision."""

    model: str
    domain: str
    observation: str
    valid_subgoals: tuple[str, ...]
    constrained: bool
    attempts: tuple[Attempt, ...]

    @property
    def invalid_outputs(self) -> int:
        return sum(not attempt.valid for attempt in self.attempts)


@dataclass
class Decision:
    """One decision of the closed loop and what came of it."""

    step: int
    planner: str
    instruction: str
    subgoal: str | None  # `skill(args)` or `done()`; None when the planner failed to give one
    latency_ms: float
    trace: DecisionTrace | None = None  # None for planners without a model (the expert)
    result: dict[str, Any] | None = None  # {"success", "message"} once executed
    stop: str = ""  # why the loop stopped at this decision, if it did
    meta: dict[str, Any] = field(default_factory=dict)  # episode facts from the caller (task, seed, ...)
    time: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="milliseconds"))
    """When it was made (UTC): taken here, so that a log written later, or by another process, keeps it."""

    @property
    def outputs(self) -> int:
        return len(self.trace.attempts) if self.trace else 1

    @property
    def invalid_outputs(self) -> int:
        return self.trace.invalid_outputs if self.trace else 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class DecisionLog:
    """Appends each decision as one JSON line; thread-safe, flushed per line so a crash loses nothing."""

    def __init__(self, path: Path) -> None:
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file = path.open("a", encoding="utf-8")
        self._lock = threading.Lock()

    def write(self, decision: Decision) -> None:
        line = json.dumps(decision.to_json(), ensure_ascii=False)
        with self._lock:
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> DecisionLog:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
