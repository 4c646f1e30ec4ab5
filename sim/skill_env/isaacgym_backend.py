"""The `isaacgym` backend: the tabletop skills as one Isaac Gym (Preview 4) simulation of `num_envs` Frankas.

For users who have Isaac Gym: it is not on any package registry (NVIDIA ships it as a download for
Python 3.6-3.8 with a CUDA GPU), so it cannot be installed here, and **this backend is not exercised by
the project's CI**. It is written against Isaac Gym's tensor API as IsaacGymEnvs' Franka tasks use it
(`acquire_*_tensor`, `refresh_*`, `set_dof_position_target_tensor`, `simulate` / `fetch_results`), and
mirrors the `mujoco` backend: the same skills, goal samplers, thresholds, observation (through
`observation_vector`), action (end-effector velocity fraction + gripper, by damped-least-squares
differential IK on the grip point's Jacobian, as `sim.tabletop.ik`) and randomization knobs.

Differences from the tabletop, by design of Isaac Gym: one cube per env (the sampled episode's object),
the table is the ground plane (z = 0, the tabletop's frame), and the arm starts at home, so episodes are
twice as long by default.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

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
)
from sim.skill_env.observation import (
    GOAL_LAYOUT,
    OBSERVATION_LAYOUT,
    canonical_cube_quaternion,
    observation_vector,
)
from sim.skill_env.randomization import EpisodeRandomization, RandomizationConfig, sample_episode
from sim.skill_env.tabletop_skills import TABLETOP_SKILLS
from sim.tabletop.experts import action_to_command
from sim.tabletop.ik import IKConfig, Workspace
from sim.tabletop.layout import LayoutRanges
from sim.tabletop.model import BLOCK_MASS, BLOCK_SIZE, HOME_QPOS, MAX_GRIPPER_WIDTH
from sim.tabletop.world import WorldConfig

GRIP_OFFSET = 0.1034
"""Grip point below the panda_hand frame's origin along its z axis (m), as the tabletop's `grip` site."""
INSTALL_HINT = (
    "the isaacgym skill-env backend needs NVIDIA Isaac Gym (Preview 4), which no package registry serves: "
    "download it from https://developer.nvidia.com/isaac-gym and `pip install -e isaacgym/python` on a "
    "machine with a CUDA GPU (NVIDIA's build supports Python <= 3.8 and this project needs 3.11, so a build "
    "of Isaac Gym for 3.11 is needed); set ISAACGYM_ASSETS to its assets folder if not beside the package. "
    "This backend is not exercised by the project's CI"
)


@dataclass(frozen=True)
class IsaacGymEnvConfig:
    """Options of the Isaac Gym environments (None: the tabletop skill's default, episodes doubled)."""

    max_episode_steps: int | None = None
    distance_threshold: float | None = None
    device: str = "cuda:0"
    """Simulation and tensor device; "cpu" runs PhysX on the CPU."""
    physics_dt: float = 0.01
    decimation: int = 4
    """Physics steps per control step: 4 x 0.01 s = the tabletop's 25 Hz."""
    asset_root: str = ""
    """Folder holding urdf/franka_description; empty: $ISAACGYM_ASSETS, else the assets of the Isaac Gym
    download (beside its python/ folder)."""
    env_spacing: float = 1.5


def _import_isaacgym() -> tuple[Any, Any, Any]:
    try:
        from isaacgym import gymapi, gymtorch  # Isaac Gym must be imported before torch
    except ImportError as error:
        raise ImportError(f"{INSTALL_HINT} ({error})") from error
    import torch

    return gymapi, gymtorch, torch


def _asset_root(config: IsaacGymEnvConfig) -> str:
    if config.asset_root:
        return config.asset_root
    if "ISAACGYM_ASSETS" in os.environ:
        return os.environ["ISAACGYM_ASSETS"]
    import isaacgym

    return os.path.join(os.path.dirname(isaacgym.__file__), "..", "..", "assets")


class IsaacGymSkillEnv(GoalVecEnv):
    """reach, push or pick_and_place with `num_envs` Frankas in one Isaac Gym simulation (see GoalVecEnv)."""

    backend = "isaacgym"
    observation_layout = OBSERVATION_LAYOUT
    goal_layout = GOAL_LAYOUT
    action_layout = ACTION_LAYOUT

    def __init__(
        self,
        skill: str,
        num_envs: int,
        seed: int = 0,
        randomization: RandomizationConfig | None = None,
        config: IsaacGymEnvConfig | None = None,
    ) -> None:
        check_batch(self.backend, skill, TABLETOP_SKILLS, num_envs)
        self.gymapi, self.gymtorch, self.torch = _import_isaacgym()
        self.config = config or IsaacGymEnvConfig()
        self.spec = TABLETOP_SKILLS[skill]
        self.skill, self.num_envs = skill, num_envs
        self.max_episode_steps = self.config.max_episode_steps or 2 * self.spec.max_episode_steps
        self.distance_threshold = self.config.distance_threshold or self.spec.distance_threshold
        self.control_dt = self.config.physics_dt * self.config.decimation
        self.world = WorldConfig(control_dt=0.04)
        self.randomization = randomization
        self.device = self.config.device
        self.gym = self.gymapi.acquire_gym()
        self._create_sim()
        self._channels = [ActionChannel(skill) for _ in range(num_envs)]
        self._episode_rngs: list[np.random.Generator] = []
        self._noise_rngs: list[np.random.Generator] = []
        self._goals = np.zeros((num_envs, 3))
        self._observation_noise = np.zeros(num_envs)
        """Each env's episode draw of the noise on observed positions (m)."""
        self._targets = self.torch.zeros((num_envs, 3), device=self.device)
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._returns = np.zeros(num_envs, dtype=np.float32)
        self._seed(seed)

    # ---- building the simulation -------------------------------------------------------------------
    def _create_sim(self) -> None:
        gymapi, gym, config = self.gymapi, self.gym, self.config
        params = gymapi.SimParams()
        params.dt = config.physics_dt
        params.substeps = 2
        params.up_axis = gymapi.UP_AXIS_Z
        params.gravity = gymapi.Vec3(0.0, 0.0, -9.81)
        params.use_gpu_pipeline = self.device.startswith("cuda")
        params.physx.use_gpu = self.device.startswith("cuda")
        params.physx.num_position_iterations = 8
        params.physx.num_velocity_iterations = 1
        params.physx.contact_offset = 0.005
        params.physx.rest_offset = 0.0
        device_id = int(self.device.split(":")[1]) if ":" in self.device else 0
        self.sim = gym.create_sim(device_id, device_id, gymapi.SIM_PHYSX, params)
        if self.sim is None:
            raise RuntimeError(f"Isaac Gym could not create a PhysX simulation on {self.device}")
        plane = gymapi.PlaneParams()
        plane.normal = gymapi.Vec3(0.0, 0.0, 1.0)
        gym.add_ground(self.sim, plane)

        arm_options = gymapi.AssetOptions()
        arm_options.fix_base_link = True
        arm_options.disable_gravity = True  # gravity-compensated, as the tabletop's arm
        arm_options.flip_visual_attachments = True
        arm_options.default_dof_drive_mode = gymapi.DOF_MODE_POS
        franka = gym.load_asset(
            self.sim, _asset_root(config), "urdf/franka_description/robots/franka_panda.urdf", arm_options
        )
        cube_options = gymapi.AssetOptions()
        cube_options.density = BLOCK_MASS / BLOCK_SIZE**3
        cube = gym.create_box(self.sim, BLOCK_SIZE, BLOCK_SIZE, BLOCK_SIZE, cube_options)

        self._dof_props = gym.get_asset_dof_properties(franka)
        self._dof_props["driveMode"][:] = gymapi.DOF_MODE_POS
        self._dof_props["stiffness"][:7], self._dof_props["damping"][:7] = 400.0, 40.0
        self._dof_props["stiffness"][7:], self._dof_props["damping"][7:] = 800.0, 40.0
        self._lower = self.torch.tensor(self._dof_props["lower"], device=self.device)
        self._upper = self.torch.tensor(self._dof_props["upper"], device=self.device)

        spacing = config.env_spacing
        lower, upper = gymapi.Vec3(-spacing, -spacing, 0.0), gymapi.Vec3(spacing, spacing, spacing)
        per_row = int(np.ceil(np.sqrt(self.num_envs)))
        self.envs, self._arms, self._cubes = [], [], []
        for i in range(self.num_envs):
            env = gym.create_env(self.sim, lower, upper, per_row)
            arm = gym.create_actor(env, franka, gymapi.Transform(), "franka", i, 0)
            gym.set_actor_dof_properties(env, arm, self._dof_props)
            start = gymapi.Transform()
            start.p = gymapi.Vec3(0.5, 0.0, BLOCK_SIZE / 2)
            self._cubes.append(gym.create_actor(env, cube, start, "cube", i, 0))
            self.envs.append(env)
            self._arms.append(arm)
        self._nominal_cube = gym.get_actor_rigid_body_properties(self.envs[0], self._cubes[0])[0].mass
        self._nominal_shapes = [
            [p.friction for p in gym.get_actor_rigid_shape_properties(self.envs[0], actor)]
            for actor in (self._arms[0], self._cubes[0])
        ]
        gym.prepare_sim(self.sim)

        wrap = self.gymtorch.wrap_tensor
        self._root = wrap(gym.acquire_actor_root_state_tensor(self.sim)).view(self.num_envs, 2, 13)
        self._dof = wrap(gym.acquire_dof_state_tensor(self.sim)).view(self.num_envs, -1, 2)
        self._bodies = wrap(gym.acquire_rigid_body_state_tensor(self.sim)).view(self.num_envs, -1, 13)
        hand = gym.find_actor_rigid_body_handle(self.envs[0], self._arms[0], "panda_hand")
        self._hand = hand
        jacobian = wrap(gym.acquire_jacobian_tensor(self.sim, "franka"))
        self._jacobian = jacobian[:, hand - 1, :, :7]  # fixed base: body i's Jacobian is row i - 1
        self._dof_targets = self.torch.zeros((self.num_envs, self._dof.shape[1]), device=self.device)
        self._home = self.torch.tensor(HOME_QPOS, device=self.device)
        self._actor_ids = self.torch.arange(
            2 * self.num_envs, dtype=self.torch.int32, device=self.device
        ).view(self.num_envs, 2)
        # Isaac Gym updates body poses only in simulate(): measure the home grip pose once, and stand it in
        # for the poses of envs reset since the last physics step (exact without arm joint noise).
        self._dof[:, :7, 0] = self._home
        self._dof[:, 7:9, 0] = MAX_GRIPPER_WIDTH / 2
        self._dof_targets[:] = self._dof[:, :, 0]
        gym.set_dof_state_tensor(self.sim, self.gymtorch.unwrap_tensor(self._dof))
        gym.set_dof_position_target_tensor(self.sim, self.gymtorch.unwrap_tensor(self._dof_targets))
        gym.simulate(self.sim)
        gym.fetch_results(self.sim, True)
        self._fresh = self.torch.zeros(self.num_envs, dtype=self.torch.bool, device=self.device)
        self._refresh()
        self._home_grip, self._home_rotation = (t.clone() for t in self._measured_grip())

    # ---- the contract -----------------------------------------------------------------------------
    def _seed(self, seed: int) -> None:
        streams = [s.spawn(2) for s in np.random.SeedSequence(seed).spawn(self.num_envs)]
        self._episode_rngs = [np.random.default_rng(a) for a, _ in streams]
        self._noise_rngs = [np.random.default_rng(b) for _, b in streams]

    def reset(self, seed: int | None = None) -> GoalObservation:
        if seed is not None:
            self._seed(seed)
        self._reset_envs(np.arange(self.num_envs))
        return self._observe()

    def step(self, actions: np.ndarray) -> StepResult:
        clean, valid = check_actions(actions, self.num_envs, self.action_dim)
        noise = 0.0 if self.randomization is None else self.randomization.action_noise
        applied = np.stack(
            [channel(clean[i], self._noise_rngs[i], noise) for i, channel in enumerate(self._channels)]
        )
        commands = [action_to_command(a, self.world) for a in applied]
        velocity = self.torch.tensor(
            np.stack([c[0] for c in commands]), dtype=self.torch.float32, device=self.device
        )
        width = self.torch.tensor([c[1] for c in commands], dtype=self.torch.float32, device=self.device)
        self._servo(velocity, width)
        for _ in range(self.config.decimation):
            self.gym.simulate(self.sim)
            self.gym.fetch_results(self.sim, True)
        self._fresh[:] = False
        final = self._observe()
        success = self.goal_reached(final["achieved_goal"], final["desired_goal"])
        reward = np.where(success, 0.0, -1.0).astype(np.float32)
        self._steps += 1
        self._returns += reward
        truncated = self._steps >= self.max_episode_steps
        episode_return = np.where(truncated, self._returns, 0.0).astype(np.float32)
        episode_length = np.where(truncated, self._steps, 0)
        observation = final
        if truncated.any():
            self._reset_envs(np.flatnonzero(truncated))
            observation = self._observe()
        terminated = np.zeros(self.num_envs, dtype=bool)  # no tabletop skill ends an episode for good
        info = step_info(success, terminated, truncated, valid, final, episode_return, episode_length)
        return StepResult(observation, reward, terminated, truncated, info)

    def close(self) -> None:
        self.gym.destroy_sim(self.sim)

    # ---- internals --------------------------------------------------------------------------------
    def _refresh(self) -> None:
        for refresh in (
            self.gym.refresh_actor_root_state_tensor,
            self.gym.refresh_dof_state_tensor,
            self.gym.refresh_rigid_body_state_tensor,
            self.gym.refresh_jacobian_tensors,
        ):
            refresh(self.sim)

    def _measured_grip(self) -> tuple[Any, Any]:
        """Grip points (N, 3) and hand quaternions (N, 4, x y z w as Isaac Gym keeps them), last step."""
        hand = self._bodies[:, self._hand]
        quaternion = hand[:, 3:7]
        offset = self.torch.zeros((self.num_envs, 3), device=self.device)
        offset[:, 2] = GRIP_OFFSET
        return hand[:, :3] + _rotate(self.torch, quaternion, offset), quaternion

    def _grip(self) -> tuple[Any, Any]:
        """As _measured_grip, with the home pose standing in for envs reset since the last physics step."""
        grip, quaternion = self._measured_grip()
        fresh = self._fresh.unsqueeze(-1)
        return (
            self.torch.where(fresh, self._home_grip, grip),
            self.torch.where(fresh, self._home_rotation, quaternion),
        )

    def _observe(self) -> GoalObservation:
        self._refresh()
        grip, _ = self._grip()
        ee = grip.cpu().numpy().astype(np.float64)
        width = self._dof[:, 7:9, 0].sum(dim=1, keepdim=True).cpu().numpy().astype(np.float64)
        cube = self._root[:, 1, :7].cpu().numpy().astype(np.float64)
        position, quaternion = cube[:, :3], cube[:, [6, 3, 4, 5]]  # x y z w -> w x y z
        config = self.randomization
        achieved = ee.copy() if self.skill == "reach" else position.copy()
        if config is not None and (self._observation_noise.max() > 0 or config.gripper_noise_m > 0):
            for i, rng in enumerate(self._noise_rngs):
                ee[i] += rng.normal(0.0, self._observation_noise[i], 3)
                width[i] += rng.normal(0.0, config.gripper_noise_m)
                position[i] += rng.normal(0.0, self._observation_noise[i], 3)
        return {
            "observation": observation_vector(ee, width, position, canonical_cube_quaternion(quaternion)),
            "achieved_goal": achieved.astype(np.float32),
            "desired_goal": self._goals.astype(np.float32),
        }

    def _servo(self, velocity: Any, width: Any) -> None:
        """Integrate the velocity into grip targets and take one damped-least-squares IK step to them."""
        torch, world, ik = self.torch, self.world, IKConfig()
        self._refresh()
        grip, quaternion = self._grip()
        low = torch.tensor(Workspace().low, device=self.device)
        high = torch.tensor(Workspace().high, device=self.device)
        target = torch.clamp(self._targets + velocity * self.control_dt, low, high)
        lead = target - grip
        distance = lead.norm(dim=1, keepdim=True).clamp(min=1e-9)
        target = torch.where(
            distance > world.max_target_lead, grip + lead * world.max_target_lead / distance, target
        )
        self._targets = target
        # Grip-point Jacobian from the hand's: v_grip = v_hand + w x r = v_hand - [r]x w.
        jacobian = self._jacobian.clone()
        r = grip - self._bodies[:, self._hand, :3]
        jacobian[:, :3] -= torch.cross(r.unsqueeze(-1).expand(-1, -1, 7), jacobian[:, 3:], dim=1)
        error = torch.zeros((self.num_envs, 6), device=self.device)
        error[:, :3] = target - grip
        error[:, 3:] = _orientation_error(torch, self._home_rotation, quaternion)
        q = self._dof[:, :7, 0]
        secondary = ik.nullspace_gain * (self._home - q)
        normal = jacobian @ jacobian.transpose(1, 2) + ik.damping**2 * torch.eye(6, device=self.device)
        correction = torch.linalg.solve(normal, (error - (jacobian @ secondary.unsqueeze(-1)).squeeze(-1)))
        step = secondary + (jacobian.transpose(1, 2) @ correction.unsqueeze(-1)).squeeze(-1)
        step = step.clamp(-ik.max_joint_step, ik.max_joint_step)
        self._dof_targets[:, :7] = torch.clamp(q + step, self._lower[:7], self._upper[:7])
        self._dof_targets[:, 7:9] = (width / 2).unsqueeze(-1)
        self.gym.set_dof_position_target_tensor(self.sim, self.gymtorch.unwrap_tensor(self._dof_targets))

    def _reset_envs(self, ids: np.ndarray) -> None:
        torch = self.torch
        for i in ids:
            episode = self.spec.sample(self._episode_rngs[i], LayoutRanges())
            params = None
            if self.randomization is not None:
                params = sample_episode(self.randomization, self._noise_rngs[i], 7, 1)
                self._observation_noise[i] = params.observation_noise_m
            self._randomize(int(i), params)
            x, y, yaw = episode.layout.blocks[episode.obj]
            if params is not None:
                x, y = x + params.object_offset[0, 0], y + params.object_offset[0, 1]
            self._root[i, 1, :3] = torch.tensor([x, y, BLOCK_SIZE / 2], device=self.device)
            self._root[i, 1, 3:7] = torch.tensor(
                [0.0, 0.0, np.sin(yaw / 2), np.cos(yaw / 2)], device=self.device
            )
            self._root[i, 1, 7:] = 0.0
            offset = np.zeros(7) if params is None else params.arm_joint_offset
            arm = torch.tensor(np.array(HOME_QPOS) + offset, dtype=torch.float32, device=self.device)
            self._dof[i, :7, 0] = arm
            self._dof[i, 7:9, 0] = MAX_GRIPPER_WIDTH / 2
            self._dof[i, :, 1] = 0.0
            self._dof_targets[i, :7] = arm
            self._dof_targets[i, 7:9] = MAX_GRIPPER_WIDTH / 2
            self._goals[i] = episode.goal
            self._channels[i].reset(0 if params is None else params.action_latency_steps)
            self._steps[i], self._returns[i] = 0, 0.0
        index = torch.tensor(ids, dtype=torch.long, device=self.device)
        arms, cubes = self._actor_ids[index, 0].contiguous(), self._actor_ids[index, 1].contiguous()
        unwrap = self.gymtorch.unwrap_tensor
        self.gym.set_actor_root_state_tensor_indexed(self.sim, unwrap(self._root), unwrap(cubes), len(cubes))
        self.gym.set_dof_state_tensor_indexed(self.sim, unwrap(self._dof), unwrap(arms), len(arms))
        self.gym.set_dof_position_target_tensor_indexed(
            self.sim, unwrap(self._dof_targets), unwrap(arms), len(arms)
        )
        self._fresh[index] = True
        self._targets[index] = self._home_grip[index]

    def _randomize(self, i: int, params: EpisodeRandomization | None) -> None:
        """Per-env physics properties through Isaac Gym's actor property API (nominal when params is None)."""
        gym, env = self.gym, self.envs[i]
        mass = 1.0 if params is None else params.object_mass_scale
        friction = 1.0 if params is None else params.friction_scale
        damping = 1.0 if params is None else params.joint_damping_scale
        gain = 1.0 if params is None else params.actuator_gain_scale
        bodies = gym.get_actor_rigid_body_properties(env, self._cubes[i])
        bodies[0].mass = self._nominal_cube * mass
        gym.set_actor_rigid_body_properties(env, self._cubes[i], bodies, True)
        for actor, nominal in zip((self._arms[i], self._cubes[i]), self._nominal_shapes, strict=True):
            shapes = gym.get_actor_rigid_shape_properties(env, actor)
            for shape, value in zip(shapes, nominal, strict=True):
                shape.friction = value * friction
            gym.set_actor_rigid_shape_properties(env, actor, shapes)
        props = gym.get_actor_dof_properties(env, self._arms[i])
        props["stiffness"][:] = self._dof_props["stiffness"] * gain
        props["damping"][:] = self._dof_props["damping"] * damping
        gym.set_actor_dof_properties(env, self._arms[i], props)


def _rotate(torch: Any, quaternion: Any, vector: Any) -> Any:
    """Rotate vectors (N, 3) by quaternions (N, 4, x y z w)."""
    xyz, w = quaternion[:, :3], quaternion[:, 3:]
    t = 2.0 * torch.cross(xyz, vector, dim=1)
    return vector + w * t + torch.cross(xyz, t, dim=1)


def _orientation_error(torch: Any, desired: Any, current: Any) -> Any:
    """Axis-angle error (N, 3) taking `current` to `desired` (both x y z w), as IsaacGymEnvs' OSC does."""
    conjugate = torch.cat([-current[:, :3], current[:, 3:]], dim=1)
    x1, y1, z1, w1 = desired.unbind(1)
    x2, y2, z2, w2 = conjugate.unbind(1)
    relative = torch.stack(
        [
            w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
            w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2,
            w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2,
            w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2,
        ],
        dim=1,
    )
    return relative[:, :3] * torch.sign(relative[:, 3:])


def make_isaacgym_env(
    skill: str, num_envs: int, seed: int, randomization: RandomizationConfig | None, **options: object
) -> IsaacGymSkillEnv:
    """The registry's factory: options are IsaacGymEnvConfig's fields."""
    config = config_from_options("isaacgym", IsaacGymEnvConfig, options)
    return IsaacGymSkillEnv(skill, num_envs, seed, randomization, config)
