"""Episodes for planner training, played in-process through the planner node's closed loop against the
same world and skill code the bridges use (tabletop: MuJoCo with the controller's skill policies, learned
where a policy file exists; alfworld: the text env with the text skills), and the per-decision rewards of
those episodes.

An arena names its initial states ("reach:17", or an ALFWorld game's folder) and plays one episode from
one of them with a given planner; the RL and DPO loops only know this interface. `play_episodes` plays
several at once, each in its own thread with its own world, their planner calls batched into one
generation (`policies.planning.backends.batching`).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, Protocol, TypeVar

from policies.planner_training.config import RewardWeights, RolloutSettings
from policies.planning import Decision, LoopConfig, Planner
from policies.planning.backends import LanguageModel
from policies.planning.backends.batching import BatchedCalls, BatchModel, Seat
from policies.planning.decisions import DecisionTrace

T = TypeVar("T")


@dataclass(frozen=True)
class Episode:
    state: str  # the initial state it started from
    kind: str  # tabletop task or ALFWorld task type, for success per kind
    success: bool
    decisions: tuple[Decision, ...]


@dataclass(frozen=True)
class StepData:
    """One model decision of an episode, as RL trains on it."""

    prompt_text: str  # the exact text the model was given
    output: str  # what it answered
    observation: str  # the observation as the prompt rendered it (anchor state of GiGPO / HGPO)
    reward: float
    choices: tuple[str, ...] | None = None  # the answers decoding was constrained to (None: free)


class Arena(Protocol):
    domain: str

    def train_states(self) -> list[str]: ...

    def eval_states(self, per_kind: int) -> list[str]: ...

    def play(self, state: str, planner: Planner) -> Episode: ...

    def close(self) -> None: ...


class Pool(Generic[T]):
    """Objects made on demand and reused: one per episode in play at once, as worlds are not thread-safe."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._free: queue.SimpleQueue[T] = queue.SimpleQueue()

    @contextmanager
    def take(self) -> Iterator[T]:
        try:
            item = self._free.get_nowait()
        except queue.Empty:
            item = self._make()
        try:
            yield item
        finally:
            self._free.put(item)

    def drain(self) -> list[T]:
        """Every object not in use, removed from the pool."""
        items = []
        while not self._free.empty():
            items.append(self._free.get_nowait())
        return items


class TabletopArena:
    """Tabletop tasks; training seeds 0..train_seeds-1, evaluation seeds from eval_seed_start."""

    domain = "tabletop"

    def __init__(self, settings: RolloutSettings) -> None:
        from policies.control import SkillPolicyConfig, make_skill_policy
        from sim.tabletop import TabletopWorld, WorldConfig, task_names

        if not settings.tasks:
            raise ValueError("rollout.tasks is empty: name tabletop tasks or groups (templated, ...)")
        for split in (settings.train_split, settings.eval_split):
            if split not in ("", "train", "heldout"):
                raise ValueError(f"unknown grammar split {split!r}; known: train, heldout ('' for canonical)")
        self.tasks = [task for name in settings.tasks for task in task_names(name)]
        self.settings = settings
        self.worlds = Pool(lambda: TabletopWorld(WorldConfig(control_dt=0.01)))
        skill_dir = Path(settings.skill_dir) if settings.skill_dir else None
        self.policy = make_skill_policy(settings.skills, SkillPolicyConfig(model_dir=skill_dir))
        self.loop = LoopConfig(max_subgoals=settings.budget("tabletop"))

    def train_states(self) -> list[str]:
        split = self.settings.train_split
        return [f"{task}:{seed}:{split}" for task in self.tasks for seed in range(self.settings.train_seeds)]

    def eval_states(self, per_kind: int) -> list[str]:
        start, split = self.settings.eval_seed_start, self.settings.eval_split
        return [f"{task}:{seed}:{split}" for task in self.tasks for seed in range(start, start + per_kind)]

    def play(self, state: str, planner: Planner) -> Episode:
        from policies.evaluation import run_episode
        from sim.tabletop import make_task

        task, seed, split = (*state.split(":"), "")[:3]  # "task:seed[:split]"
        with self.worlds.take() as world:
            result = run_episode(
                world,
                make_task(task, int(seed), split=split or None),  # type: ignore[arg-type]
                planner,
                self.policy,
                subgoal_timeout_s=self.settings.subgoal_timeout_s,
                action_hold=self.settings.action_hold,
                loop=self.loop,
            )
        return Episode(state, task, result.success, result.decisions)

    def close(self) -> None:
        pass


class AlfworldArena:
    """ALFWorld games: training games from `games`, evaluation games from `eval_games`."""

    domain = "alfworld"

    def __init__(self, settings: RolloutSettings) -> None:
        from sim.alfworld import AlfworldTextEnv, discover_games

        self.train = {g.name: g for g in discover_games(Path(settings.games))}
        self.eval = {g.name: g for g in discover_games(Path(settings.eval_games))}
        self.envs = Pool(lambda: AlfworldTextEnv(max_steps=settings.budget("alfworld"), expert=False))

    def train_states(self) -> list[str]:
        return [f"train/{name}" for name in self.train]

    def eval_states(self, per_kind: int) -> list[str]:
        names = list(self.eval)
        if per_kind:
            kinds: dict[str, list[str]] = {}
            for name in names:
                kinds.setdefault(self.eval[name].task_type, []).append(name)
            names = [name for group in kinds.values() for name in group[:per_kind]]
        return [f"eval/{name}" for name in names]

    def play(self, state: str, planner: Planner) -> Episode:
        from policies.alfworld.episodes import run_episode

        split, name = state.split("/", 1)
        game = (self.train if split == "train" else self.eval)[name]
        with self.envs.take() as env:
            result = run_episode(env, game, planner, False)
        return Episode(state, game.task_type, result.won, tuple(result.decisions))

    def close(self) -> None:
        for env in self.envs.drain():
            env.close()


def make_arena(domain: str, settings: RolloutSettings) -> Arena:
    arenas: dict[str, Any] = {"tabletop": TabletopArena, "alfworld": AlfworldArena}
    if domain not in arenas:
        raise ValueError(f"unknown domain {domain!r}; known: {', '.join(arenas)}")
    arena: Arena = arenas[domain](settings)
    return arena


def play_episodes(
    arena: Arena,
    states: Sequence[str],
    make_planner: Callable[[LanguageModel], Planner],
    model: BatchModel,
    batch: int,
    tick: Callable[[], None] | None = None,
) -> list[Episode]:
    """One episode from each of `states`, in order: `batch` at a time, each in its own thread, their
    planners' calls to `model` batched into one generation whenever every episode in play waits for an
    answer; one at a time for `batch` 1."""
    batch = max(1, min(batch, len(states)))
    if batch == 1:
        planner = make_planner(model)
        episodes = []
        for state in states:
            episodes.append(arena.play(state, planner))
            if tick:
                tick()
        return episodes
    calls = BatchedCalls(model)
    results: list[Episode | None] = [None] * len(states)
    seats: dict[int, Seat] = {n: calls.seat(n) for n in range(batch)}  # the first wave, before any asks
    following = iter(range(batch, len(states)))
    lock = threading.Lock()

    def work(number: int | None) -> None:
        while number is not None:
            seat = seats[number]
            try:
                results[number] = arena.play(states[number], make_planner(seat))
            except BaseException:
                seat.leave()
                raise
            with lock:  # seat the next episode before leaving, so no batch runs without it
                number = next(following, None)
                if number is not None:
                    seats[number] = calls.seat(number)
            seat.leave()
            if tick:
                tick()

    with ThreadPoolExecutor(batch, thread_name_prefix="episode") as pool:
        for future in [pool.submit(work, n) for n in range(batch)]:
            future.result()
    return [episode for episode in results if episode is not None]


def decision_reward(decision: Decision, last: bool, success: bool, weights: RewardWeights) -> float:
    """process for a subgoal that succeeded, minus penalty for an invalid answer or a failed subgoal, plus
    outcome on the episode's last decision when the task succeeded."""
    reward = 0.0
    if decision.result is not None:
        reward += weights.process if decision.result["success"] else -weights.penalty
    if decision.invalid_outputs or decision.subgoal is None:
        reward -= weights.penalty
    if last and success:
        reward += weights.outcome
    return reward


def sampled_from(trace: DecisionTrace) -> tuple[str, ...] | None:
    """The answers a decision's decoding was constrained to, or None for free decoding."""
    return trace.valid_subgoals if trace.constrained else None


def episode_steps(episode: Episode, weights: RewardWeights) -> list[StepData]:
    """The decisions of an episode that a model made, with their rewards (the last attempt of each)."""
    steps = []
    for index, decision in enumerate(episode.decisions):
        if decision.trace is None or not decision.trace.attempts:
            continue
        attempt = decision.trace.attempts[-1]
        last = index == len(episode.decisions) - 1
        reward = decision_reward(decision, last, episode.success, weights)
        trace = decision.trace
        steps.append(
            StepData(attempt.prompt_text, attempt.output, trace.observation, reward, sampled_from(trace))
        )
    return steps


def success_by_kind(episodes: Sequence[Episode]) -> dict[str, float]:
    kinds: dict[str, list[bool]] = {}
    for episode in episodes:
        kinds.setdefault(episode.kind, []).append(episode.success)
    return {kind: sum(values) / len(values) for kind, values in sorted(kinds.items())}
