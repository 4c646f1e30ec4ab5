"""Whole tasks through the planner's closed loop and the controller's control loop, in-process."""

from __future__ import annotations

import pytest

from policies.control import ExpertSkillPolicy
from policies.evaluation import run_episode
from policies.planning import ExpertPlannerBackend
from sim.tabletop import TASKS, TabletopWorld, WorldConfig, make_task


@pytest.fixture(scope="module")
def world() -> TabletopWorld:
    return TabletopWorld(WorldConfig(control_dt=0.04))


@pytest.mark.parametrize("name", sorted(TASKS))
@pytest.mark.parametrize("seed", range(5))
def test_experts_solve_every_task(world: TabletopWorld, name: str, seed: int) -> None:
    task = make_task(name, seed)
    result = run_episode(world, task, ExpertPlannerBackend(), ExpertSkillPolicy())
    assert result.success, result.message
    assert all(record.success for record in result.subgoals)
    assert len(result.subgoals) >= len(task.goal)
    assert result.steps == round(result.sim_time / world.config.control_dt)


@pytest.mark.parametrize("name", sorted(TASKS))
def test_experts_at_100_hz_with_a_25_hz_controller(name: str) -> None:
    """The ROS graph's timing: the bridge steps at 100 Hz, the controller acts at 25 Hz."""
    world = TabletopWorld(WorldConfig(control_dt=0.01))
    result = run_episode(
        world, make_task(name, 7), ExpertPlannerBackend(), ExpertSkillPolicy(), action_hold=4
    )
    assert result.success, result.message


def test_pick_place_uses_two_subgoals(world: TabletopWorld) -> None:
    task = make_task("pick_place", 4)
    obj, plate = task.goal[0].args
    result = run_episode(world, task, ExpertPlannerBackend(), ExpertSkillPolicy())
    assert result.success
    assert [str(r.subgoal) for r in result.subgoals] == [f"pick({obj})", f"place({obj}, {plate})"]
