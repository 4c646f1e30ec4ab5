"""Whole tasks through the planner's closed loop and the controller's control loop, in-process."""

from __future__ import annotations

import pytest

from policies.control import ExpertSkillPolicy
from policies.evaluation import run_episode
from policies.tabletop.planners import ExpertPlannerBackend
from sim.tabletop import TASK_GROUPS, TASKS, Subgoal, TabletopWorld, WorldConfig, make_task


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


class ScriptedPlanner:
    """Says a fixed plan, one subgoal a decision, then done()."""

    name = "scripted"
    last_trace = None

    def __init__(self, plan: list[Subgoal]) -> None:
        self.plan = plan

    def next_subgoal(self, context: object) -> Subgoal | None:
        return self.plan.pop(0) if self.plan else None


def test_a_skill_the_instruction_rules_out_fails_the_task(world: TabletopWorld) -> None:
    """'push ... onto' forbids grasping: a pick ends the task as failed, before a place reaches the goal."""
    task = make_task("push", 3, split="heldout")
    obj, plate = task.goal[0].args
    plan = [Subgoal("pick", (obj,)), Subgoal("place", (obj, plate))]
    result = run_episode(world, task, ScriptedPlanner(plan), ExpertSkillPolicy())
    assert not result.success
    assert result.message == f"instruction broken: pick({obj}) uses pick, which the instruction rules out"
    assert len(result.subgoals) == 1  # it ends right after the forbidden subgoal
    pushed = run_episode(world, task, ScriptedPlanner([Subgoal("push", (obj, plate))]), ExpertSkillPolicy())
    assert pushed.success and pushed.instruction == task.instruction


@pytest.mark.parametrize("name", TASK_GROUPS["compositions"])
def test_expert_solves_held_out_compositions(world: TabletopWorld, name: str) -> None:
    for seed in range(3):
        task = make_task(name, seed, split="heldout")
        result = run_episode(world, task, ExpertPlannerBackend(), ExpertSkillPolicy())
        assert result.success, (task.instruction, result.message)
        assert all(record.success for record in result.subgoals)
