"""Ctrl-C as a request to end a training run at its next step, saved as its time budget saves it."""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

from tqdm import tqdm


def never() -> bool:
    """The stop request of a run nobody can interrupt (tests, library calls)."""
    return False


class StopRequest:
    """While entered, the first Ctrl-C only sets `requested`; the trainer polls it, finishes the step it is
    in and ends as at its time budget (checkpoint, adapter, summary), so nothing trained is lost and the
    run resumes. A second Ctrl-C interrupts at once. Off the main thread (no signal handler can be set
    there) it never fires."""

    def __init__(self, what: str) -> None:
        self.requested = False
        self._what = what
        self._previous: Any = None

    def __call__(self) -> bool:
        return self.requested

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._on_interrupt)
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def _on_interrupt(self, _signum: int, _frame: FrameType | None) -> None:
        if self.requested:
            raise KeyboardInterrupt
        self.requested = True
        tqdm.write(f"Ctrl-C: {self._what} ends after the current step, saved; Ctrl-C again to abort now")
