"""Players whose Ray worker process dies for real in the middle of a run, for the tests of
policies/sharding.py."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from policies.sharding import Players


@dataclass(frozen=True)
class Dies:
    """`players`, except that a worker process that plays a spec `fatal` picks exits on the spot (os._exit: no
    clean-up, no exception, as a segfault or the OOM killer ends it): every time, or with `marker` only the
    first (the file, created exclusively, keeps the replacement that plays it again alive)."""

    players: Players[Any, Any]
    fatal: Callable[[Any], bool]
    marker: Path | None = None

    @contextmanager
    def open(self) -> Iterator[Callable[[Any], Any]]:
        with self.players.open() as play:

            def dying(spec: Any) -> Any:
                if self.fatal(spec) and self._first_time():
                    os._exit(1)
                return play(spec)

            yield dying

    def _first_time(self) -> bool:
        if self.marker is None:
            return True
        try:
            os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
        return True


def second_group(group: Any) -> bool:
    """The second initial state's group of a planner-RL iteration (`rl.RolloutGroup`)."""
    return bool(group.seed % 1_000_003 == 1)


def second_group_of(iteration: int, group: Any) -> bool:
    """The second group of planner-RL iteration `iteration` of a run with seed 0 (`runner.play_iteration`)."""
    return bool(group.seed == iteration * 1_000_003 + 1)


@dataclass(frozen=True)
class Stalls:
    """Players whose episodes never end (a worker deep in a long game): each creates `started`, then waits
    until its process is killed."""

    started: Path

    @contextmanager
    def open(self) -> Iterator[Callable[[Any], Any]]:
        def stall(spec: Any) -> Any:
            self.started.touch()
            threading.Event().wait()

        yield stall
