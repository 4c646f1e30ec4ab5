"""Whole tasks in-process: the planner node's closed loop and the controller node's control loop, with the
simulator called directly instead of over DDS. Benchmarks and tests measure the stack through this."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, field
from typing import Protocol

from policies.control import ControlWatch, SkillPolicy, SkillPolicyConfig, execute_subgoal, make_skill_policy
from policies.planning import (
    Decision,
    DecisionLog,
    EventHook,
    LoopConfig,
    Planner,
    StepRecord,
    run_closed_loop,
)
from policies.planning.llm_config import LLMConfig
from sim.tabletop import SceneState, Subgoal, TabletopWorld, Task, WorldConfig, make_task
from sim.tabletop.phrasing import Split


@dataclass(frozen=True)
class EpisodeResult:
    task: str
    seed: int
    success: bool
    message: str
    subgoals: tuple[StepRecord, ...]  # every subgoal executed, in order, with its outcome
    steps: int  # world steps
    sim_time: float  # simulated seconds
    wall_time: float  # wall-clock seconds
    decisions: tuple[Decision, ...] = field(default=())  # every planner call, with prompt, output, latency
    instruction: str = ""


class EpisodeWatch(ControlWatch, Protocol):
    """Hears a whole in-process episode as the graph's nodes would publish it: the reset, each subgoal
    planned and its result (`event`, the closed loop's EventHook), each control tick and world step."""

    def started(self, task: Task, state: SceneState, subgoal_timeout_s: float) -> None:
        """The world was reset to `task`; subgoals get this timeout."""

    def event(self, index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
        """A subgoal planned (record None, before it runs) or its result."""

    def finished(self, result: EpisodeResult) -> None:
        """The episode ended (not called when it raised)."""


EpisodeWatches = Callable[[Task], AbstractContextManager[EpisodeWatch]]
"""Opens a watch for one episode's task and closes it afterwards, however the episode ended (picklable for
Ray workers: `hgpo eval-planner --record` passes ros_nodes.bag.episode.EpisodeRecorder)."""


def run_episode(
    world: TabletopWorld,
    task: Task,
    planner: Planner,
    policy: SkillPolicy,
    subgoal_timeout_s: float = 12.0,
    action_hold: int = 1,
    loop: LoopConfig | None = None,
    on_event: EventHook | None = None,
    log: DecisionLog | None = None,
    watch: EpisodeWatch | None = None,
) -> EpisodeResult:
    """Reset the world to the task and run it closed-loop to success, failure or a limit; each planner
    decision is appended to `log` when given, tagged with the task and seed."""
    started = time.perf_counter()
    state = world.reset(task)
    if watch is not None:
        watch.started(task, state, subgoal_timeout_s)
    steps = 0
    broken: list[str] = []  # a subgoal whose skill the instruction rules out ends the task as failed

    def execute(subgoal: Subgoal) -> StepRecord:
        nonlocal steps
        if task.forbids(subgoal.skill) and not broken:
            broken.append(f"{subgoal} uses {subgoal.skill}, which the instruction rules out")
        result = execute_subgoal(world, subgoal, policy, subgoal_timeout_s, action_hold, watch)
        steps += result.steps
        return StepRecord(subgoal, result.success, result.message)

    def event(index: int, subgoal: Subgoal, record: StepRecord | None) -> None:
        if watch is not None:
            watch.event(index, subgoal, record)
        if on_event is not None:
            on_event(index, subgoal, record)

    outcome = run_closed_loop(
        planner,
        task.instruction,
        world.state,
        execute,
        task=task,
        config=loop,
        on_event=event,
        log=log,
        meta={"task": task.name, "seed": task.seed},
        ended=lambda _state: broken[0] if broken else None,
    )
    episode = EpisodeResult(
        task=task.name,
        seed=task.seed,
        success=outcome.success and not broken,
        message=f"instruction broken: {broken[0]}" if broken else outcome.message,
        subgoals=tuple(outcome.history),
        steps=steps,
        sim_time=world.state().time,
        wall_time=time.perf_counter() - started,
        decisions=tuple(outcome.decisions),
        instruction=task.instruction,
    )
    if watch is not None:
        watch.finished(episode)
    return episode


@dataclass(frozen=True)
class TabletopPlayers:
    """Tabletop episodes from (task, seed), as `hgpo eval-planner` plays them: a picklable recipe for the
    world, planner and skill policy, so each Ray worker (policies/sharding.py) builds its own."""

    planner: str
    llm: LLMConfig | None
    skills: str = "expert"
    skill_config: SkillPolicyConfig = field(default_factory=SkillPolicyConfig)
    split: Split | None = None  # the instruction grammar's split (None: each task's canonical sentence)
    physics_rate: float = 100.0  # world steps per second
    action_hold: int = 4  # world steps per controller tick
    max_subgoals: int = 10
    watches: EpisodeWatches | None = None  # e.g. a recording of each episode

    @contextmanager
    def open(self) -> Iterator[Callable[[tuple[str, int]], EpisodeResult]]:
        from policies.worlds import make_planner

        planner = make_planner(self.planner, self.llm)
        policy = make_skill_policy(self.skills, self.skill_config)
        world = TabletopWorld(WorldConfig(control_dt=1.0 / self.physics_rate))
        loop = LoopConfig(max_subgoals=self.max_subgoals)

        def play(job: tuple[str, int]) -> EpisodeResult:
            name, seed = job
            task = make_task(name, seed, split=self.split)
            with ExitStack() as stack:
                watch = stack.enter_context(self.watches(task)) if self.watches is not None else None
                return run_episode(
                    world, task, planner, policy, action_hold=self.action_hold, loop=loop, watch=watch
                )

        yield play
