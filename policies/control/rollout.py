"""Executing subgoals in-process against a `TabletopWorld`, with the same loop body as the controller node."""

from __future__ import annotations

from dataclasses import dataclass

from policies.control.execution import ExecutionStatus, SubgoalExecution
from policies.control.skill_policy import SkillPolicy
from sim.tabletop import Subgoal, SubgoalError, TabletopWorld, action_to_command


@dataclass(frozen=True)
class SubgoalResult:
    success: bool
    message: str
    steps: int  # world steps taken
    final_distance: float


def execute_subgoal(
    world: TabletopWorld, subgoal: Subgoal, policy: SkillPolicy, timeout_s: float, action_hold: int = 1
) -> SubgoalResult:
    """Run one subgoal to success, failure or timeout; simulated time is the clock.

    `action_hold` world steps pass between two controller ticks, e.g. 4 for a 25 Hz controller commanding a
    world stepped at 100 Hz, as in the ROS graph.
    """
    if action_hold < 1:
        raise ValueError(f"action_hold must be >= 1, got {action_hold}")
    state = world.state()
    try:
        execution = SubgoalExecution(subgoal, policy, state, timeout_s, start_time=state.time)
    except SubgoalError as err:
        return SubgoalResult(False, str(err), 0, float("nan"))
    steps = 0
    while True:
        step = execution.step(state, now=state.time)
        if step.status is not ExecutionStatus.RUNNING:
            return SubgoalResult(step.status is ExecutionStatus.SUCCEEDED, step.message, steps, step.distance)
        assert step.action is not None  # a running step always carries an action
        velocity, width = action_to_command(step.action, world.config)
        for _ in range(action_hold):
            state = world.step(velocity, width)
        steps += action_hold
