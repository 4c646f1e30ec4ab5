"""The contract's reserved keys computed once, for every backend."""

from __future__ import annotations

import numpy as np

from sim.skill_env.contract import time_outs


def test_time_outs_are_truncations_that_did_not_also_terminate() -> None:
    # The mujoco, robosuite and isaacgym backends reported `truncated` itself, so an episode both cut by the
    # time limit and ended for good was a time-out there and not in the gymnasium backend.
    terminated = np.array([False, True, False, True])
    truncated = np.array([False, False, True, True])
    np.testing.assert_array_equal(time_outs(terminated, truncated), [False, False, True, False])
