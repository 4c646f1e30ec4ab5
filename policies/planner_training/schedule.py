"""When an RL iteration's rollouts are played: on its turn, after the previous update (on-policy), or with
`rl.overlap` on the rollout workers during the previous update, sampled with the adapter weights from before
that update (one iteration off-policy, never more: the next iteration's rollouts start only once these are
taken, with the weights the learner has then)."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType

import torch

from policies.planner_training.rollouts import Episode

Weights = dict[str, torch.Tensor]
Play = Callable[[int, Weights | None], tuple[list[Episode], list[Episode]]]
"""(iteration, adapter weights or None for the learner's own) -> the iteration's episodes: all that were
played, and those the update learns from."""


@dataclass(frozen=True)
class Sampled:
    """An iteration's rollouts as the update gets them."""

    played: list[Episode]
    kept: list[Episode]
    seconds: float
    """The rollouts' own wall time (overlapped: mostly spent during the previous update)."""
    waited: float
    """How long the learner waited for them."""
    behaviour: Weights | None
    """The adapter weights that sampled them when they are older than the learner's (one update stale);
    None: sampled by the policy being updated."""

    @property
    def staleness(self) -> int:
        return int(self.behaviour is not None)


class RolloutSchedule:
    """Plays each iteration's rollouts when asked (`take`), or hands over those `start`ed for it in a
    background thread during the previous update. Leaving it drops rollouts still in flight: leave the
    rollout workers first, which abandons them, so that leaving this does not wait for them to finish."""

    def __init__(self, play: Play, overlap: bool) -> None:
        self._play = play
        self._executor = ThreadPoolExecutor(1, thread_name_prefix="rollouts") if overlap else None
        self._ahead: tuple[int, Weights, Future[tuple[list[Episode], list[Episode], float]]] | None = None

    def __enter__(self) -> RolloutSchedule:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self._ahead = None  # dropped, not half-used: a resumed run samples that iteration again
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    @property
    def ahead(self) -> Weights | None:
        """The weights sampling the next iteration's rollouts in the background, if any (a checkpoint keeps
        them, so that a resumed run samples that iteration as this one would have)."""
        return self._ahead[1] if self._ahead is not None else None

    def take(self, iteration: int, weights: Weights | None = None, stale: bool = False) -> Sampled:
        """The iteration's rollouts: those started for it, else played now with `weights` (None: the
        learner's own; `stale`: they are older than the learner's, as a resumed overlapped run's first)."""
        started = time.perf_counter()
        if self._ahead is not None:
            ahead, behaviour, future = self._ahead
            if ahead != iteration:
                raise RuntimeError(f"rollouts of iteration {ahead} in flight, iteration {iteration} taken")
            self._ahead = None
            played, kept, seconds = future.result()
            return Sampled(played, kept, seconds, time.perf_counter() - started, behaviour)
        played, kept = self._play(iteration, weights)
        seconds = time.perf_counter() - started
        return Sampled(played, kept, seconds, seconds, weights if stale else None)

    def start(self, iteration: int, weights: Weights) -> None:
        """Starts the iteration's rollouts with `weights` (a copy the learner no longer changes) in the
        background, while the learner updates."""
        if self._executor is None:
            raise RuntimeError("rollouts start ahead only with overlap")

        def timed() -> tuple[list[Episode], list[Episode], float]:
            started = time.perf_counter()
            played, kept = self._play(iteration, weights)
            return played, kept, time.perf_counter() - started

        self._ahead = (iteration, weights, self._executor.submit(timed))
