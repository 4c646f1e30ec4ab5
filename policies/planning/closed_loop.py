"""The closed planning loop: plan a subgoal, execute it, observe, replan — shared by the planner node and
in-process evaluation (only `observe` and `execute` differ)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from policies.planning.planner import Planner, PlannerError, PlanningContext, StepRecord
from sim.tabletop import SceneState, Subgoal, Task


@dataclass(frozen=True)
class LoopConfig:
    max_subgoals: int = 20  # stop and fail after this many executed subgoals
    max_repeated_failures: int = 2  # the same subgoal failing this many times in a row is a loop: abort


@dataclass
class TaskOutcome:
    success: bool
    message: str
    history: list[StepRecord] = field(default_factory=list)

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


def _repeated_failures(history: list[StepRecord], subgoal: Subgoal) -> int:
    count = 0
    for record in reversed(history):
        if record.subgoal != subgoal or record.success:
            break
        count += 1
    return count


def run_closed_loop(
    planner: Planner,
    instruction: str,
    observe: Callable[[], SceneState],
    execute: Callable[[Subgoal], StepRecord],
    task: Task | None = None,
    config: LoopConfig | None = None,
    on_event: EventHook | None = None,
) -> TaskOutcome:
    """Replan after every result until the planner says done, the task succeeds, a loop or the limit."""
    config = config or LoopConfig()
    if not instruction.strip():
        return TaskOutcome(False, "empty instruction: say what the robot should do")
    history: list[StepRecord] = []
    while True:
        state = observe()
        if task is not None and task.success(state):
            return TaskOutcome(True, f"task done after {len(history)} subgoals", history)
        if len(history) >= config.max_subgoals:
            return TaskOutcome(False, f"gave up after the subgoal limit ({config.max_subgoals})", history)
        try:
            subgoal = planner.next_subgoal(PlanningContext(instruction, state, tuple(history), task))
        except PlannerError as err:
            return TaskOutcome(False, f"planner {planner.name!r} failed: {err}", history)
        if subgoal is None:
            if task is None or task.success(state):
                return TaskOutcome(True, f"planner said done after {len(history)} subgoals", history)
            return TaskOutcome(False, "planner said done but the task is not achieved", history)
        if _repeated_failures(history, subgoal) >= config.max_repeated_failures:
            return TaskOutcome(
                False,
                f"loop detected: {subgoal} failed {config.max_repeated_failures} times in a row",
                history,
            )
        if on_event:
            on_event(len(history), subgoal, None)
        record = execute(subgoal)
        history.append(record)
        if on_event:
            on_event(len(history) - 1, subgoal, record)
