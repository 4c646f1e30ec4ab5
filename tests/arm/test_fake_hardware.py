"""The fake arm's joint integrator: limits, staleness and the gripper, as mock hardware behaves."""

from __future__ import annotations

import numpy as np
import pytest

from ros_nodes.arm.fake_hardware import FakeArm, FakeArmLimits

LIMITS = FakeArmLimits(
    position=np.array([[-1.0, 1.0], [-1.0, 0.5]]),
    velocity=np.array([1.0, 2.0]),
    command_timeout_s=0.1,
    gripper_speed=0.1,
)


def run(arm: FakeArm, seconds: float, start: float = 0.0, dt: float = 0.01, command=None) -> float:
    now = start
    for _ in range(round(seconds / dt)):
        if command is not None:
            arm.command(*command, now)
        now += dt
        arm.step(dt, now)
    return now


def test_velocity_is_integrated_within_the_velocity_limits() -> None:
    arm = FakeArm(LIMITS, np.zeros(2), 0.0)
    run(arm, 0.2, command=("velocity", np.array([0.5, 5.0])))
    assert np.allclose(arm.q, [0.1, 0.4]) and np.allclose(arm.qdot, [0.5, 2.0])


def test_position_limits_stop_the_joint() -> None:
    arm = FakeArm(LIMITS, np.zeros(2), 0.0)
    run(arm, 1.0, command=("velocity", np.array([0.0, 2.0])))
    assert arm.q[1] == pytest.approx(0.5) and arm.qdot[1] == 0.0


def test_position_command_is_approached_at_the_velocity_limit() -> None:
    arm = FakeArm(LIMITS, np.zeros(2), 0.0)
    run(arm, 0.1, command=("position", np.array([0.8, -0.05])))
    assert np.allclose(arm.q, [0.1, -0.05])


def test_stale_command_stops_the_arm() -> None:
    arm = FakeArm(LIMITS, np.zeros(2), 0.0)
    arm.command("velocity", np.array([1.0, 0.0]), 0.0)
    run(arm, 0.5)  # no new command after t = 0
    assert arm.q[0] == pytest.approx(0.1, abs=0.011) and not np.any(arm.qdot)


@pytest.mark.parametrize(("values", "reason"), [([np.nan, 0.0], "non-finite"), ([1.0], "1 values for 2")])
def test_bad_commands_are_dropped(values, reason) -> None:
    arm = FakeArm(LIMITS, np.zeros(2), 0.0)
    assert reason in (arm.command("velocity", np.array(values), 0.0) or "")
    run(arm, 0.05)
    assert not np.any(arm.q)


def test_gripper_moves_at_its_speed_and_reset_forgets_commands() -> None:
    arm = FakeArm(LIMITS, np.zeros(2), 0.08)
    arm.command_gripper(0.0)
    now = run(arm, 0.3, command=("velocity", np.array([0.1, 0.0])))
    assert arm.gripper_width == pytest.approx(0.05) and arm.gripper_velocity == pytest.approx(-0.1)
    arm.reset(np.zeros(2), 0.08)
    run(arm, 0.05, start=now)
    assert not np.any(arm.q) and arm.gripper_width == 0.08
