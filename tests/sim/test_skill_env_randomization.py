"""Domain randomization: the YAML config, each knob's effect, reproducibility, the nominal run restored."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest

from sim.skill_env import DEFAULT_RANDOMIZATION_FILE, RandomizationConfig, make_skill_env
from sim.skill_env.mujoco_backend import TabletopSkillEnv
from sim.skill_env.randomization import sample_episode

STEPS = 40
DEFAULT = RandomizationConfig.load()


def _trace(
    randomization: RandomizationConfig | None, seed: int = 0, env: TabletopSkillEnv | None = None
) -> np.ndarray:
    """Observations and true achieved goals while the scripted expert pushes (it acts on the true scene)."""
    own = env is None
    if env is None:
        env = make_skill_env("mujoco", "push", 2, seed=seed, randomization=randomization)
    assert isinstance(env, TabletopSkillEnv)
    env.set_randomization(randomization)
    obs = env.reset(seed=seed)
    rows = [np.concatenate([obs["observation"], obs["achieved_goal"]], axis=1)]
    for _ in range(STEPS):
        obs = env.step(env.expert_actions()).info["final_observation"]
        rows.append(np.concatenate([obs["observation"], obs["achieved_goal"]], axis=1))
    if own:
        env.close()
    return np.array(rows)


@pytest.fixture(scope="module")
def nominal() -> np.ndarray:
    return _trace(None)


def test_default_file_loads_and_bad_files_are_refused(tmp_path: Path) -> None:
    assert DEFAULT_RANDOMIZATION_FILE.exists()
    assert DEFAULT.observation_noise_m == pytest.approx(0.01)
    assert DEFAULT.action_latency_steps == (0, 2)
    bad = tmp_path / "bad.yaml"
    bad.write_text("object_mass: [0.5, 2.0]\n")
    with pytest.raises(ValueError, match=r"randomization: unknown key\(s\) object_mass; known: object_mass_"):
        RandomizationConfig.load(bad)
    bad.write_text("friction_scale: [1.5, 0.5]\n")
    with pytest.raises(ValueError, match="friction_scale"):
        RandomizationConfig.load(bad)
    bad.write_text("action_latency_steps: 2\n")
    with pytest.raises(ValueError, match=r"action_latency_steps must be a list of 2 values, got 2"):
        RandomizationConfig.load(bad)
    with pytest.raises(ValueError, match="cannot read"):
        RandomizationConfig.load(tmp_path / "missing.yaml")


def test_identity_config_is_the_nominal_run_bit_for_bit(nominal: np.ndarray) -> None:
    assert np.array_equal(_trace(RandomizationConfig()), nominal)


@pytest.mark.parametrize(
    "knob",
    [
        "object_mass_scale",
        "friction_scale",
        "joint_damping_scale",
        "actuator_gain_scale",
        "observation_noise_m",
        "gripper_noise_m",
        "action_noise",
        "action_latency_steps",
        "arm_joint_noise_rad",
        "object_position_noise_m",
    ],
)
def test_each_knob_changes_the_run(nominal: np.ndarray, knob: str) -> None:
    # Ranges pinned away from identity so that every draw moves the knob.
    strong = RandomizationConfig(
        object_mass_scale=(3.0, 4.0),
        friction_scale=(0.2, 0.3),
        joint_damping_scale=(20.0, 30.0),
        actuator_gain_scale=(0.3, 0.4),
        observation_noise_m=0.01,
        gripper_noise_m=0.002,
        action_noise=0.1,
        action_latency_steps=(2, 2),
        arm_joint_noise_rad=0.1,
        object_position_noise_m=0.02,
    )
    changed = _trace(strong.only(knob))
    assert not np.allclose(changed, nominal, atol=1e-4), f"{knob} left the run unchanged"
    assert np.array_equal(_trace(strong.only(knob)), changed), f"{knob} is not reproducible under a seed"


def test_randomized_runs_differ_by_seed_and_episode() -> None:
    a, b = _trace(DEFAULT, seed=1), _trace(DEFAULT, seed=2)
    assert not np.allclose(a, b)


def test_turning_randomization_off_restores_the_nominal_run(nominal: np.ndarray) -> None:
    with make_skill_env("mujoco", "push", 2, seed=0, randomization=DEFAULT) as env:
        assert isinstance(env, TabletopSkillEnv)
        randomized = _trace(DEFAULT, env=env)
        assert not np.allclose(randomized, nominal)
        assert np.array_equal(_trace(None, env=env), nominal)


def test_observation_noise_leaves_the_achieved_goal_true(nominal: np.ndarray) -> None:
    noisy = _trace(RandomizationConfig(observation_noise_m=0.01))
    assert np.array_equal(noisy[..., 14:], nominal[..., 14:])  # achieved goals: the true object
    assert 0.003 < np.std(noisy[..., :3] - nominal[..., :3]) < 0.02  # ~1 cm on the grip point


def test_observation_noise_scale_draws_each_episodes_noise_level(nominal: np.ndarray) -> None:
    """An episode's noise is observation_noise_m times a draw from the scale's range, the episode's last draw;
    a single-valued range draws nothing, so the default config's streams are what they were without it."""
    silent = RandomizationConfig(observation_noise_m=0.01, observation_noise_scale=(0.0, 0.0))
    assert np.array_equal(_trace(silent), nominal)
    ranged = dataclasses.replace(DEFAULT, observation_noise_scale=(0.0, 1.0))
    rng = np.random.default_rng(0)
    full, drawn = sample_episode(DEFAULT, np.random.default_rng(0), 7, 4), sample_episode(ranged, rng, 7, 4)
    assert full.observation_noise_m == DEFAULT.observation_noise_m
    for knob in (
        "object_mass_scale",
        "friction_scale",
        "action_latency_steps",
        "arm_joint_offset",
        "object_offset",
    ):
        np.testing.assert_array_equal(getattr(drawn, knob), getattr(full, knob))
    levels = [drawn.observation_noise_m] + [
        sample_episode(ranged, rng, 7, 4).observation_noise_m for _ in range(199)
    ]
    assert 0.0 <= min(levels) < 0.001 and 0.009 < max(levels) <= 0.01
    for bad in ((0.5, 0.2), (-0.1, 1.0)):
        with pytest.raises(ValueError, match="observation_noise_scale must be a range 0 <= low <= high"):
            RandomizationConfig(observation_noise_scale=bad)
