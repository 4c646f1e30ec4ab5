"""Whole tasks in-process: the planner node's closed loop and the controller node's control loop, with the
simulator called directly instead of over DDS. Benchmarks and tests measure the stack through this."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from policies.control import SkillPolicy, SkillPolicyConfig, execute_subgoal, make_skill_policy
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
from sim.tabletop import Subgoal, TabletopWorld, Task, WorldConfig, make_task
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
) -> EpisodeResult:
    """Reset the world to the task and run it closed-loop to success, failure or a limit; each planner
    decision is appended to `log` when given, tagged with the task and seed."""
    started = time.perf_counter()
    world.reset(task)
    steps = 0
    broken: list[str] = []  # a subgoal whose skill the instruction rules out ends the task as failed

    def execute(subgoal: Subgoal) -> StepRecord:
        nonlocal steps
        if task.forbids(subgoal.skill) and not broken:
            broken.append(f"{subgoal} uses {subgoal.skill}, which the instruction rules out")
        result = execute_subgoal(world, subgoal, policy, subgoal_timeout_s, action_hold)
        steps += result.steps
        return StepRecord(subgoal, result.success, result.message)

    outcome = run_closed_loop(
        planner,
        task.instruction,
        world.state,
        execute,
        task=task,
        config=loop,
        on_event=on_event,
        log=log,
        meta={"task": task.name, "seed": task.seed},
        ended=lambda _state: broken[0] if broken else None,
    )
    return EpisodeResult(
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
            return run_episode(world, task, planner, policy, action_hold=self.action_hold, loop=loop)

        yield play
