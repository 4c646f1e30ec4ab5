"""The `robosuite` backend: robosuite's Panda under operational-space control, behind the batched contract.

Each env is a `robosuite.make` task (Lift, Stack or PickPlace) with the OSC_POSITION controller at 25 Hz,
its output scaled so that the normalized action means what it means on the tabletop: a fraction of
0.25 m/s for the grip point, and the gripper closing at +1. Observations are built by the tabletop's own
`observe` from a `SceneState` expressed in the tabletop's frame (origin under the robot base, z = 0 on
the table top), so a policy trained on the `mujoco` backend runs here unchanged: that is the transfer test.

Skills (the object the observation describes, and the goal):
- reach (Lift): the grip point to a goal sampled as the tabletop's (in the air near where it starts);
- pick_and_place (Lift): the cube to a goal sampled as the tabletop's (half in the air, half on the table);
- stack (Stack): cubeA onto cubeB's top face;
- bin_pick_place (PickPlace, one object): the can into its slot in the other bin.

Randomization goes through robosuite's own `DynamicsModder` (masses, friction, joint damping, from the
env's seeded draw), the OSC stiffness, and the same start-pose, action and observation disturbances as the
tabletop; a seed reproduces a run (robosuite's placement generator is reseeded in place). Cubes start
yawed within the tabletop's block range. robosuite runs at ~150 steps/s on a quiet machine (tens here):
keep batches small.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import mujoco
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
from sim.skill_env.observation import GOAL_LAYOUT, OBSERVATION_LAYOUT, observe
from sim.skill_env.randomization import EpisodeRandomization, RandomizationConfig, noisy_state, sample_episode
from sim.skill_env.tabletop_skills import TABLETOP_SKILLS, carry_goal, reach_goal
from sim.tabletop.layout import LayoutRanges
from sim.tabletop.state import ObjectState, SceneState
from sim.tabletop.world import WorldConfig

ROBOSUITE_TASKS: Mapping[str, str] = {
    "reach": "Lift",
    "pick_and_place": "Lift",
    "stack": "Stack",
    "bin_pick_place": "PickPlace",
}
"""Skill -> robosuite environment."""
PANDA_ARM_JOINTS = 7
DEFAULT_DISTANCE_THRESHOLD = 0.03
"""Success radius of the skills the tabletop has no counterpart of (stack, bin_pick_place), m."""
OSC_LAG_GAIN = 5.0
"""OSC_POSITION sets its goal a delta ahead of where the hand is, and the hand lags that goal: with the
delta at max_speed * dt it moved at a fifth of max_speed (measured), so the delta is scaled up by this."""


@dataclass(frozen=True)
class RobosuiteEnvConfig:
    """Options of the robosuite environments."""

    max_episode_steps: int = 75
    distance_threshold: float | None = None
    """Success radius (m); None: the tabletop skill's own (reach 2 cm), else 3 cm."""
    control_freq: int = 25
    """Hz; the OSC controller's output is scaled so that action 1 is the tabletop's max speed."""


def _import_robosuite() -> Any:
    try:
        import robosuite
    except ImportError as error:
        raise ImportError(
            "the robosuite skill-env backend needs robosuite: pip install robosuite==1.5.2 "
            f"(pinned in requirements.txt with mujoco 3.3.7; `make setup`) ({error})"
        ) from error
    return robosuite


def _controller_config(robosuite: Any, control_freq: int) -> dict[str, Any]:
    """Panda's BASIC composite controller with OSC_POSITION on the arm, 1.0 = max_speed per control step."""
    from robosuite.controllers import load_composite_controller_config, load_part_controller_config

    step = OSC_LAG_GAIN * WorldConfig().max_speed / control_freq
    arm = load_part_controller_config(default_controller="OSC_POSITION")
    arm.update(output_max=[step] * 3, output_min=[-step] * 3, gripper={"type": "GRIP"})
    config: dict[str, Any] = load_composite_controller_config(controller="BASIC", robot="Panda")
    config["body_parts"] = {"right": arm}
    return config


class _Task:
    """One robosuite env and what our contract needs from it: the object, the frame, the goal."""

    def __init__(self, robosuite: Any, skill: str, config: RobosuiteEnvConfig, seed: int) -> None:
        self.skill = skill
        kwargs: dict[str, Any] = {}
        if skill == "bin_pick_place":
            kwargs = {"single_object_mode": 2, "object_type": "can"}
        self.env = robosuite.make(
            ROBOSUITE_TASKS[skill],
            robots="Panda",
            controller_configs=_controller_config(robosuite, config.control_freq),
            has_renderer=False,
            has_offscreen_renderer=False,
            use_camera_obs=False,
            control_freq=config.control_freq,
            horizon=10**9,  # episodes end by our own time limit
            ignore_done=True,
            hard_reset=False,  # keep one MjModel, so the modder's edits stay in place
            initialization_noise=None,  # robosuite draws it unseeded; ours is applied in reset
            seed=seed,
            **kwargs,
        )
        if skill != "bin_pick_place":
            # Cubes yawed as the tabletop's blocks are, not anywhere on the circle as robosuite draws them:
            # the tabletop's gripper never turns, and its policies never saw other yaws (the reach card).
            yaw = LayoutRanges().block_yaw
            self.env.placement_initializer.rotation = (-yaw, yaw)
        self.env.reset()
        from robosuite.utils.mjmod import DynamicsModder

        self.modder = DynamicsModder(sim=self.env.sim, random_state=np.random.RandomState(seed))
        self.nominal_kp = np.array(self._arm_controller().kp, dtype=np.float64)
        self.nominal_kd = np.array(self._arm_controller().kd, dtype=np.float64)
        self.object_body, self.object_size = self._object()
        self.origin = self._origin()
        self.goal = np.zeros(3)

    def _arm_controller(self) -> Any:
        return self.env.robots[0].part_controllers["right"]

    def _object(self) -> tuple[int, np.ndarray]:
        env = self.env
        if self.skill in ("reach", "pick_and_place"):
            return env.cube_body_id, 2 * np.array(env.cube.size)
        if self.skill == "stack":
            return env.cubeA_body_id, 2 * np.array(env.cubeA.size)
        name = env.obj_to_use
        size = np.array(env.objects[env.object_id].get_bounding_box_half_size()) * 2
        return env.obj_body_id[name], size

    def _origin(self) -> np.ndarray:
        """The tabletop frame in robosuite's world: under the robot base, at the table (or bin) surface."""
        env = self.env
        base = env.sim.data.body_xpos[env.sim.model.body_name2id(env.robots[0].robot_model.root_body)]
        surface = (
            env.bin1_pos[2] if self.skill == "bin_pick_place" else env.model.mujoco_arena.table_top_abs[2]
        )
        return np.array([base[0], base[1], surface])

    def randomize(self, params: EpisodeRandomization | None) -> None:
        """Through robosuite's DynamicsModder: back to defaults, then this episode's scales."""
        modder, model = self.modder, self.env.sim.model
        modder.restore_defaults()
        controller = self._arm_controller()
        scale = 1.0 if params is None else params.actuator_gain_scale
        controller.kp = self.nominal_kp * scale
        controller.kd = self.nominal_kd * np.sqrt(scale)  # the same damping ratio
        if params is None:
            return
        object_name = model.body_id2name(self.object_body)
        modder.mod_mass(object_name, modder.body_defaults[object_name]["mass"] * params.object_mass_scale)
        for geom in modder.geom_names:
            friction = modder.geom_defaults[geom]["friction"].copy()
            friction[0] *= params.friction_scale
            modder.mod_friction(geom, friction)
        robot_joints = set(self.env.robots[0].robot_joints) | set(self.env.robots[0].gripper_joints["right"])
        for joint in robot_joints:
            modder.mod_damping(joint, modder.joint_defaults[joint]["damping"] * params.joint_damping_scale)
        modder.update()

    def reseed(self, seed: np.random.SeedSequence) -> None:
        """Reseed robosuite's own generator in place (its placement samplers hold that very object)."""
        self.env.rng.bit_generator.state = np.random.default_rng(seed).bit_generator.state

    def reset(self, rng: np.random.Generator, joint_offset: np.ndarray | None) -> None:
        self.env.reset()
        if joint_offset is not None:
            robot = self.env.robots[0]
            self.env.sim.data.qpos[robot._ref_joint_pos_indexes] += joint_offset
            self.env.sim.forward()
        position = self.position()
        if self.skill == "reach":
            self.goal = reach_goal(rng, self.state().ee_position)
        elif self.skill == "pick_and_place":
            self.goal = carry_goal(rng, position[:2], float(position[2]), lambda _xy: True)
        elif self.skill == "stack":
            below = self._local(self.env.sim.data.body_xpos[self.env.cubeB_body_id])
            self.goal = below + np.array([0.0, 0.0, self.env.cubeB.size[2] + self.object_size[2] / 2])
        else:
            target = self.env.target_bin_placements[self.env.object_id]
            self.goal = np.array([*self._local(target)[:2], position[2]])

    def step(self, action: np.ndarray) -> None:
        # robosuite's Panda action: OSC_POSITION (3) then the gripper (1, +1 closes), as ours.
        self.env.step(action)

    def position(self) -> np.ndarray:
        return self._local(self.env.sim.data.body_xpos[self.object_body])

    def state(self) -> SceneState:
        """The scene in the tabletop's frame, as a bridge would publish it."""
        data, robot = self.env.sim.data, self.env.robots[0]
        grip = data.site_xpos[robot.eef_site_id["right"]]
        fingers = data.qpos[robot._ref_gripper_joint_pos_indexes["right"]]
        quaternion = np.zeros(4)
        mujoco.mju_mat2Quat(quaternion, data.site_xmat[robot.eef_site_id["right"]])
        obj = ObjectState(
            "object", "block", self.position(), np.array(data.body_xquat[self.object_body]), self.object_size
        )
        return SceneState(
            ee_position=self._local(grip),
            ee_quaternion=quaternion,
            gripper_width=float(fingers[0] - fingers[1]),
            objects={"object": obj},
            joint_names=(),
            joint_positions=np.zeros(0),
            joint_velocities=np.zeros(0),
            time=float(data.time),
        )

    def _local(self, point: np.ndarray) -> np.ndarray:
        return np.asarray(point, dtype=np.float64) - self.origin


class RobosuiteSkillEnv(GoalVecEnv):
    """Lift / Stack / PickPlace with the tabletop's observation, goal and action layouts (see GoalVecEnv)."""

    backend = "robosuite"
    observation_layout = OBSERVATION_LAYOUT
    goal_layout = GOAL_LAYOUT
    action_layout = ACTION_LAYOUT

    def __init__(
        self,
        skill: str,
        num_envs: int,
        seed: int = 0,
        randomization: RandomizationConfig | None = None,
        config: RobosuiteEnvConfig | None = None,
    ) -> None:
        check_batch(self.backend, skill, ROBOSUITE_TASKS, num_envs)
        robosuite = _import_robosuite()
        self.config = config or RobosuiteEnvConfig()
        self.skill, self.num_envs = skill, num_envs
        self.max_episode_steps = self.config.max_episode_steps
        tabletop = TABLETOP_SKILLS.get(skill)
        default = tabletop.distance_threshold if tabletop else DEFAULT_DISTANCE_THRESHOLD
        configured = self.config.distance_threshold
        self.distance_threshold = default if configured is None else configured
        self.control_dt = 1.0 / self.config.control_freq
        self.randomization = randomization
        streams = np.random.SeedSequence(seed).spawn(num_envs)
        self._tasks = [_Task(robosuite, skill, self.config, int(s.generate_state(1)[0])) for s in streams]
        self._channels = [ActionChannel(skill) for _ in range(num_envs)]
        self._rngs: list[np.random.Generator] = []
        self._steps = np.zeros(num_envs, dtype=np.int64)
        self._returns = np.zeros(num_envs, dtype=np.float32)
        self._observation_noise = np.zeros(num_envs)
        """Each env's episode draw of the noise on observed positions (m)."""
        self._seed(seed)

    def _seed(self, seed: int) -> None:
        """Each env's goal, randomization and noise stream, and robosuite's placement one, from the seed."""
        self._rngs = []
        for task, child in zip(self._tasks, np.random.SeedSequence(seed).spawn(self.num_envs), strict=True):
            ours, placement = child.spawn(2)
            self._rngs.append(np.random.default_rng(ours))
            task.reseed(placement)

    def reset(self, seed: int | None = None) -> GoalObservation:
        if seed is not None:
            self._seed(seed)
        rows = [self._reset_env(i) for i in range(self.num_envs)]
        return _stack(rows)

    def step(self, actions: np.ndarray) -> StepResult:
        clean, valid = check_actions(actions, self.num_envs, self.action_dim)
        n = self.num_envs
        reward = np.zeros(n, dtype=np.float32)
        success = np.zeros(n, dtype=bool)
        truncated = np.zeros(n, dtype=bool)
        episode_return = np.zeros(n, dtype=np.float32)
        episode_length = np.zeros(n, dtype=np.int64)
        finals, rows = [], []
        noise = 0.0 if self.randomization is None else self.randomization.action_noise
        for i, task in enumerate(self._tasks):
            task.step(self._channels[i](clean[i], self._rngs[i], noise))
            final = self._observe(i)
            success[i] = bool(np.linalg.norm(final[1] - final[2]) <= self.distance_threshold)
            reward[i] = 0.0 if success[i] else -1.0
            self._steps[i] += 1
            self._returns[i] += reward[i]
            finals.append(final)
            if self._steps[i] >= self.max_episode_steps:
                truncated[i] = True
                episode_return[i], episode_length[i] = self._returns[i], self._steps[i]
                rows.append(self._reset_env(i))
            else:
                rows.append(final)
        terminated = np.zeros(self.num_envs, dtype=bool)  # no tabletop skill ends an episode for good
        info = step_info(
            success, terminated, truncated, valid, _stack(finals), episode_return, episode_length
        )
        return StepResult(_stack(rows), reward, terminated, truncated, info)

    def states(self) -> list[SceneState]:
        """Each env's true scene in the tabletop's frame; its one object is named "object"."""
        return [task.state() for task in self._tasks]

    def close(self) -> None:
        for task in self._tasks:
            task.env.close()

    def _reset_env(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        config, rng = self.randomization, self._rngs[i]
        params = None if config is None else sample_episode(config, rng, PANDA_ARM_JOINTS, 1)
        self._tasks[i].randomize(params)
        self._tasks[i].reset(rng, None if params is None else params.arm_joint_offset)
        self._channels[i].reset(0 if params is None else params.action_latency_steps)
        self._observation_noise[i] = 0.0 if params is None else params.observation_noise_m
        self._steps[i], self._returns[i] = 0, 0.0
        return self._observe(i)

    def _observe(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        task, config = self._tasks[i], self.randomization
        state = task.state()
        seen = state
        noise = self._observation_noise[i]
        if config is not None and (noise > 0 or config.gripper_noise_m > 0):
            seen = noisy_state(state, self._rngs[i], noise, config.gripper_noise_m)
        achieved = state.ee_position if task.skill == "reach" else state.object("object").position
        return observe(seen, "object"), achieved.astype(np.float32), task.goal


def _stack(rows: list[tuple[np.ndarray, np.ndarray, np.ndarray]]) -> GoalObservation:
    return {
        key: np.stack([row[k] for row in rows]).astype(np.float32)
        for k, key in enumerate(("observation", "achieved_goal", "desired_goal"))
    }


def make_robosuite_env(
    skill: str, num_envs: int, seed: int, randomization: RandomizationConfig | None, **options: object
) -> RobosuiteSkillEnv:
    """The registry's factory: options are RobosuiteEnvConfig's fields."""
    config = config_from_options("robosuite", RobosuiteEnvConfig, options)
    return RobosuiteSkillEnv(skill, num_envs, seed, randomization, config)
