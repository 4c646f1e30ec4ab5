"""The closed planning loop's stopping rules, with the real expert planner and world."""

from __future__ import annotations

import dataclasses

import pytest

from policies.planning import LoopConfig, PlanningContext, StepRecord, run_closed_loop
from policies.tabletop.planners import ExpertPlannerBackend
from sim.tabletop import Subgoal, TabletopWorld, make_task


@pytest.fixture(scope="module")
def world() -> TabletopWorld:
    return TabletopWorld()


def test_empty_instruction_is_rejected(world: TabletopWorld) -> None:
    task = make_task("stack", 0)
    world.reset(task)
    outcome = run_closed_loop(
        ExpertPlannerBackend(), "  ", world.state, lambda sg: StepRecord(sg, True, ""), task=task
    )
    assert not outcome.success and "empty instruction" in outcome.message and outcome.subgoals_executed == 0


def test_repeated_failure_is_a_loop(world: TabletopWorld) -> None:
    task = make_task("pick_place", 1)
    world.reset(task)
    outcome = run_closed_loop(
        ExpertPlannerBackend(),
        task.instruction,
        world.state,
        lambda sg: StepRecord(sg, False, "gripper jammed"),
        task=task,
        config=LoopConfig(max_repeated_failures=3),
    )
    assert not outcome.success and outcome.subgoals_executed == 3
    obj = task.goal[0].args[0]
    assert outcome.message == f"loop detected: pick({obj}) failed 3 times in a row (last: gripper jammed)"


def test_subgoal_limit(world: TabletopWorld) -> None:
    task = make_task("sort", 0)
    world.reset(task)
    # Every subgoal "succeeds" without moving the world, so the expert keeps asking: the limit must stop it.
    outcome = run_closed_loop(
        ExpertPlannerBackend(),
        task.instruction,
        world.state,
        lambda sg: StepRecord(sg, True, ""),
        task=task,
        config=LoopConfig(max_subgoals=5, max_repeats=10),
    )
    assert not outcome.success and outcome.subgoals_executed == 5 and "subgoal limit (5)" in outcome.message


def test_repeating_a_succeeding_subgoal_is_a_loop(world: TabletopWorld) -> None:
    task = make_task("sort", 0)
    world.reset(task)
    outcome = run_closed_loop(
        ExpertPlannerBackend(),
        task.instruction,
        world.state,
        lambda sg: StepRecord(sg, True, "ok"),
        task=task,
        config=LoopConfig(max_repeats=3),
    )
    assert not outcome.success and outcome.subgoals_executed == 3
    assert "planned again after 3 times in a row" in outcome.message
    assert [d.step for d in outcome.decisions] == [0, 1, 2, 3] and outcome.decisions[
        -1
    ].stop == outcome.message


def test_expert_without_a_task_says_what_to_do(world: TabletopWorld) -> None:
    world.reset(make_task("stack", 0))
    outcome = run_closed_loop(
        ExpertPlannerBackend(), "juggle three blocks", world.state, lambda sg: StepRecord(sg, True, "")
    )
    assert not outcome.success and "needs a known task" in outcome.message


class _DonePlanner:
    """A planner that declares victory at once: the loop must check the task, not trust it."""

    name = "done"
    last_trace = None

    def next_subgoal(self, context: PlanningContext) -> Subgoal | None:
        return None


def test_done_is_checked_against_the_task(world: TabletopWorld) -> None:
    task = make_task("reach", 0)
    world.reset(task)
    outcome = run_closed_loop(
        _DonePlanner(), task.instruction, world.state, lambda sg: StepRecord(sg, True, ""), task=task
    )
    assert not outcome.success and "not achieved" in outcome.message


def test_events_report_each_subgoal(world: TabletopWorld) -> None:
    task = make_task("pick_place", 2)
    world.reset(task)
    events: list[tuple[int, str, bool | None]] = []
    run_closed_loop(
        ExpertPlannerBackend(),
        task.instruction,
        world.state,
        lambda sg: StepRecord(sg, False, "no"),
        task=task,
        config=LoopConfig(max_repeated_failures=2),
        on_event=lambda i, sg, rec: events.append((i, str(sg), None if rec is None else rec.success)),
    )
    obj = task.goal[0].args[0]
    assert events == [
        (0, f"pick({obj})", None),
        (0, f"pick({obj})", False),
        (1, f"pick({obj})", None),
        (1, f"pick({obj})", False),
    ]


def test_a_world_that_ends_the_task_stops_the_loop(world: TabletopWorld) -> None:
    task = make_task("pick_place", 2)
    world.reset(task)
    executed: list[Subgoal] = []

    def execute(subgoal: Subgoal) -> StepRecord:
        executed.append(subgoal)
        return StepRecord(subgoal, True, "")

    outcome = run_closed_loop(
        ExpertPlannerBackend(),
        task.instruction,
        world.state,
        execute,
        task=task,
        ended=lambda _state: "out of time" if len(executed) >= 1 else None,
    )
    assert not outcome.success and outcome.message == "out of time after 1 subgoals"
    assert outcome.subgoals_executed == 1


def test_a_scene_without_the_goals_object_is_a_failure_not_a_crash(world: TabletopWorld) -> None:
    """A real arm's perception can lag its reset: the goal names a block the scene does not have yet."""
    task = make_task("reach", 2)
    world.reset(task)
    empty = dataclasses.replace(world.state(), objects={})
    planner = ExpertPlannerBackend()
    outcome = run_closed_loop(
        planner, task.instruction, lambda: empty, lambda sg: StepRecord(sg, True, ""), task=task
    )
    obj = task.goal[0].args[0]
    assert not outcome.success and outcome.subgoals_executed == 0
    assert outcome.message == (
        f"the task's goal cannot be checked in this observation: unknown object {obj!r}; known objects: none"
    )
