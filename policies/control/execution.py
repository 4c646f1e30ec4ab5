"""The body of the control loop for one subgoal, shared by the controller node and in-process rollouts.

It owns the decisions a controller makes every tick — succeeded? timed out? what action? — and none of
the transport: the node feeds it scenes from DDS, a rollout feeds it scenes from the simulator.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

import numpy as np

from policies.control.skill_policy import SkillPolicy
from sim.tabletop import SceneState, Subgoal, check_subgoal, goal_distance, subgoal_succeeded


class ExecutionStatus(enum.Enum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


@dataclass(frozen=True)
class ControlStep:
    status: ExecutionStatus
    action: np.ndarray | None  # normalized, [-1, 1]^4; None once ended: stop, keep the gripper as it is
    distance: float  # metres between what the skill controls and its grounded goal
    steps: int  # control steps taken so far
    message: str = ""


class SubgoalExecution:
    """Carries out one subgoal; raises `SubgoalError` at construction if the scene can't support it."""

    def __init__(
        self, subgoal: Subgoal, policy: SkillPolicy, state: SceneState, timeout_s: float, start_time: float
    ) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be positive, got {timeout_s}")
        check_subgoal(subgoal, state)
        self.subgoal = subgoal
        self.policy = policy
        self.timeout_s = timeout_s
        self.start_time = start_time
        self.steps = 0

    def step(self, state: SceneState, now: float) -> ControlStep:
        distance = goal_distance(self.subgoal, state)
        if subgoal_succeeded(self.subgoal, state):
            return ControlStep(
                ExecutionStatus.SUCCEEDED, None, distance, self.steps, f"{self.subgoal} succeeded"
            )
        elapsed = now - self.start_time
        if elapsed > self.timeout_s:
            message = f"{self.subgoal} timed out after {elapsed:.1f} s, {distance:.3f} m from its goal"
            return ControlStep(ExecutionStatus.FAILED, None, distance, self.steps, message)
        action = np.asarray(self.policy.act(self.subgoal, state), dtype=float)
        if action.shape != (4,) or not np.all(np.isfinite(action)):
            message = (
                f"skill policy {self.policy.name!r} returned an invalid action {action!r} for {self.subgoal}"
            )
            return ControlStep(ExecutionStatus.FAILED, None, distance, self.steps, message)
        self.steps += 1
        return ControlStep(ExecutionStatus.RUNNING, np.clip(action, -1.0, 1.0), distance, self.steps)
