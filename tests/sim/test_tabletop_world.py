"""The world: reset, velocity servo, limits, determinism and rendering."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from sim.tabletop import SceneState, TabletopWorld, WorldConfig, make_task
from sim.tabletop.model import BLOCKS, MAX_GRIPPER_WIDTH, PLATES


def _down(state: SceneState) -> np.ndarray:
    """The grip frame's z axis (the approach direction) in the world."""
    w, x, y, z = state.ee_quaternion
    return np.array([2 * (x * z + w * y), 2 * (y * z - w * x), 1 - 2 * (x * x + y * y)])


def _rollout(world: TabletopWorld, seed: int, steps: int = 60) -> np.ndarray:
    """Seeded random commands; returns every joint and object position along the way."""
    rng = np.random.default_rng(seed)
    state = world.reset(make_task("sort", seed))
    trace = []
    for _ in range(steps):
        state = world.step(rng.uniform(-0.25, 0.25, 3), float(rng.uniform(0, MAX_GRIPPER_WIDTH)))
        trace.append(np.concatenate([state.joint_positions, *(o.position for o in state.objects.values())]))
    return np.array(trace)


def test_reset_state(world) -> None:
    task = make_task("pick_place", 1)
    state = world.reset(task)
    assert state.time == 0.0
    assert set(state.objects) == set(BLOCKS) | set(PLATES)
    assert state.names("plate") == PLATES
    assert state.gripper_width == pytest.approx(MAX_GRIPPER_WIDTH)
    np.testing.assert_allclose(_down(state), (0, 0, -1), atol=1e-6)
    assert state.joint_names[:7] == tuple(f"joint{i}" for i in range(1, 8))
    assert state.joint_positions.shape == state.joint_velocities.shape == (9,)
    for name, (x, y, _) in task.layout.blocks.items():
        np.testing.assert_allclose(state.object(name).position[:2], (x, y))
        assert state.object(name).category == "block"
    with pytest.raises(ValueError, match="read-only"):
        state.ee_position[0] = 1.0


def test_same_seed_same_trajectory_other_seed_differs() -> None:
    a = _rollout(TabletopWorld(), seed=4)
    b = _rollout(TabletopWorld(), seed=4)
    c = _rollout(TabletopWorld(), seed=5)
    assert np.array_equal(a, b)
    assert not np.allclose(a, c)


def test_reset_forgets_the_previous_episode(world) -> None:
    fresh = _rollout(TabletopWorld(), seed=4)
    _rollout(world, seed=9)
    assert np.array_equal(_rollout(world, seed=4), fresh)


def test_tracks_velocity_and_holds_orientation(world) -> None:
    start = world.reset(make_task("reach", 0))
    state = start
    for _ in range(25):  # 1 s at 0.1 m/s along y
        state = world.step(np.array([0.0, 0.1, 0.0]), MAX_GRIPPER_WIDTH)
    moved = state.ee_position - start.ee_position
    np.testing.assert_allclose(moved, (0.0, 0.1, 0.0), atol=0.01)
    np.testing.assert_allclose(_down(state), (0, 0, -1), atol=0.01)
    assert state.time == pytest.approx(1.0)


def test_speed_is_clipped(world) -> None:
    start = world.reset(make_task("reach", 0))
    state = start
    for _ in range(10):
        state = world.step(np.array([0.0, -10.0, 0.0]), MAX_GRIPPER_WIDTH)
    distance = np.linalg.norm(state.ee_position - start.ee_position)
    assert 0.5 * world.config.max_speed * state.time < distance <= world.config.max_speed * state.time + 1e-3


def test_blocked_motion_does_not_wind_up(world) -> None:
    world.reset(make_task("reach", 0))
    for _ in range(100):  # drive into the table for 4 s
        state = world.step(np.array([0.0, 0.0, -0.25]), MAX_GRIPPER_WIDTH)
    low = state.ee_position[2]
    assert low >= world.config.workspace.low[2] - 0.01
    state = world.step(np.array([0.0, 0.0, 0.25]), MAX_GRIPPER_WIDTH)
    state = world.step(np.array([0.0, 0.0, 0.25]), MAX_GRIPPER_WIDTH)
    assert state.ee_position[2] > low + 0.005, "the arm should rise at once, not unwind a stored error"


def test_workspace_bounds_the_target(world) -> None:
    world.reset(make_task("reach", 0))
    for _ in range(100):
        state = world.step(np.array([0.25, 0.0, 0.0]), MAX_GRIPPER_WIDTH)
    assert state.ee_position[0] <= world.config.workspace.high[0] + 0.005


def test_gripper_width_follows_the_command(world) -> None:
    world.reset(make_task("reach", 0))
    for _ in range(10):
        state = world.step(np.zeros(3), 0.0)
    assert state.gripper_width < 0.002
    for _ in range(10):
        state = world.step(np.zeros(3), 1.0)  # clipped to the widest opening
    assert state.gripper_width == pytest.approx(MAX_GRIPPER_WIDTH, abs=0.002)


@pytest.mark.parametrize(
    ("velocity", "width"),
    [(np.array([np.nan, 0, 0]), 0.08), (np.zeros(3), float("inf")), (np.array([0, np.inf, 0]), 0.0)],
)
def test_non_finite_commands_raise(world, velocity, width) -> None:
    world.reset(make_task("reach", 0))
    with pytest.raises(ValueError, match="non-finite"):
        world.step(velocity, width)


def test_bad_shapes_and_configs_raise(world) -> None:
    world.reset(make_task("reach", 0))
    with pytest.raises(ValueError, match="shape"):
        world.step(np.zeros(2), 0.08)
    with pytest.raises(ValueError, match="multiple"):
        WorldConfig(control_dt=0.005, physics_dt=0.002)
    assert WorldConfig(control_dt=0.01).substeps == 5


def test_render_gives_a_frame_or_a_clear_error() -> None:
    script = (
        "from sim.tabletop import TabletopWorld, make_task\n"
        "with TabletopWorld() as world:\n"
        "    world.reset(make_task('sort', 0))\n"
        "    try:\n"
        "        frame = world.render(width=64, height=48)\n"
        "    except RuntimeError as error:\n"
        "        assert 'MUJOCO_GL' in str(error), error\n"
        "        print('unavailable')\n"
        "    else:\n"
        "        assert frame.shape == (48, 64, 3) and frame.dtype.name == 'uint8' and frame.any()\n"
        "        print('rendered')\n"
    )
    env = {**os.environ, "MUJOCO_GL": os.environ.get("MUJOCO_GL", "egl")}
    result = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] in {"rendered", "unavailable"}


def test_sim_never_imports_ros_or_torch() -> None:
    script = "import sys, sim.tabletop\nprint(sorted({'rclpy', 'torch'} & set(sys.modules)))"
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert result.stdout.strip() == "[]", result.stderr


def test_recording_keeps_the_frame_rate_and_survives_other_renders(tmp_path) -> None:
    code = f"""
import numpy as np
from pathlib import Path
from sim.tabletop import make_task, WorldConfig
from sim.tabletop.recording import RecordingWorld
world = RecordingWorld(Path({str(tmp_path / "v.gif")!r}), WorldConfig(control_dt=0.01), fps=30)
world.reset(make_task("reach", 0))
world.render(64, 48)  # another size: must not close the video
for _ in range(300):
    world.step(np.zeros(3), 0.08)
world.close()
print(world.frames)
"""
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "MUJOCO_GL": "egl"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert int(result.stdout.split()[-1]) == 91  # 3 s at 30 fps, both ends included
