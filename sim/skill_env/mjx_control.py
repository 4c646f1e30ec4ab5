"""The controller's side of one skill env in JAX: action path, Cartesian servo and observation.

Each function is the JAX twin of a numpy one that the `mujoco` backend and deployment use, for one env
(the backend vmaps them): `ActionChannel` (noise, the skill's fixed gripper, latency),
`action_to_command` and `EndEffectorServo.command` (damped-least-squares IK on the grip site), and
`observation_vector` with `canonical_cube_quaternion`. The parity tests hold the twins to each other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import mujoco
import numpy as np
from mujoco import mjx

from sim.skill_env.action import FIXED_GRIPPER
from sim.skill_env.observation import CUBE_CONJUGATES, CUBE_RIGHT_PRODUCTS
from sim.tabletop.model import ARM_JOINTS, EE_SITE, HOME_QPOS, MAX_GRIPPER_WIDTH
from sim.tabletop.world import WorldConfig


@dataclass(frozen=True)
class ServoConstants:
    """What the servo needs from the model and the world's config, as arrays."""

    arm_qpos: np.ndarray
    arm_dofs: np.ndarray
    site: int
    site_body: int
    home: np.ndarray
    joint_low: np.ndarray
    joint_high: np.ndarray
    workspace_low: np.ndarray
    workspace_high: np.ndarray
    max_lead: float
    damping: float
    nullspace_gain: float
    max_joint_step: float
    max_speed: float
    control_dt: float

    @classmethod
    def from_model(cls, model: mujoco.MjModel, config: WorldConfig) -> ServoConstants:
        ranges = np.array([model.joint(j).range for j in ARM_JOINTS])
        site = model.site(EE_SITE)
        return cls(
            arm_qpos=np.array([model.joint(j).qposadr[0] for j in ARM_JOINTS]),
            arm_dofs=np.array([model.joint(j).dofadr[0] for j in ARM_JOINTS]),
            site=int(site.id),
            site_body=int(site.bodyid[0]),
            home=np.array(HOME_QPOS),
            joint_low=ranges[:, 0],
            joint_high=ranges[:, 1],
            workspace_low=np.array(config.workspace.low),
            workspace_high=np.array(config.workspace.high),
            max_lead=config.max_target_lead,
            damping=config.ik.damping,
            nullspace_gain=config.ik.nullspace_gain,
            max_joint_step=config.ik.max_joint_step,
            max_speed=config.max_speed,
            control_dt=config.control_dt,
        )


def channel_action(
    history: jax.Array,
    latency: jax.Array,
    action: jax.Array,
    key: jax.Array,
    noise_std: jax.Array,
    gripper: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """(history, the action the actuators get): noise, clip, the skill's fixed gripper, `latency` steps late.

    `gripper` is the skill's fixed gripper command, or NaN where the policy commands it (`FIXED_GRIPPER`);
    `history` holds recent actions, newest first, and starts as the hold action under the skill's rule.
    """
    action = jnp.clip(action + noise_std * jax.random.normal(key, action.shape), -1.0, 1.0)
    action = action.at[3].set(jnp.where(jnp.isnan(gripper), action[3], gripper))
    history = jnp.roll(history, 1, axis=0).at[0].set(action)
    return history, history[latency]


def fixed_gripper(skill: str) -> float:
    """The skill's fixed gripper command for `channel_action`: NaN where the policy commands it."""
    return FIXED_GRIPPER.get(skill, float("nan"))


def command(action: jax.Array, servo: ServoConstants) -> tuple[jax.Array, jax.Array]:
    """(end-effector velocity capped at max_speed, gripper width target clipped to its range)."""
    velocity = action[:3] * servo.max_speed
    speed = jnp.linalg.norm(velocity)
    velocity = velocity * jnp.where(speed > servo.max_speed, servo.max_speed / jnp.maximum(speed, 1e-12), 1.0)
    width = jnp.clip((1.0 - action[3]) / 2.0 * MAX_GRIPPER_WIDTH, 0.0, MAX_GRIPPER_WIDTH)
    return velocity, width


def servo_step(
    model: mjx.Model,
    data: mjx.Data,
    target: jax.Array,
    rotation: jax.Array,
    velocity: jax.Array,
    servo: ServoConstants,
) -> tuple[jax.Array, jax.Array]:
    """(new end-effector target, arm joint targets): `EndEffectorServo.command` for one env.

    `data` must hold kinematics and com positions of the current instant (the backend refreshes them after
    each control step, as `TabletopWorld` does).
    """
    position = data.site_xpos[servo.site]
    target = jnp.clip(target + velocity * servo.control_dt, servo.workspace_low, servo.workspace_high)
    lead = target - position
    distance = jnp.linalg.norm(lead)
    target = jnp.where(distance > servo.max_lead, position + lead * (servo.max_lead / distance), target)
    current = data.site_xmat[servo.site].reshape(3, 3)
    m = rotation @ current.T
    orientation = 0.5 * jnp.array([m[2, 1] - m[1, 2], m[0, 2] - m[2, 0], m[1, 0] - m[0, 1]])
    error = jnp.concatenate([target - position, orientation])
    jacp, jacr = mjx.jac(model, data, position, servo.site_body)
    jac = jnp.concatenate([jacp[servo.arm_dofs].T, jacr[servo.arm_dofs].T])
    q = data.qpos[servo.arm_qpos]
    secondary = servo.nullspace_gain * (servo.home - q)
    normal = jac @ jac.T + servo.damping**2 * jnp.eye(6)
    step = secondary + jac.T @ jnp.linalg.solve(normal, error - jac @ secondary)
    step = jnp.clip(step, -servo.max_joint_step, servo.max_joint_step)
    return target, jnp.clip(q + step, servo.joint_low, servo.joint_high)


def canonical_cube_quaternion(quaternion: jax.Array) -> jax.Array:
    """`sim.skill_env.observation.canonical_cube_quaternion` for one (4,) quaternion, w x y z."""
    nearest = jnp.argmax(jnp.abs(jnp.asarray(CUBE_CONJUGATES) @ quaternion))
    return jnp.asarray(CUBE_RIGHT_PRODUCTS)[nearest] @ quaternion


def observation_vector(
    ee: jax.Array, width: jax.Array, position: jax.Array, quaternion: jax.Array
) -> jax.Array:
    """`sim.skill_env.observation.observation_vector` for one env: the policy's 14 inputs, float32."""
    quaternion = jnp.where(quaternion[0] < 0, -quaternion, quaternion)
    return jnp.concatenate([ee, width[None], position, position - ee, quaternion]).astype(jnp.float32)


def tree_where(mask: jax.Array, on_true: Any, on_false: Any) -> Any:
    """Pick whole pytrees leaf by leaf with one boolean (per env, under vmap)."""
    return jax.tree_util.tree_map(lambda a, b: jnp.where(mask, a, b), on_true, on_false)
