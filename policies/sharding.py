"""Episodes sharded over Ray actors: one list of episode specs (seeds, games) played by N worker processes on
this machine or on a Ray cluster, the results handed back in the specs' order, so what a command writes does
not depend on how many workers played it. Each worker builds its own world and planner once, from a picklable
`Players` (a config, never a live world). A worker that dies is replaced and its unfinished episode played
again; an episode's own error ends the run as it would in one process. Leaving the runner while another
thread still waits on episodes (planner RL's next rollouts, overlapped with an update) abandons them: that
thread gets `EpisodesAbandonedError` and the workers are stopped without waiting for those episodes.

Ray is imported here only, and only when workers are asked for (`Workers` given); without them the episodes
run in the calling process, one after another, as they always did."""

from __future__ import annotations

import logging
import os
import threading
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

S = TypeVar("S")  # an episode's spec, e.g. (task, seed) or a game
R = TypeVar("R")  # an episode's result
S_contra = TypeVar("S_contra", contravariant=True)
R_co = TypeVar("R_co", covariant=True)

Play = Callable[[S], R]
"""Plays one episode from its spec; the same spec gives the same result whichever worker plays it."""


class Players(Protocol[S_contra, R_co]):
    """What each worker opens once and plays its episodes with (the world, planner and skills it builds are
    closed when the context ends). Picklable, so that every Ray actor builds its own."""

    def open(self) -> AbstractContextManager[Callable[[S_contra], R_co]]: ...


@dataclass(frozen=True)
class Workers:
    """Where episodes run when they do not run in the calling process."""

    count: int | None = None
    """Ray actors (one CPU each); None: 1 on this machine, every CPU of the cluster with `address`."""
    address: str | None = None
    """An existing Ray cluster (`ray start --head` prints it, e.g. 10.0.0.5:6379); None: start Ray here."""
    replacements: int = 3
    """Dead actors replaced per worker before the run gives up (a crash that repeats is a bug, not luck)."""


class WorkersDiedError(RuntimeError):
    """Actors kept dying: more replacements than `Workers.replacements` allows."""


class EpisodesAbandonedError(RuntimeError):
    """The runner was left (the run is ending) while these episodes were still in play."""


@contextmanager
def episode_runner(
    players: Players[S, R], workers: Workers | None
) -> Iterator[Callable[[Sequence[S]], Iterator[R]]]:
    """A function from specs to their results, in the specs' order: played in this process when `workers` is
    None, else by Ray actors (which are ready, each with its world and planner, once this context is
    entered: a planner that cannot load raises here, as its own exception)."""
    if workers is None:
        with players.open() as play:
            yield lambda specs: (play(spec) for spec in specs)
        return
    with _RayPool(players, workers) as pool:
        yield pool.play


class _Worker(Generic[S, R]):
    """The body of one Ray actor: opens the players once, then plays the episodes it is sent."""

    def __init__(self, players: Players[S, R]) -> None:
        self._players = players
        self._context: AbstractContextManager[Callable[[S], R]] | None = None
        self._play: Callable[[S], R] | None = None

    def open(self) -> None:
        self._context = self._players.open()
        self._play = self._context.__enter__()

    def play(self, spec: S) -> R:
        assert self._play is not None, "open() first"
        return self._play(spec)

    def close(self) -> None:
        if self._context is not None:
            self._context.__exit__(None, None, None)
            self._context = self._play = None


class _RayPool(Generic[S, R]):
    """Ray actors that each play one episode at a time, handed the next spec as soon as they are free."""

    def __init__(self, players: Players[S, R], workers: Workers) -> None:
        self._players, self._workers = players, workers
        self._ray: Any = None
        self._started_ray = False
        self._actors: list[Any] = []
        self._replaced = 0
        self._closing = False
        self._abandoned = False  # some play gave up on episodes still running on the actors
        self._playing = 0  # threads inside `_step` (between Ray calls, never across a yield)
        self._idle = threading.Condition()

    def __enter__(self) -> _RayPool[S, R]:
        import ray

        self._ray = ray
        try:
            count = self._connect()
            self._actor_class: Any = ray.remote(num_cpus=1, max_restarts=0)(_Worker)
            fresh = [self._actor_class.remote(self._players) for _ in range(count)]
            self._actors = list(fresh)
            for actor, opened in zip(fresh, [actor.open.remote() for actor in fresh], strict=True):
                self._wait_open(actor, opened)
        except BaseException as err:
            self.__exit__(type(err))
            raise
        return self

    def __exit__(self, failed: type[BaseException] | None = None, *_exc: object) -> None:
        """Closes each actor's world (after a failure, or with episodes abandoned in play, they are only
        killed), then Ray when it started it. A play in another thread gives up first
        (`EpisodesAbandonedError`)."""
        ray = self._ray
        with self._idle:
            self._closing = True
            self._idle.wait_for(lambda: not self._playing, timeout=60)
        try:
            if self._actors and failed is None and not self._abandoned:
                closing = [actor.close.remote() for actor in self._actors]
                ray.wait(closing, num_returns=len(closing), timeout=30)
            for actor in self._actors:
                ray.kill(actor)
            self._actors = []
        finally:
            if self._started_ray:
                ray.shutdown()
                self._started_ray = False

    def _connect(self) -> int:
        """Starts Ray on this machine (or joins the cluster), quietly; the number of actors to start."""
        ray, workers = self._ray, self._workers
        if workers.count is not None and workers.count < 1:
            raise ValueError(f"workers must be >= 1, got {workers.count}")
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no telemetry prompt, no network call
        quiet: dict[str, Any] = {"logging_level": logging.ERROR, "log_to_driver": False}
        if not ray.is_initialized():  # a caller (a test) may share one session across runs
            if workers.address:
                try:
                    ray.init(address=workers.address, **quiet)
                except ConnectionError as err:
                    raise ValueError(
                        f"cannot join the Ray cluster at {workers.address}: {err} (is it up? one started "
                        "with token authentication needs RAY_AUTH_MODE=token and its token here too)"
                    ) from err
            else:
                ray.init(num_cpus=workers.count or 1, include_dashboard=False, **quiet)
            self._started_ray = True
        if workers.count is not None:
            return workers.count
        return max(1, int(ray.cluster_resources().get("CPU", 1))) if workers.address else 1

    def _wait_open(self, actor: Any, opened: Any) -> Any:
        """The actor once its players are open; a dead one is replaced (its replacement returned), an error
        while opening (a model that cannot load) is raised as itself."""
        while True:
            try:
                self._ray.get(opened)
                return actor
            except self._ray.exceptions.RayActorError as err:
                actor = self._replace(actor, err)
                opened = actor.open.remote()

    def _replace(self, dead: Any, why: BaseException) -> Any:
        """A fresh actor in the dead one's place (not yet open)."""
        self._replaced += 1
        limit = self._workers.replacements * len(self._actors)
        if self._replaced > limit:
            raise WorkersDiedError(f"{self._replaced} Ray workers died (more than {limit}); the last: {why}")
        self._ray.kill(dead)
        fresh = self._actor_class.remote(self._players)
        self._actors[self._actors.index(dead)] = fresh
        return fresh

    def play(self, specs: Sequence[S]) -> Iterator[R]:
        pending = deque(enumerate(specs))
        running: dict[Any, tuple[Any, int, S]] = {}  # object ref -> (actor, index, spec)
        idle = list(self._actors)
        finished: dict[int, R] = {}
        emitted = 0
        while emitted < len(specs):
            self._step(pending, running, idle, finished)
            while emitted in finished:  # the results in the specs' order, as soon as the prefix is complete
                yield finished.pop(emitted)
                emitted += 1

    def _step(
        self,
        pending: deque[tuple[int, S]],
        running: dict[Any, tuple[Any, int, S]],
        idle: list[Any],
        finished: dict[int, R],
    ) -> None:
        """Hands idle actors the next specs and collects at least one result (or replaces a dead actor);
        raises `EpisodesAbandonedError` once the runner is being left."""
        ray = self._ray
        with self._idle:
            if self._closing:
                raise EpisodesAbandonedError(
                    f"{len(pending) + len(running)} episodes abandoned: the run is ending"
                )
            self._playing += 1
        try:
            while idle and pending:
                actor = idle.pop()
                index, spec = pending.popleft()
                running[actor.play.remote(spec)] = (actor, index, spec)
            ready: list[Any] = []
            while not ready and not self._closing:
                ready, _ = ray.wait(list(running), num_returns=1, timeout=0.5)
            for ref in ready:
                actor, index, spec = running.pop(ref)
                try:
                    finished[index] = ray.get(ref)
                except ray.exceptions.RayActorError as err:
                    fresh = self._replace(actor, err)
                    idle.append(self._wait_open(fresh, fresh.open.remote()))
                    pending.appendleft((index, spec))  # played again, by whoever is free first
                    continue
                idle.append(actor)
        finally:
            with self._idle:
                self._playing -= 1
                self._abandoned |= self._closing and bool(running)
                self._idle.notify_all()
