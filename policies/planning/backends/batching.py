"""Batched planner calls for episodes played at once, each in its own thread: every episode's planner asks
its own `Seat`, and once every seated episode is waiting for an answer their questions go to the model as
one batched generation. Episodes keep their plain closed loop (no inverted control), and a batch is always
the same set of questions whatever the threads' timing, so sampled rollouts stay reproducible."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Protocol

from policies.planning.backends import Completion, ConstrainedRequest, LanguageModel, ModelError
from policies.planning.decisions import Message


class BatchModel(LanguageModel, Protocol):
    """A model that also answers several constrained prompts in one generation."""

    def complete_batch(self, requests: Sequence[ConstrainedRequest]) -> list[Completion]: ...


@dataclass
class _Request:
    seat: int
    messages: Sequence[Message]
    choices: Sequence[str]
    done: threading.Event = field(default_factory=threading.Event)
    answer: Completion | None = None
    error: Exception | None = None


class BatchedCalls:
    """Gathers the constrained calls of the seated episodes into batches of the model's `complete_batch`."""

    def __init__(self, model: BatchModel) -> None:
        self.model = model
        self._lock = threading.Lock()
        self._seated: set[int] = set()
        self._pending: list[_Request] = []

    def seat(self, number: int) -> Seat:
        """A place for episode `number` (rows are ordered by it); batches wait for it until it leaves."""
        with self._lock:
            if number in self._seated:
                raise ValueError(f"episode {number} is already seated")
            self._seated.add(number)
        return Seat(self, number)

    def leave(self, number: int) -> None:
        with self._lock:
            self._seated.discard(number)
            batch = self._take_if_full()
        self._run(batch)

    def ask(self, request: _Request) -> Completion:
        with self._lock:
            self._pending.append(request)
            batch = self._take_if_full()
        self._run(batch)
        request.done.wait()
        if request.error is not None:
            raise request.error
        assert request.answer is not None
        return request.answer

    def _take_if_full(self) -> list[_Request]:
        """The pending questions once every seated episode has asked one (called under the lock)."""
        if not self._pending or len(self._pending) < len(self._seated):
            return []
        batch, self._pending = sorted(self._pending, key=lambda r: r.seat), []
        return batch

    def _run(self, batch: list[_Request]) -> None:
        if not batch:
            return
        error: Exception | None = None
        try:
            answers = self.model.complete_batch([(r.messages, r.choices) for r in batch])
        except Exception as err:  # every waiting episode gets it, none hangs
            answers, error = [], err
        for index, request in enumerate(batch):
            request.answer = answers[index] if answers else None
            request.error = error
            request.done.set()


class Seat:
    """One episode's view of the shared model: a constraining `LanguageModel` for its `LLMPlanner`."""

    constrains = True

    def __init__(self, calls: BatchedCalls, number: int) -> None:
        self._calls = calls
        self.number = number
        self.description = calls.model.description

    def complete(
        self,
        messages: Sequence[Message],
        choices: Sequence[str] | None = None,
        max_new_tokens: int | None = None,
    ) -> Completion:
        if choices is None:
            raise ModelError("batched calls are constrained: give the valid answers")
        return self._calls.ask(_Request(self.number, messages, choices))

    def prefill(self, messages: Sequence[Message], upto: str | None = None) -> None:
        """Nothing: a batch's rows share their prefix's cache in the batched generation itself."""

    def leave(self) -> None:
        """The episode is over: batches stop waiting for it."""
        self._calls.leave(self.number)
