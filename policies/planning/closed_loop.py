"""The closed planning loop: plan a subgoal, execute it, observe, replan — shared by the planner node and
in-process evaluation (only `observe` and `execute` differ)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from policies.planning.decisions import Decision, DecisionLog
from policies.planning.parsing import format_subgoal
from policies.planning.planner import (
    Anticipating,
    ObsT,
    Planner,
    PlannerError,
    PlanningContext,
    StepRecord,
    TaskGoal,
)
from sim.subgoal import Subgoal


@dataclass(frozen=True)
class LoopConfig:
    """When the closed loop gives up on a task."""

    max_subgoals: int = 20
    """Stop and fail after this many executed subgoals."""
    max_repeated_failures: int = 2
    """The same subgoal failing this many times in a row is a loop: abort."""
    max_repeats: int = 3
    """The same subgoal executed this many times in a row, whatever came of it: a loop."""


@dataclass
class TaskOutcome:
    success: bool
    message: str
    history: list[StepRecord] = field(default_factory=list)
    decisions: list[Decision] = field(default_factory=list)  # every planner call, with its result

    @property
    def subgoals_executed(self) -> int:
        return len(self.history)


def format_step(index: int, subgoal: str, status: str, seconds: float | None = None) -> str:
    """One line of a task's progress, e.g. '   2. place(red_block, blue_block)  ok (1.7 s)'."""
    mark = {"planned": "...", "succeeded": "ok", "failed": "FAILED"}.get(status, status)
    took = "" if seconds is None else f" ({seconds:.1f} s)"
    return f"  {index + 1:>2}. {subgoal:<40} {mark}{took}"


# (index, subgoal, record or None when just planned)
EventHook = Callable[[int, Subgoal, StepRecord | None], None]


def _repeated(history: list[StepRecord], subgoal: Subgoal, failures_only: bool) -> int:
    """How many of the last executed subgoals in a row were `subgoal` (and failed, with failures_only)."""
    count = 0
    for record in reversed(history):
        if record.subgoal != subgoal or (failures_only and record.success):
            break
        count += 1
    return count


def run_closed_loop(
    planner: Planner,
    instruction: str,
    observe: Callable[[], ObsT],
    execute: Callable[[Subgoal], StepRecord],
    task: TaskGoal[ObsT] | None = None,
    config: LoopConfig | None = None,
    on_event: EventHook | None = None,
    log: DecisionLog | None = None,
    meta: dict[str, Any] | None = None,
    ended: Callable[[ObsT], str | None] | None = None,
) -> TaskOutcome:
    """Replan after every result until the planner says done, the task succeeds, a loop or the limit.
    A planner that can (`Anticipating`) prepares its next decision while each subgoal executes.

    `ended(observation)`, for worlds that can end a task unsolved (a text game's command budget), says why
    it ended, or None while it goes on.

    Every planner call becomes a `Decision` (in the outcome, and appended to `log` when given, with
    `meta` such as the task and seed) once its result is known.
    """
    config = config or LoopConfig()
    if not instruction.strip():
        return TaskOutcome(False, "empty instruction: say what the robot should do")
    history: list[StepRecord] = []
    decisions: list[Decision] = []

    def finish(success: bool, message: str, decision: Decision | None = None) -> TaskOutcome:
        if isinstance(planner, Anticipating):  # nothing of the task's keeps running after it
            planner.settle()
        if decision is not None:
            decision.stop = message
            record(decision)
        return TaskOutcome(success, message, history, decisions)

    def record(decision: Decision) -> None:
        decisions.append(decision)
        if log is not None:
            log.write(decision)

    while True:
        state = observe()
        try:
            done = task is not None and task.success(state)
        except ValueError as err:  # the goal names an object the observation lacks
            return finish(False, f"the task's goal cannot be checked in this observation: {err}")
        if done:
            return finish(True, f"task done after {len(history)} subgoals")
        why = ended(state) if ended is not None else None
        if why is not None:
            return finish(False, f"{why} after {len(history)} subgoals")
        if len(history) >= config.max_subgoals:
            return finish(False, f"gave up after the subgoal limit ({config.max_subgoals})")
        started = time.perf_counter()
        context = PlanningContext(instruction, state, tuple(history), task)
        try:
            subgoal = planner.next_subgoal(context)
            error = ""
        except PlannerError as err:
            subgoal, error = None, f"planner {planner.name!r} failed: {err}"
        decision = Decision(
            step=len(history),
            planner=planner.name,
            instruction=instruction,
            subgoal=None if error else format_subgoal(subgoal),
            latency_ms=1000 * (time.perf_counter() - started),
            trace=planner.last_trace,
            meta=dict(meta or {}),
        )
        if error:
            return finish(False, error, decision)
        if subgoal is None:
            if task is None or task.success(state):
                return finish(True, f"planner said done after {len(history)} subgoals", decision)
            return finish(False, "planner said done but the task is not achieved", decision)
        if _repeated(history, subgoal, failures_only=True) >= config.max_repeated_failures:
            return finish(
                False,
                f"loop detected: {subgoal} failed {config.max_repeated_failures} times in a row "
                f"(last: {history[-1].message})",
                decision,
            )
        if _repeated(history, subgoal, failures_only=False) >= config.max_repeats:
            return finish(
                False,
                f"loop detected: {subgoal} planned again after {config.max_repeats} times in a row "
                "without the task getting done",
                decision,
            )
        if on_event:
            on_event(len(history), subgoal, None)
        if isinstance(planner, Anticipating):  # the next decision's prefill runs while this executes
            planner.anticipate(context, subgoal)
        step = execute(subgoal)
        history.append(step)
        decision.result = {"success": step.success, "message": step.message}
        record(decision)
        if on_event:
            on_event(len(history) - 1, subgoal, step)
