"""The `mujoco` backend: the tabletop skills on `num_envs` TabletopWorlds stepped by a pool of threads.

Each env owns a `TabletopWorld` (its own MjModel, so randomization is per env) and two random streams
spawned from the seed: one for episodes (layouts, goals, starts), one for randomization and noise, so that
turning randomization on or off leaves the sequence of episodes unchanged. MuJoCo releases the GIL
inside `mj_step`, so the physics of several envs runs in parallel on threads; the Python around it
(IK servo, observation) is small next to the 20 physics steps of one 25 Hz control step.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import numpy as np

from sim.skill_env.action import ACTION_LAYOUT, ActionChannel
from sim.skill_env.contract import (
    GoalObservation,
    GoalVecEnv,
    StepResult,
    check_actions,
    check_batch,
    config_from_options,
    step_info,
    zero_observation,
)
from sim.skill_env.observation import GOAL_LAYOUT, OBSERVATION_LAYOUT, observe
from sim.skill_env.randomization import (
    EpisodeRandomization,
    RandomizationConfig,
    noisy_state,
    sample_episode,
)
from sim.skill_env.tabletop_randomizer import TabletopRandomizer
from sim.skill_env.tabletop_skills import TABLETOP_SKILLS, TabletopSkill
from sim.tabletop.experts import EXPERTS, ExpertConfig, action_to_command
from sim.tabletop.layout import Layout, LayoutRanges
from sim.tabletop.model import ARM_JOINTS, BLOCKS, PLATES
from sim.tabletop.state import SceneState
from sim.tabletop.world import TabletopWorld, WorldConfig


@dataclass(frozen=True)
class TabletopEnvConfig:
    """Options of the tabletop environments (None: the skill's own default)."""

    max_episode_steps: int | None = None
    """Control steps per episode (defaults: reach 50, push and pick_and_place 75)."""
    distance_threshold: float | None = None
    """Success radius (m); defaults: reach 0.02 (the `above` predicate's tolerance), push and
    pick_and_place 0.03."""
    control_dt: float = 0.04
    """Seconds per step: 25 Hz, the controller node's rate."""
    num_threads: int = 0
    """Threads stepping the envs; 0: one per available CPU core, at most num_envs."""
    layout: LayoutRanges = dataclasses.field(default_factory=LayoutRanges)


class _Env:
    """One environment of the batch: its world, random streams and episode bookkeeping."""

    def __init__(
        self,
        skill: TabletopSkill,
        config: TabletopEnvConfig,
        threshold: float,
        randomization: RandomizationConfig | None,
    ) -> None:
        self.skill, self.config, self.threshold = skill, config, threshold
        self.world = TabletopWorld(WorldConfig(control_dt=config.control_dt))
        self.randomizer = TabletopRandomizer(self.world.model)
        self.randomization = randomization
        self.episode_rng = np.random.default_rng()
        self.noise_rng = np.random.default_rng()
        self.params: EpisodeRandomization | None = None
        self.channel = ActionChannel(skill.name)
        self.obj, self.goal = BLOCKS[0], np.zeros(3)
        self.state: SceneState | None = None
        self.steps, self.episode_return = 0, 0.0

    def seed(self, seed: np.random.SeedSequence) -> None:
        episodes, noise = seed.spawn(2)
        self.episode_rng = np.random.default_rng(episodes)
        self.noise_rng = np.random.default_rng(noise)

    def reset(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        episode = self.skill.sample(self.episode_rng, self.config.layout)
        layout, joint_offset = episode.layout, None
        config = self.randomization
        self.params = None
        if config is not None:
            self.params = sample_episode(config, self.noise_rng, len(ARM_JOINTS), len(BLOCKS))
            layout = _shifted(layout, self.params.object_offset)
            joint_offset = self.params.arm_joint_offset
        self.randomizer.apply(self.world.data, self.params)
        self.state = self.world.reset_layout(layout, episode.grip_start, joint_offset)
        self.obj, self.goal = episode.obj, episode.goal
        self.channel.reset(0 if self.params is None else self.params.action_latency_steps)
        self.steps, self.episode_return = 0, 0.0
        return self.observe()

    def step(self, action: np.ndarray) -> tuple[float, bool]:
        """Apply one (validated) action; return (reward, success)."""
        noise = 0.0 if self.randomization is None else self.randomization.action_noise
        action = self.channel(action, self.noise_rng, noise)
        velocity, width = action_to_command(action, self.world.config)
        self.state = self.world.step(velocity, width)
        achieved = self.skill.achieved(self.state, self.obj)
        success = bool(np.linalg.norm(achieved - self.goal) <= self.threshold)
        reward = 0.0 if success else -1.0
        self.steps += 1
        self.episode_return += reward
        return reward, success

    def observe(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(observation, achieved goal, desired goal); noise, if any, on the observation only."""
        assert self.state is not None, "reset before observing"
        state, config, params = self.state, self.randomization, self.params
        seen = state
        if (
            config is not None
            and params is not None
            and max(params.observation_noise_m, config.gripper_noise_m) > 0
        ):
            seen = noisy_state(state, self.noise_rng, params.observation_noise_m, config.gripper_noise_m)
        return observe(seen, self.obj), self.skill.achieved(state, self.obj), self.goal

    def expert_action(self, expert: ExpertConfig) -> np.ndarray:
        assert self.state is not None, "reset before asking the expert"
        # push's expert takes the plate it pushes onto as an argument; the goal vector alone decides.
        extra = (PLATES[0],) if self.skill.expert == "push" else ()
        action = EXPERTS[self.skill.expert](self.state, self.goal, expert, self.obj, *extra)
        return np.clip(action, -1.0, 1.0)


def _shifted(layout: Layout, offsets: np.ndarray) -> Layout:
    blocks = {
        name: (x + float(dx), y + float(dy), yaw)
        for (name, (x, y, yaw)), (dx, dy) in zip(layout.blocks.items(), offsets, strict=True)
    }
    return Layout(blocks=blocks, plates=layout.plates)


class TabletopSkillEnv(GoalVecEnv):
    """reach, push or pick_and_place on the MuJoCo tabletop, `num_envs` at once (see GoalVecEnv).

    `observation_layout` is `sim.skill_env.observation.OBSERVATION_LAYOUT`, built by `observe` from the
    same `SceneState` the ROS bridge publishes; the action is the controller's normalized action.
    `achieved_goal` is the true value (privileged, for relabelling); observation noise, when randomized,
    is on `observation` only.
    """

    backend = "mujoco"
    observation_layout = OBSERVATION_LAYOUT
    goal_layout = GOAL_LAYOUT
    action_layout = ACTION_LAYOUT

    def __init__(
        self,
        skill: str,
        num_envs: int,
        seed: int = 0,
        randomization: RandomizationConfig | None = None,
        config: TabletopEnvConfig | None = None,
    ) -> None:
        check_batch(self.backend, skill, TABLETOP_SKILLS, num_envs)
        self.config = config or TabletopEnvConfig()
        spec = TABLETOP_SKILLS[skill]
        self.skill, self.num_envs = skill, num_envs
        self.max_episode_steps = self.config.max_episode_steps or spec.max_episode_steps
        self.distance_threshold = self.config.distance_threshold or spec.distance_threshold
        self.control_dt = self.config.control_dt
        self._envs = [
            _Env(spec, self.config, self.distance_threshold, randomization) for _ in range(num_envs)
        ]
        threads = self.config.num_threads or len(os.sched_getaffinity(0))
        self.num_threads = max(1, min(threads, num_envs))
        self._pool = ThreadPoolExecutor(self.num_threads) if self.num_threads > 1 else None
        self._chunks = np.array_split(np.arange(num_envs), self.num_threads)
        self._seed = seed
        self._obs = zero_observation(self.num_envs, self.obs_dim, self.goal_dim)
        self.seed(seed)

    @property
    def randomization(self) -> RandomizationConfig | None:
        return self._envs[0].randomization

    def set_randomization(self, randomization: RandomizationConfig | None) -> None:
        """Change the randomization from the next episode of each env on (None: the nominal model)."""
        for env in self._envs:
            env.randomization = randomization

    def seed(self, seed: int) -> None:
        """Reseed every env's streams; the next reset starts the run that this seed always gives."""
        self._seed = seed
        for env, child in zip(self._envs, np.random.SeedSequence(seed).spawn(self.num_envs), strict=True):
            env.seed(child)

    def reset(self, seed: int | None = None) -> GoalObservation:
        if seed is not None:
            self.seed(seed)
        self._run(self._reset_chunk)
        return {key: value.copy() for key, value in self._obs.items()}

    def step(self, actions: np.ndarray) -> StepResult:
        clean, valid = check_actions(actions, self.num_envs, self.action_dim)
        n = self.num_envs
        reward = np.zeros(n, dtype=np.float32)
        success = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        episode_return = np.zeros(n, dtype=np.float32)
        episode_length = np.zeros(n, dtype=np.int64)
        final = zero_observation(self.num_envs, self.obs_dim, self.goal_dim)

        def step_chunk(indices: np.ndarray) -> None:
            for i in indices:
                env = self._envs[i]
                reward[i], success[i] = env.step(clean[i])
                self._write(final, i, env.observe())
                if env.steps >= self.max_episode_steps:
                    truncated[i] = True
                    episode_return[i], episode_length[i] = env.episode_return, env.steps
                    self._write(self._obs, i, env.reset())
                else:
                    for key in final:
                        self._obs[key][i] = final[key][i]

        self._run(step_chunk)
        terminated = np.zeros(self.num_envs, dtype=bool)  # no tabletop skill ends an episode for good
        info = step_info(success, terminated, truncated, valid, final, episode_return, episode_length)
        observation = {key: value.copy() for key, value in self._obs.items()}
        return StepResult(observation, reward, terminated, truncated, info)

    def expert_actions(self) -> np.ndarray:
        """The scripted expert's actions (num_envs, 4) from the true scene: a reference and a demonstrator."""
        expert = ExpertConfig()
        return np.stack([env.expert_action(expert) for env in self._envs])

    def states(self) -> list[SceneState]:
        """Each env's current true scene (for rendering, debugging and deployment parity tests)."""
        return [env.state for env in self._envs if env.state is not None]

    def objects(self) -> list[str]:
        """Each env's episode object (the block its observation describes)."""
        return [env.obj for env in self._envs]

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown()
            self._pool = None
        for env in self._envs:
            env.world.close()

    def _reset_chunk(self, indices: np.ndarray) -> None:
        for i in indices:
            self._write(self._obs, i, self._envs[i].reset())

    def _run(self, work: Callable[[np.ndarray], None]) -> None:
        if self._pool is None:
            work(self._chunks[0])
            return
        for future in [self._pool.submit(work, chunk) for chunk in self._chunks]:
            future.result()

    @staticmethod
    def _write(target: GoalObservation, i: int, values: tuple[np.ndarray, np.ndarray, np.ndarray]) -> None:
        target["observation"][i], target["achieved_goal"][i], target["desired_goal"][i] = values


def make_tabletop_env(
    skill: str, num_envs: int, seed: int, randomization: RandomizationConfig | None, **options: object
) -> TabletopSkillEnv:
    """The registry's factory: options are TabletopEnvConfig's fields."""
    config = config_from_options("mujoco", TabletopEnvConfig, options)
    return TabletopSkillEnv(skill, num_envs, seed, randomization, config)
