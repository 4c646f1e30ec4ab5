"""The trainers' door to `sim.skill_env`: build a run's envs and describe a policy trained on them."""

from __future__ import annotations

from pathlib import Path

from policies.skills.checkpoint import PolicyInfo
from policies.skills.config import TrainConfig, training_randomization
from sim.skill_env import DEFAULT_RANDOMIZATION_FILE, GoalVecEnv, RandomizationConfig, make_skill_env
from sim.tabletop import WorldConfig


def make_env(config: TrainConfig, num_envs: int, seed: int, evaluation: bool = False) -> GoalVecEnv:
    """The envs of a training run: its backend, skill, randomization (`evaluation`: the default one, without
    the run's training knobs) and backend options."""
    randomization: RandomizationConfig | Path | None = None
    if config.randomize:
        randomization = DEFAULT_RANDOMIZATION_FILE if evaluation else training_randomization(config)
    return make_skill_env(
        config.backend,
        config.skill,
        num_envs=num_envs,
        seed=seed,
        randomization=randomization,
        **config.env_options,
    )


def policy_info(env: GoalVecEnv, run_id: str) -> PolicyInfo:
    """PolicyInfo for an actor trained on `env`: one layout entry per named vector element.

    A full action is the tabletop world's max_speed: the controller's `max_linear_speed` at deployment.
    """
    return PolicyInfo(
        skills=(env.skill,),
        obs_layout=tuple((name, 1) for name in env.observation_layout),
        goal_layout=tuple((name, 1) for name in env.goal_layout),
        action_scale=WorldConfig().max_speed,
        control_period_s=env.control_dt,
        run_id=run_id,
    )
