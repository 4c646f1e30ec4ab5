"""Batched goal-conditioned skill environments: one contract, several simulators behind it.

    from sim.skill_env import make_skill_env, RandomizationConfig
    env = make_skill_env("mujoco", "pick_and_place", num_envs=8, seed=0,
                         randomization=RandomizationConfig.load())   # the shipped randomization.yaml
    obs = env.reset()
    obs, reward, terminated, truncated, info = env.step(policy(obs["observation"], obs["desired_goal"]))

`contract` is what trainers depend on (shapes, auto-reset, reserved info keys); `observation` and `action`
are what deployment depends on (the controller builds the same vectors from a SceneState).
"""

from sim.skill_env.action import ACTION_LAYOUT, FIXED_GRIPPER, skill_action
from sim.skill_env.contract import (
    OBSERVATION_KEYS,
    GoalObservation,
    GoalVecEnv,
    StepResult,
    goal_distance,
    sparse_reward,
)
from sim.skill_env.observation import (
    GOAL_LAYOUT,
    OBSERVATION_LAYOUT,
    OBSERVATION_VERSION,
    POLICY_SKILLS,
    observe,
    policy_inputs,
    policy_skill,
)
from sim.skill_env.randomization import DEFAULT_RANDOMIZATION_FILE, RandomizationConfig
from sim.skill_env.registry import BACKENDS, make_skill_env

__all__ = [
    "ACTION_LAYOUT",
    "BACKENDS",
    "DEFAULT_RANDOMIZATION_FILE",
    "FIXED_GRIPPER",
    "GOAL_LAYOUT",
    "OBSERVATION_KEYS",
    "OBSERVATION_LAYOUT",
    "OBSERVATION_VERSION",
    "POLICY_SKILLS",
    "GoalObservation",
    "GoalVecEnv",
    "RandomizationConfig",
    "StepResult",
    "goal_distance",
    "make_skill_env",
    "observe",
    "policy_inputs",
    "policy_skill",
    "skill_action",
    "sparse_reward",
]
