"""The `mjx` backend: the tabletop skills as one batched MuJoCo XLA (JAX) simulation, on a GPU or the CPU.

Every env is the one-block skill scene (`skill_scene`), stepped together by one compiled function: the
action path, the Cartesian servo, 20 physics steps, the observation, the reward and the auto-reset all run
on the device, so a step moves only the batch's actions in and its results out. Domain randomization is
drawn per env at each episode start on the device, from the same `RandomizationConfig` knobs as the `mujoco`
backend: block mass, friction of the finger-block-table contacts, joint damping and servo gains edit that
env's copy of the model fields (MJX batches them), and action noise, latency, observation noise and start
offsets are applied around the physics. Episode starts come from a bank drawn on the host by the `mujoco`
backend's samplers (`episode_bank`).

Differences from the `mujoco` backend, by design: one block, the table a plane, float32 physics, and a
mass change does not update MuJoCo's derived constants (`mj_setConst`'s inverse weights), which only scale
the constraint solver's regularization. The parity tests bound what that changes.

Device: JAX's default (`JAX_PLATFORMS=cpu` forces the CPU); compiling the step takes 40-85 s on a CPU.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import io
import os
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from sim.skill_env.action import ACTION_LAYOUT, HOLD_ACTION, skill_action
from sim.skill_env.contract import (
    OBSERVATION_KEYS,
    DeviceStep,
    GoalObservation,
    GoalVecEnv,
    StepResult,
    check_actions,
    check_batch,
    config_from_options,
    step_info,
)
from sim.skill_env.episode_bank import EpisodeBank, sample_bank
from sim.skill_env.observation import GOAL_LAYOUT, OBSERVATION_LAYOUT
from sim.skill_env.randomization import RandomizationConfig
from sim.skill_env.skill_scene import SKILL_BLOCK, skill_scene_model
from sim.skill_env.tabletop_skills import TABLETOP_SKILLS
from sim.tabletop.experts import EXPERTS, ExpertConfig
from sim.tabletop.layout import LayoutRanges
from sim.tabletop.model import ARM_JOINTS, FINGER_JOINTS, MAX_GRIPPER_WIDTH, TABLE_TOP_Z
from sim.tabletop.state import ObjectState, SceneState
from sim.tabletop.world import TabletopWorld, WorldConfig

INSTALL_HINT = (
    "the mjx skill-env backend needs JAX and MuJoCo XLA: `pip install mujoco-mjx==3.3.7 jax==0.6.2` (CPU; "
    "on a CUDA machine `jax[cuda12]==0.6.2`), the versions requirements.txt pins"
)


def _import_mjx() -> Any:
    # JAX would take 75% of a GPU's memory at its first array, starving the learner (torch) beside it.
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    try:
        # mjx's optional Warp module prints a failed import of `warp` at import time: not our concern.
        with contextlib.redirect_stdout(io.StringIO()):
            from mujoco import mjx
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error
    return mjx


@dataclass(frozen=True)
class MjxEnvConfig:
    """Options of the MJX environments (None: the tabletop skill's default)."""

    max_episode_steps: int | None = None
    distance_threshold: float | None = None
    control_dt: float = 0.04
    """Seconds per step: 25 Hz, 20 physics steps of 2 ms, as the `mujoco` backend."""
    solver_iterations: int = 10
    """Newton iterations per physics step (the whole tabletop uses 100): 10 keeps resting blocks still and
    grasps holding in the one-block scene (issue 42's measurement; `hgpo bench envs` checks it beside every
    speed figure)."""
    episode_bank: int = 4096
    """Episode starts drawn on the host at construction (and at a reset with a new seed), ~1 ms each."""
    layout: LayoutRanges = dataclasses.field(default_factory=LayoutRanges)


class EnvState(NamedTuple):
    """One env's whole state on the device (batched: a leading num_envs axis on every leaf)."""

    data: Any
    """mjx.Data."""
    target: Any
    """(3,) the servo's end-effector target."""
    rotation: Any
    """(3, 3) the gripper orientation the servo holds."""
    goal: Any
    entry: Any
    """The bank row this episode started from."""
    history: Any
    """(history length, 4) recent actions, newest first."""
    latency: Any
    scales: Any
    """(4,) this episode's mass, friction, damping and gain scales."""
    observation_noise: Any
    steps: Any
    episode_return: Any
    key: Any


class Params(NamedTuple):
    """What differs between envs of one compiled scene: the skill's rules, the randomization, the bank.

    An argument of the compiled step rather than a constant in it, so that every skill, randomization and
    bank of one scene and batch size shares one compilation (40-85 s on a CPU).
    """

    reach: Any
    """True: the achieved goal is the grip point; False: the block's centre."""
    gripper: Any
    """The skill's fixed gripper command, NaN where the policy commands it."""
    hold: Any
    """(4,) the hold action under the skill's rule: the action history at an episode's start."""
    threshold: Any
    max_steps: Any
    scale_ranges: Any
    """(4, 2) mass, friction, damping and gain scale ranges."""
    latency: Any
    """(2,) action latency range (control steps)."""
    arm_joint_noise: Any
    object_position_noise: Any
    observation_noise: Any
    observation_noise_scale: Any
    gripper_noise: Any
    action_noise: Any
    bank_arm: Any
    bank_block: Any
    bank_goal: Any


class MjxSkillEnv(GoalVecEnv):
    """reach, push or pick_and_place on the one-block skill scene in MJX, `num_envs` at once (GoalVecEnv).

    Observation, goal and action are the `mujoco` backend's (`observe`'s layout, the controller's action),
    so policies trained here export and deploy unchanged.
    """

    backend = "mjx"
    observation_layout = OBSERVATION_LAYOUT
    goal_layout = GOAL_LAYOUT
    action_layout = ACTION_LAYOUT

    def __init__(
        self,
        skill: str,
        num_envs: int,
        seed: int = 0,
        randomization: RandomizationConfig | None = None,
        config: MjxEnvConfig | None = None,
        bank: EpisodeBank | None = None,
    ) -> None:
        check_batch(self.backend, skill, TABLETOP_SKILLS, num_envs)
        self.config = config or MjxEnvConfig()
        self._spec = TABLETOP_SKILLS[skill]
        self.skill, self.num_envs = skill, num_envs
        self.max_episode_steps = self.config.max_episode_steps or self._spec.max_episode_steps
        self.distance_threshold = self.config.distance_threshold or self._spec.distance_threshold
        self.control_dt = self.config.control_dt
        self._physics = scene_physics(self.config.control_dt, self.config.solver_iterations)
        self._given_bank = bank is not None
        self._bank_seed: int | None = None
        self.bank = bank if bank is not None else self._sample_bank(seed)
        self.randomization = randomization
        self._params = self._physics.params(self)
        self._seed = seed
        self._state = self._physics.placeholder(num_envs)
        self._reset_pending = self._rekey = True

    def set_randomization(self, randomization: RandomizationConfig | None) -> None:
        """Change the randomization from the next episode of each env on (None: the nominal model)."""
        self.randomization = randomization
        self._params = self._physics.params(self)

    def set_bank(self, bank: EpisodeBank) -> None:
        """Draw episode starts from this bank from the next episode on (e.g. starts copied from another
        backend); a bank of the same size reuses the compiled step."""
        self.bank, self._given_bank = bank, True
        self._params = self._physics.params(self)

    def seed(self, seed: int) -> None:
        """Reseed: the next reset starts the run this seed always gives (a new bank unless one was given)."""
        if not self._given_bank and seed != self._bank_seed:
            self.bank = self._sample_bank(seed)
            self._params = self._physics.params(self)
        self._seed = seed
        self._reset_pending = self._rekey = True

    def reset(self, seed: int | None = None) -> GoalObservation:
        """New episodes in every env; without a seed each env's random stream goes on (new episodes)."""
        if seed is not None:
            self.seed(seed)
        if self._rekey:
            self._state = self._physics.with_keys(self._state, self._seed)
            self._rekey = False
        zeros = np.zeros((self.num_envs, self.action_dim), dtype=np.float32)
        observation, *_ = self._advance(zeros, reset_all=True)
        self._reset_pending = False
        return observation

    def step(self, actions: np.ndarray) -> StepResult:
        if self._reset_pending:
            raise RuntimeError("reset the mjx env before stepping it (or after reseeding)")
        clean, valid = check_actions(actions, self.num_envs, self.action_dim)
        observation, final, reward, success, done, episode_return, episode_length = self._advance(
            clean.astype(np.float32), reset_all=False
        )
        terminated = np.zeros(self.num_envs, dtype=bool)  # no tabletop skill ends an episode for good
        info = step_info(
            success,
            terminated,
            done,
            valid,
            final,
            np.where(done, episode_return, 0.0).astype(np.float32),
            np.where(done, episode_length, 0).astype(np.int64),
        )
        return StepResult(observation, reward, terminated, done, info)

    @property
    def dlpack_device(self) -> str:
        """Where the env's arrays live, in torch's words: `cuda` for JAX on a GPU, else `cpu`."""
        return "cuda" if self._physics.platform == "gpu" else "cpu"

    def step_on_device(self, actions: Any) -> DeviceStep:
        """`step` without the host: actions read in place from any DLPack exporter on JAX's device (a torch
        tensor), results returned as JAX arrays that `torch.from_dlpack` reads in place. Invalid entries are
        applied as `step` applies them (0 where not finite, clipped), without the per-env flag."""
        if self._reset_pending:
            raise RuntimeError("reset the mjx env before stepping it (or after reseeding)")
        if tuple(actions.shape) != (self.num_envs, self.action_dim):
            raise ValueError(
                f"actions must have shape ({self.num_envs}, {self.action_dim}), got {tuple(actions.shape)}"
            )
        self._state, outputs = self._physics.step_on_device(
            self._state, self._physics.clean_actions(actions), self._params, False
        )
        observation, final, reward, success, done, _, _ = outputs
        return DeviceStep(
            dict(zip(OBSERVATION_KEYS, observation, strict=True)),
            dict(zip(OBSERVATION_KEYS, final, strict=True)),
            reward,
            self._physics.zeros_like(done),
            done,
            success,
        )

    def expert_actions(self) -> np.ndarray:
        """The scripted expert's actions (num_envs, 4) from the true scene: a reference and a demonstrator."""
        expert = ExpertConfig()
        goals = np.asarray(self._state.goal, dtype=np.float64)
        return np.stack(
            [
                np.clip(EXPERTS[self._spec.expert](state, goal, expert, obj), -1.0, 1.0)
                for state, goal, obj in zip(self.states(), goals, self.objects(), strict=True)
            ]
        )

    def states(self) -> list[SceneState]:
        """Each env's current true scene, its block named as the tabletop block its episode was drawn for."""
        return self._physics.scene_states(self._state, self.objects())

    def bank_rows(self) -> list[int]:
        """The bank row each env's current episode started from."""
        return [int(i) for i in np.asarray(self._state.entry)]

    def episode_randomization(self) -> dict[str, np.ndarray]:
        """Each env's draw for its current episode, by `RandomizationConfig` knob (arrays over the batch)."""
        state = self._state
        scales = np.asarray(state.scales)
        names = ("object_mass_scale", "friction_scale", "joint_damping_scale", "actuator_gain_scale")
        draws = {name: scales[:, i] for i, name in enumerate(names)}
        draws["action_latency_steps"] = np.asarray(state.latency)
        draws["observation_noise_m"] = np.asarray(state.observation_noise)
        return draws

    def objects(self) -> list[str]:
        """Each env's episode object (the tabletop block the scene's one block stands for)."""
        return [self.bank.objects[row] for row in self.bank_rows()]

    def _sample_bank(self, seed: int) -> EpisodeBank:
        self._bank_seed = seed
        world = self._physics.world
        return sample_bank(self._spec, self.config.episode_bank, seed, world, self.config.layout)

    def _advance(self, actions: np.ndarray, reset_all: bool) -> tuple[Any, ...]:
        self._state, outputs = self._physics.step(self._state, actions, self._params, reset_all)
        observation, final, reward, success, done, episode_return, episode_length = outputs
        return (
            _observation_dict(observation),
            _observation_dict(final),
            np.array(reward, dtype=np.float32),
            np.array(success, dtype=bool),
            np.array(done, dtype=bool),
            np.array(episode_return),
            np.array(episode_length),
        )


def _observation_dict(vectors: tuple[np.ndarray, ...]) -> GoalObservation:
    return {key: np.array(value) for key, value in zip(OBSERVATION_KEYS, vectors, strict=True)}


HISTORY_LENGTH = 4
"""Action history kept per env: latencies up to 3 control steps (120 ms) share one compiled step."""


@functools.cache
def scene_physics(control_dt: float, solver_iterations: int) -> _Physics:
    """The compiled physics of one scene, shared by every env built with these settings."""
    return _Physics(WorldConfig(control_dt=control_dt), solver_iterations)


class _Physics:
    """The one-block scene in MJX and its compiled batch step (compiled once per batch size)."""

    def __init__(self, world: WorldConfig, solver_iterations: int) -> None:
        mjx = _import_mjx()  # first: it keeps mjx's import noise off the console
        import jax
        import jax.numpy as jnp
        import mujoco

        from sim.skill_env import mjx_control

        self._jax, self._jnp, self._mjx, self._control = jax, jnp, mjx, mjx_control
        model = skill_scene_model(world.physics_dt, solver_iterations)
        self.world = TabletopWorld(world)  # places the arm of each banked start, as the mujoco backend does
        self.substeps = world.substeps
        self.servo = mjx_control.ServoConstants.from_model(model, world)
        data = mujoco.MjData(model)
        mujoco.mj_forward(model, data)
        with np.errstate(over="ignore"):  # float64 limits become float32 infinities
            self.model = mjx.put_model(model)
            self.data0 = mjx.put_data(model, data)
        self.fingers = np.array([model.joint(j).qposadr[0] for j in FINGER_JOINTS])
        self.block = int(model.joint(f"{SKILL_BLOCK}_joint").qposadr[0])
        self.block_body = int(model.body(SKILL_BLOCK).id)
        self.block_size = 2 * np.array(model.geom(f"{SKILL_BLOCK}_geom").size)
        fingers = {model.body(name).id for name in ("left_finger", "right_finger")}
        self.friction_geoms = np.array(
            [g for g in range(model.ngeom) if model.geom_bodyid[g] in fingers | {self.block_body}]
            + [model.geom("table").id]
        )
        self.damped_dofs = np.array([model.joint(j).dofadr[0] for j in ARM_JOINTS + FINGER_JOINTS])
        self.gripper = int(model.actuator("gripper").id)
        self._step = jax.jit(jax.vmap(self._env_step, in_axes=(0, 0, None, None)))
        self._clean = jax.jit(
            lambda a: jnp.clip(jnp.where(jnp.isfinite(a), a, 0.0), -1.0, 1.0).astype(jnp.float32)
        )
        self.zeros_like = jax.jit(jnp.zeros_like)
        self.device = jax.devices()[0]
        self.platform = self.device.platform

    def params(self, env: MjxSkillEnv) -> Params:
        """An env's skill, randomization and bank as the step's argument."""
        jnp = self._jnp
        config = env.randomization or RandomizationConfig()
        low, high = config.action_latency_steps
        if high >= HISTORY_LENGTH:
            raise ValueError(
                f"the mjx backend delays actions by at most {HISTORY_LENGTH - 1} control steps; "
                f"randomization action_latency_steps asks for {high}"
            )
        scales = (
            config.object_mass_scale,
            config.friction_scale,
            config.joint_damping_scale,
            config.actuator_gain_scale,
        )
        f32 = lambda value: jnp.asarray(value, dtype=jnp.float32)  # noqa: E731
        return Params(
            reach=jnp.asarray(env.skill == "reach"),
            gripper=f32(self._control.fixed_gripper(env.skill)),
            hold=f32(skill_action(env.skill, HOLD_ACTION)),
            threshold=f32(env.distance_threshold),
            max_steps=jnp.int32(env.max_episode_steps),
            scale_ranges=f32(scales),
            latency=jnp.asarray([low, high], dtype=jnp.int32),
            arm_joint_noise=f32(config.arm_joint_noise_rad),
            object_position_noise=f32(config.object_position_noise_m),
            observation_noise=f32(config.observation_noise_m),
            observation_noise_scale=f32(config.observation_noise_scale),
            gripper_noise=f32(config.gripper_noise_m),
            action_noise=f32(config.action_noise),
            bank_arm=f32(env.bank.arm_qpos),
            bank_block=f32(env.bank.block_pose),
            bank_goal=f32(env.bank.goal),
        )

    def placeholder(self, num_envs: int) -> EnvState:
        """A well-formed batch to reset from (every env is reset before its first step)."""
        jax, jnp = self._jax, self._jnp
        batch = lambda x: jnp.broadcast_to(jnp.asarray(x), (num_envs, *jnp.shape(x)))  # noqa: E731
        one = EnvState(
            data=self.data0,
            target=jnp.zeros(3),
            rotation=jnp.eye(3),
            goal=jnp.zeros(3),
            entry=jnp.int32(0),
            history=jnp.zeros((HISTORY_LENGTH, 4)),
            latency=jnp.int32(0),
            scales=jnp.ones(4),
            observation_noise=jnp.float32(0.0),
            steps=jnp.int32(0),
            episode_return=jnp.float32(0.0),
            key=jax.random.PRNGKey(0),
        )
        # Committed to the device like the step's outputs: a mix would compile the step a second time.
        return jax.device_put(jax.tree_util.tree_map(batch, one), jax.devices()[0])

    def with_keys(self, state: EnvState, seed: int) -> EnvState:
        """The batch with each env's random stream started from the seed."""
        jax = self._jax
        keys = jax.random.split(jax.random.PRNGKey(seed), state.key.shape[0])
        return state._replace(key=jax.device_put(keys, jax.devices()[0]))

    def step(
        self, state: EnvState, actions: np.ndarray, params: Params, reset_all: bool
    ) -> tuple[EnvState, tuple[Any, ...]]:
        """One control step of the batch on the device; the outputs come back as numpy arrays."""
        new_state, outputs = self.step_on_device(state, self.clean_actions(actions), params, reset_all)
        return new_state, self._jax.device_get(outputs)

    def step_on_device(
        self, state: EnvState, actions: Any, params: Params, reset_all: bool
    ) -> tuple[EnvState, tuple[Any, ...]]:
        """One control step of the batch; the outputs stay on the device as JAX arrays."""
        with np.errstate(over="ignore"):  # tracing mjx.step casts float64 limits to float32 infinities
            return self._step(state, actions, params, reset_all)

    def clean_actions(self, actions: Any) -> Any:
        """A DLPack exporter's actions (a torch tensor, a numpy array) as a float32 JAX array committed to
        the device, 0 where not finite, clipped: one kind of argument for both step paths, or the step
        would compile twice."""
        jax = self._jax
        return self._clean(jax.device_put(jax.dlpack.from_dlpack(actions), self.device))

    def scene_states(self, state: EnvState, objects: list[str]) -> list[SceneState]:
        from scipy.spatial.transform import Rotation  # type: ignore[import-untyped]

        qpos, site_xpos, site_xmat, time = self._jax.device_get(
            (state.data.qpos, state.data.site_xpos, state.data.site_xmat, state.data.time)
        )
        site = self.servo.site
        joints = np.concatenate([self.servo.arm_qpos, self.fingers])
        states = []
        for i, obj in enumerate(objects):
            pose = np.asarray(qpos[i, self.block : self.block + 7], dtype=np.float64)
            matrix = np.asarray(site_xmat[i, site], dtype=np.float64).reshape(3, 3)
            block = ObjectState(obj, "block", pose[:3], pose[3:], self.block_size.copy())
            states.append(
                SceneState(
                    ee_position=np.asarray(site_xpos[i, site], dtype=np.float64),
                    ee_quaternion=Rotation.from_matrix(matrix).as_quat(scalar_first=True),
                    gripper_width=float(qpos[i, self.fingers].sum()),
                    objects={obj: block},
                    joint_names=ARM_JOINTS + FINGER_JOINTS,
                    joint_positions=np.asarray(qpos[i, joints], dtype=np.float64),
                    joint_velocities=np.zeros(len(joints)),
                    time=float(time[i]),
                )
            )
        return states

    # --- one env, traced under vmap ---

    def _model_for(self, scales: Any) -> Any:
        m = self.model
        return m.replace(
            body_mass=m.body_mass.at[self.block_body].multiply(scales[0]),
            geom_friction=m.geom_friction.at[self.friction_geoms, 0].multiply(scales[1]),
            dof_damping=m.dof_damping.at[self.damped_dofs].multiply(scales[2]),
            actuator_gainprm=m.actuator_gainprm.at[:, 0].multiply(scales[3]),
            actuator_biasprm=m.actuator_biasprm.at[:, 1].multiply(scales[3]),
        )

    def _env_step(
        self, state: EnvState, action: Any, params: Params, reset_all: Any
    ) -> tuple[EnvState, tuple[Any, ...]]:
        jax, jnp, mjx, control = self._jax, self._jnp, self._mjx, self._control
        key, act_key, final_key, reset_key, first_key = jax.random.split(state.key, 5)
        model = self._model_for(state.scales)
        history, applied = control.channel_action(
            state.history, state.latency, action, act_key, params.action_noise, params.gripper
        )
        velocity, width = control.command(applied, self.servo)
        target, joints = control.servo_step(
            model, state.data, state.target, state.rotation, velocity, self.servo
        )
        ctrl = state.data.ctrl.at[: len(ARM_JOINTS)].set(joints).at[self.gripper].set(width)
        data = jax.lax.fori_loop(
            0, self.substeps, lambda _, d: mjx.step(model, d), state.data.replace(ctrl=ctrl)
        )
        data = mjx.com_pos(model, mjx.kinematics(model, data))
        stepped = state._replace(data=data, target=target, history=history, key=key)
        final = self._observe(stepped, params, final_key)
        success = jnp.linalg.norm(final[1] - state.goal) <= params.threshold
        reward = jnp.where(success, 0.0, -1.0).astype(jnp.float32)
        steps = state.steps + 1
        episode_return = state.episode_return + reward
        stepped = stepped._replace(steps=steps, episode_return=episode_return)
        done = (steps >= params.max_steps) | reset_all
        fresh = self._reset_env(reset_key, params)._replace(key=key)
        first = self._observe(fresh, params, first_key)
        next_state = control.tree_where(done, fresh, stepped)
        observation = control.tree_where(done, first, final)
        return next_state, (observation, final, reward, success, done, episode_return, steps)

    def _observe(self, state: EnvState, params: Params, key: Any) -> tuple[Any, Any, Any]:
        """(observation, achieved goal, desired goal); the noise on the observation only."""
        jax, jnp, control = self._jax, self._jnp, self._control
        qpos = state.data.qpos
        ee = state.data.site_xpos[self.servo.site]
        position = qpos[self.block : self.block + 3]
        width = qpos[self.fingers].sum()
        achieved = jnp.where(params.reach, ee, position)
        ee_key, position_key, width_key = jax.random.split(key, 3)
        std = state.observation_noise
        seen = control.observation_vector(
            ee + std * jax.random.normal(ee_key, (3,)),
            width + params.gripper_noise * jax.random.normal(width_key),
            position + std * jax.random.normal(position_key, (3,)),
            control.canonical_cube_quaternion(qpos[self.block + 3 : self.block + 7]),
        )
        return seen, achieved.astype(jnp.float32), state.goal.astype(jnp.float32)

    def _reset_env(self, key: Any, params: Params) -> EnvState:
        """A new episode: a bank row, this episode's randomization, the arm placed, the world forwarded."""
        jax, jnp, mjx, servo = self._jax, self._jnp, self._mjx, self.servo
        keys = jax.random.split(key, 7)
        entry = jax.random.randint(keys[0], (), 0, params.bank_arm.shape[0])
        low, high = params.scale_ranges[:, 0], params.scale_ranges[:, 1]
        scales = low + (high - low) * jax.random.uniform(keys[1], (4,))
        latency = jax.random.randint(keys[2], (), params.latency[0], params.latency[1] + 1)
        joint_offset = params.arm_joint_noise * jax.random.uniform(keys[3], (7,), minval=-1.0)
        arm = jnp.clip(params.bank_arm[entry] + joint_offset, servo.joint_low, servo.joint_high)
        offset = params.object_position_noise * jax.random.uniform(keys[4], (2,), minval=-1.0)
        x, y, yaw = params.bank_block[entry]
        noise_low, noise_high = params.observation_noise_scale
        noise_scale = noise_low + (noise_high - noise_low) * jax.random.uniform(keys[5])
        z = TABLE_TOP_Z + self.block_size[2] / 2
        pose = jnp.array([x + offset[0], y + offset[1], z, jnp.cos(yaw / 2), 0.0, 0.0, jnp.sin(yaw / 2)])
        qpos = self.data0.qpos.at[servo.arm_qpos].set(arm).at[self.fingers].set(MAX_GRIPPER_WIDTH / 2)
        qpos = qpos.at[self.block : self.block + 7].set(pose)
        ctrl = self.data0.ctrl.at[: len(ARM_JOINTS)].set(arm).at[self.gripper].set(MAX_GRIPPER_WIDTH)
        model = self._model_for(scales)
        data = mjx.forward(model, self.data0.replace(qpos=qpos, ctrl=ctrl))
        return EnvState(
            data=data,
            target=data.site_xpos[servo.site],
            rotation=data.site_xmat[servo.site].reshape(3, 3),
            goal=params.bank_goal[entry],
            entry=entry,
            history=jnp.tile(params.hold, (HISTORY_LENGTH, 1)),
            latency=latency,
            scales=scales,
            observation_noise=params.observation_noise * noise_scale,
            steps=jnp.int32(0),
            episode_return=jnp.float32(0.0),
            key=keys[6],
        )


def make_mjx_env(
    skill: str, num_envs: int, seed: int, randomization: RandomizationConfig | None, **options: object
) -> MjxSkillEnv:
    """The registry's factory: options are MjxEnvConfig's fields."""
    config = config_from_options("mjx", MjxEnvConfig, options)
    return MjxSkillEnv(skill, num_envs, seed, randomization, config)
