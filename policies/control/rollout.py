"""Executing subgoals in-process against a `TabletopWorld`, with the same loop body as the controller node."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from policies.control.execution import ControlStep, ExecutionStatus, SubgoalExecution
from policies.control.skill_policy import SkillPolicy
from sim.tabletop import SceneState, Subgoal, SubgoalError, TabletopWorld, action_to_command


@dataclass(frozen=True)
class SubgoalResult:
    success: bool
    message: str
    steps: int  # world steps taken
    final_distance: float


class ControlWatch(Protocol):
    """Hears what an in-process subgoal does, where the graph's controller and bridge would publish it (a
    recording of the run: `hgpo run-task --record`)."""

    def commanded(self, step: ControlStep, velocity: np.ndarray, gripper_width: float) -> None:
        """A controller tick: its command (m/s, m), before the world steps under it."""

    def stepped(self, state: SceneState) -> None:
        """The world after one of its steps."""


def execute_subgoal(
    world: TabletopWorld,
    subgoal: Subgoal,
    policy: SkillPolicy,
    timeout_s: float,
    action_hold: int = 1,
    watch: ControlWatch | None = None,
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
        if watch is not None:
            watch.commanded(step, velocity, width)
        for _ in range(action_hold):
            state = world.step(velocity, width)
            if watch is not None:
                watch.stepped(state)
        steps += action_hold
