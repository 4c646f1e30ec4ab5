"""One subgoal's control loop: success, timeout, bad actions and bad subgoals."""

from __future__ import annotations

import numpy as np
import pytest

from policies.control import ExecutionStatus, ExpertSkillPolicy, SubgoalExecution, execute_subgoal
from sim.tabletop import SceneState, Subgoal, TabletopWorld, UnknownObjectError, make_task


@pytest.fixture
def world() -> TabletopWorld:
    world = TabletopWorld()
    world.reset(make_task("pick_place", 3))
    return world


def test_expert_reaches_and_distance_shrinks(world: TabletopWorld) -> None:
    subgoal = Subgoal("reach", ("red_block",))
    execution = SubgoalExecution(subgoal, ExpertSkillPolicy(), world.state(), timeout_s=10.0, start_time=0.0)
    first = execution.step(world.state(), now=0.0)
    result = execute_subgoal(world, subgoal, ExpertSkillPolicy(), timeout_s=10.0)
    assert first.status is ExecutionStatus.RUNNING and first.action is not None
    assert result.success and result.final_distance < 0.02 < first.distance
    assert "reach(red_block) succeeded" in result.message


def test_timeout_fails_with_distance(world: TabletopWorld) -> None:
    result = execute_subgoal(world, Subgoal("pick", ("red_block",)), ExpertSkillPolicy(), timeout_s=0.2)
    assert not result.success and "timed out after 0.2 s" in result.message and result.final_distance > 0


def test_unknown_object_is_refused_at_start(world: TabletopWorld) -> None:
    with pytest.raises(UnknownObjectError, match="purple_block"):
        SubgoalExecution(Subgoal("pick", ("purple_block",)), ExpertSkillPolicy(), world.state(), 5.0, 0.0)
    result = execute_subgoal(world, Subgoal("pick", ("purple_block",)), ExpertSkillPolicy(), timeout_s=5.0)
    assert not result.success and result.steps == 0 and "unknown object 'purple_block'" in result.message


class _NaNPolicy:
    name = "nan"

    def act(self, subgoal: Subgoal, state: SceneState) -> np.ndarray:
        return np.array([np.nan, 0.0, 0.0, 0.0])


def test_non_finite_action_fails_instead_of_moving(world: TabletopWorld) -> None:
    before = world.state().ee_position.copy()
    result = execute_subgoal(world, Subgoal("reach", ("red_block",)), _NaNPolicy(), timeout_s=5.0)
    assert not result.success and "invalid action" in result.message
    np.testing.assert_array_equal(world.state().ee_position, before)


def test_bad_timeout_is_refused(world: TabletopWorld) -> None:
    with pytest.raises(ValueError, match="timeout_s"):
        SubgoalExecution(Subgoal("reach", ("red_block",)), ExpertSkillPolicy(), world.state(), 0.0, 0.0)
