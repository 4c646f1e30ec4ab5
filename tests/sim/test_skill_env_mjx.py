"""The `mjx` backend on CPU JAX: the contract, the same trajectories as the `mujoco` backend, experts that
succeed, randomization drawn on the device.

Every env here has 4 envs and a bank of 16 starts, so the whole module (and the PPO smoke test) shares one
compiled step: compiling it costs 40-85 s on a CPU, a step of 4 envs ~15 ms.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from sim.skill_env import DEFAULT_RANDOMIZATION_FILE, RandomizationConfig, make_skill_env
from sim.skill_env.episode_bank import bank_from_scenes
from sim.skill_env.mjx_backend import MjxSkillEnv

pytest.importorskip("mujoco.mjx")

NUM_ENVS = 4
BANK = 16
OPTIONS = {"episode_bank": BANK}


@pytest.fixture(scope="module")
def env() -> Iterator[MjxSkillEnv]:
    env = make_skill_env("mjx", "pick_and_place", NUM_ENVS, seed=0, **OPTIONS)
    assert isinstance(env, MjxSkillEnv)
    yield env
    env.close()


def test_steps_follow_the_contract_with_auto_reset(env: MjxSkillEnv) -> None:
    env.set_randomization(None)
    with pytest.raises(RuntimeError, match="reset the mjx env"):
        MjxSkillEnv("reach", NUM_ENVS, seed=1, config=env.config).step(np.zeros((NUM_ENVS, 4)))
    obs = env.reset(seed=0)
    assert {key: (value.shape, value.dtype) for key, value in obs.items()} == {
        "observation": ((NUM_ENVS, 14), np.float32),
        "achieved_goal": ((NUM_ENVS, 3), np.float32),
        "desired_goal": ((NUM_ENVS, 3), np.float32),
    }
    np.testing.assert_allclose(obs["observation"][:, 4:7], obs["achieved_goal"], atol=1e-6)  # the block
    first_goal = obs["desired_goal"].copy()
    actions = np.tile([[0.0, 0.0, 0.5, -1.0]], (NUM_ENVS, 1))
    actions[1, 0], actions[2, 1] = np.nan, 3.0
    for step in range(1, env.max_episode_steps + 1):
        obs, reward, terminated, truncated, info = env.step(actions)
        final = info["final_observation"]
        np.testing.assert_array_equal(
            reward, env.compute_reward(final["achieved_goal"], final["desired_goal"])
        )
        assert info["is_action_valid"].tolist() == [True, False, False, True]
        assert not terminated.any()
        if step < env.max_episode_steps:
            assert not truncated.any() and not info["time_outs"].any()
            assert all(np.array_equal(obs[key], final[key]) for key in obs)
            assert np.all(info["episode_length"] == 0)
    assert truncated.all() and info["time_outs"].all()
    assert info["episode_length"].tolist() == [env.max_episode_steps] * NUM_ENVS
    np.testing.assert_array_equal(
        info["episode_return"], -env.max_episode_steps
    )  # lifting nothing wins nothing
    assert np.all(final["observation"][:, 2] > obs["observation"][:, 2])  # ended up high; starts low again
    assert not np.array_equal(obs["desired_goal"], first_goal)
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        env.step(np.zeros((2, 4)))


def test_the_same_seed_gives_the_same_run(env: MjxSkillEnv) -> None:
    env.set_randomization(RandomizationConfig.load(DEFAULT_RANDOMIZATION_FILE))
    runs = []
    for _ in range(2):
        observations = [env.reset(seed=5)["observation"]]
        observations += [env.step(np.full((NUM_ENVS, 4), 0.3)).observation["observation"] for _ in range(3)]
        runs.append(np.stack(observations))
    np.testing.assert_array_equal(runs[0], runs[1])
    assert not np.array_equal(env.reset()["observation"], runs[0][0])  # no seed: the streams go on
    assert not np.array_equal(env.reset(seed=6)["observation"], runs[0][0])


@pytest.mark.parametrize(("skill", "tolerance"), [("reach", 1e-4), ("pick_and_place", 2e-3), ("push", 1e-2)])
def test_the_same_actions_from_the_same_starts_move_as_on_the_mujoco_backend(
    env: MjxSkillEnv, skill: str, tolerance: float
) -> None:
    """Starts copied from the mujoco backend's envs, then its expert's actions played on both: the grip
    point and the block stay within `tolerance` (m) of the mujoco backend's over a whole episode (float32
    physics, 10 solver iterations and a table plane against float64, 100 iterations and a table box), and
    the same episodes succeed."""
    mujoco_env = make_skill_env("mujoco", skill, NUM_ENVS, seed=3)
    start = mujoco_env.reset()
    twin = MjxSkillEnv(skill, NUM_ENVS, seed=3, config=env.config)
    copies = BANK // NUM_ENVS  # the bank's row i is the mujoco backend's env i % NUM_ENVS
    goals = np.tile(start["desired_goal"], (copies, 1))
    twin.set_bank(bank_from_scenes(mujoco_env.states() * copies, mujoco_env.objects() * copies, goals))
    twin_start = twin.reset()
    rows = [row % NUM_ENVS for row in twin.bank_rows()]
    np.testing.assert_allclose(twin_start["observation"], start["observation"][rows], atol=1e-5)
    worst = 0.0
    for _ in range(mujoco_env.max_episode_steps):
        actions = mujoco_env.expert_actions()
        reference, mine = mujoco_env.step(actions), twin.step(actions[rows])
        a = reference.info["final_observation"]["observation"][rows]
        b = mine.info["final_observation"]["observation"]
        positions = [0, 1, 2, 4, 5, 6]  # the grip point and the block
        worst = max(worst, float(np.abs(a[:, positions] - b[:, positions]).max()))
    assert worst <= tolerance
    np.testing.assert_array_equal(mine.info["success"], reference.info["success"][rows])
    mujoco_env.close()


def test_the_scripted_expert_succeeds_on_it(env: MjxSkillEnv) -> None:
    env.set_randomization(None)
    env.reset(seed=0)
    successes = []
    for _ in range(3 * env.max_episode_steps):
        result = env.step(env.expert_actions())
        successes += result.info["success"][result.truncated].tolist()
    assert len(successes) == 3 * NUM_ENVS
    assert np.mean(successes) >= 10 / 12


def test_randomization_is_drawn_per_env_on_the_device(env: MjxSkillEnv) -> None:
    config = RandomizationConfig.load(DEFAULT_RANDOMIZATION_FILE)
    env.set_randomization(config)
    obs = env.reset(seed=2)
    draws = env.episode_randomization()
    for name in ("object_mass_scale", "friction_scale", "joint_damping_scale", "actuator_gain_scale"):
        low, high = getattr(config, name)
        assert np.all((draws[name] >= low) & (draws[name] <= high)) and np.ptp(draws[name]) > 0, name
    assert set(draws["action_latency_steps"].tolist()) <= {0, 1, 2}
    # Observation noise on the observation only: the achieved goal is the true block centre.
    true_block = np.array(
        [state.object(obj).position for state, obj in zip(env.states(), env.objects(), strict=True)]
    )
    np.testing.assert_allclose(obs["achieved_goal"], true_block, atol=1e-6)
    assert np.abs(obs["observation"][:, 4:7] - true_block).max() > 1e-4
    env.set_randomization(None)
    env.reset(seed=2)
    nominal = env.episode_randomization()
    assert np.all(nominal["object_mass_scale"] == 1) and np.all(nominal["action_latency_steps"] == 0)
    with pytest.raises(ValueError, match="at most 3 control steps"):
        env.set_randomization(RandomizationConfig(action_latency_steps=(0, 5)))


def test_a_step_on_the_device_hands_over_in_place_and_equals_the_host_step(env: MjxSkillEnv) -> None:
    """`step_on_device` reads a torch tensor's actions and returns JAX arrays that torch reads without a
    copy (the GPU learner's path), and it is the same step as `step`, invalid actions included."""
    torch = pytest.importorskip("torch")
    env.set_randomization(RandomizationConfig.load(DEFAULT_RANDOMIZATION_FILE))
    actions = torch.tensor([[0.2, -0.1, 0.5, -1.0]]).repeat(NUM_ENVS, 1)
    actions[1, 0], actions[2, 1] = float("nan"), 3.0
    env.reset(seed=4)
    on_device = [env.step_on_device(actions) for _ in range(3)]
    env.reset(seed=4)
    on_host = [env.step(actions.numpy()) for _ in range(3)]
    for device, host in zip(on_device, on_host, strict=True):
        for key, value in device.observation.items():
            tensor = torch.from_dlpack(value)
            assert tensor.data_ptr() == value.unsafe_buffer_pointer()  # torch reads JAX's buffer in place
            np.testing.assert_array_equal(tensor.numpy(), host.observation[key])
            np.testing.assert_array_equal(
                np.asarray(device.final_observation[key]), host.info["final_observation"][key]
            )
        np.testing.assert_array_equal(np.asarray(device.reward), host.reward)
        np.testing.assert_array_equal(np.asarray(device.success), host.info["success"])
        assert not np.asarray(device.terminated).any() and not np.asarray(device.truncated).any()
    assert env.dlpack_device == "cpu"
    with pytest.raises(ValueError, match=r"shape \(4, 4\)"):
        env.step_on_device(torch.zeros(2, 4))
