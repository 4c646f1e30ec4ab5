"""The bridge's safety layer on hand-made commands: clipping, refusal, staleness and the e-stop latch."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ros_nodes.arm.safety import (
    CommandGate,
    Halt,
    SafetyLimits,
    clip_joint_velocity,
    clip_linear,
    joint_position_command,
    scale_to_norm,
)

LIMITS = SafetyLimits(max_linear_speed=0.25, command_timeout_s=0.1, workspace_lookahead_s=0.1)
CENTRE = np.array([0.5, 0.0, 0.3])
UP = np.array([0.0, 0.0, 0.2])


def test_speed_is_scaled_down_keeping_direction() -> None:
    v = scale_to_norm(np.array([3.0, 4.0, 0.0]), 0.25)
    assert np.linalg.norm(v) == pytest.approx(0.25) and v[0] / v[1] == pytest.approx(0.75)
    assert np.array_equal(scale_to_norm(np.array([0.1, 0.0, 0.0]), 0.25), [0.1, 0.0, 0.0])
    assert np.linalg.norm(clip_linear(np.array([1.0, 1.0, 1.0]), CENTRE, LIMITS)) == pytest.approx(0.25)


def test_workspace_box_stops_motion_at_its_faces() -> None:
    top = np.array([0.5, 0.0, LIMITS.workspace_high[2]])
    assert clip_linear(UP, top, LIMITS)[2] == 0.0
    assert clip_linear(-UP, top, LIMITS)[2] == pytest.approx(-0.2)  # back inside is fine
    near = top - [0.0, 0.0, 0.01]
    assert clip_linear(UP, near, LIMITS)[2] == pytest.approx(0.01 / LIMITS.workspace_lookahead_s)
    assert np.array_equal(clip_linear(np.array([0.1, 0.0, 0.0]), near, LIMITS), [0.1, 0.0, 0.0])


def test_outside_the_box_only_motion_back_in_and_never_uncommanded() -> None:
    below = np.array([0.5, 0.0, LIMITS.workspace_low[2] - 0.05])
    assert np.array_equal(clip_linear(np.zeros(3), below, LIMITS), np.zeros(3))
    assert clip_linear(-UP, below, LIMITS)[2] == 0.0
    assert clip_linear(UP, below, LIMITS)[2] == pytest.approx(0.2)


def test_joint_limits() -> None:
    qdot = clip_joint_velocity(np.array([4.0, 1.0]), np.array([2.0, 2.0]))
    assert np.allclose(qdot, [2.0, 0.5])  # scaled together: the joint-space direction is kept
    q = joint_position_command(
        np.array([0.0, 1.0]), np.array([1.0, 1.0]), 0.5, np.array([[-1, 1], [-1, 1.2]])
    )
    assert np.allclose(q, [0.5, 1.2])


def test_gate_moves_only_on_a_fresh_valid_twist() -> None:
    gate = CommandGate(LIMITS)
    assert gate.halt(0.0) is Halt.NO_COMMAND
    assert gate.offer(UP, np.zeros(3), now=1.0) is None
    assert gate.halt(1.05) is None and np.allclose(gate.twist(1.05, CENTRE).linear, UP)
    assert gate.halt(1.2) is Halt.STALE and not np.any(gate.twist(1.2, CENTRE).linear)


@pytest.mark.parametrize(
    ("linear", "angular", "stamp_problem", "reason"),
    [
        ((math.nan, 0, 0), (0, 0, 0), None, "non-finite"),
        ((0, 0, 0.1), (0, math.inf, 0), None, "non-finite"),
        ((0, 0, 0.1), (0, 0, 0), "stamp 0", "twist stamp 0"),
    ],
)
def test_invalid_twists_are_refused_and_hold_the_arm(linear, angular, stamp_problem, reason) -> None:
    gate = CommandGate(LIMITS)
    gate.offer(UP, np.zeros(3), now=1.0)
    refused = gate.offer(np.array(linear), np.array(angular), now=1.01, stamp_problem=stamp_problem)
    assert refused is not None and reason in refused
    assert gate.halt(1.02) is Halt.REFUSED and not np.any(gate.twist(1.02, CENTRE).linear)


def test_gripper_width_is_checked() -> None:
    gate = CommandGate(LIMITS)
    assert gate.check_gripper(0.04) is None
    for width in (-0.01, 0.2, math.nan):
        assert "outside" in (gate.check_gripper(width) or "")


def test_estop_latches_until_released_and_reset() -> None:
    gate = CommandGate(LIMITS)
    gate.offer(UP, np.zeros(3), now=1.0)
    assert gate.estop(True) and not gate.estop(True)  # latched once
    assert gate.halt(1.01) is Halt.ESTOP
    gate.offer(UP, np.zeros(3), now=1.02)
    assert gate.halt(1.03) is Halt.ESTOP and not np.any(gate.twist(1.03, CENTRE).linear)
    ok, message = gate.reset_estop()
    assert not ok and "still asserted" in message and gate.estop_latched
    gate.estop(False)
    assert gate.halt(1.04) is Halt.ESTOP  # releasing does not reset
    ok, _ = gate.reset_estop()
    assert ok and not gate.estop_latched
    assert gate.halt(1.05) is Halt.NO_COMMAND  # the command from before the stop does not resume
    assert gate.offer(UP, np.zeros(3), now=1.06) is None and gate.halt(1.07) is None


def test_limits_are_validated() -> None:
    with pytest.raises(ValueError, match="workspace"):
        SafetyLimits(workspace_low=(0, 0, 1), workspace_high=(1, 1, 0.5))
    with pytest.raises(ValueError, match="command_timeout_s"):
        SafetyLimits(command_timeout_s=0.0)
