"""Backends of the skill environments, keyed by exact name, and `make_skill_env`, the one way to build one.

Backends are imported only when asked for, so that a missing optional simulator (robosuite, Isaac Gym)
costs nothing until it is used, and then says how to get it.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sim.skill_env.contract import GoalVecEnv
from sim.skill_env.randomization import RandomizationConfig


@dataclass(frozen=True)
class Backend:
    """A registered backend: where its factory lives and which skills it offers."""

    name: str
    factory: str
    """"module:function" taking (skill, num_envs, seed, randomization, **options), returning a GoalVecEnv."""
    skills: tuple[str, ...]
    description: str


BACKENDS: Mapping[str, Backend] = {
    backend.name: backend
    for backend in (
        Backend(
            "mujoco",
            "sim.skill_env.mujoco_backend:make_tabletop_env",
            ("reach", "push", "pick_and_place"),
            "the MuJoCo tabletop of sim.tabletop, many worlds stepped on threads (default)",
        ),
        Backend(
            "mjx",
            "sim.skill_env.mjx_backend:make_mjx_env",
            ("reach", "push", "pick_and_place"),
            "the tabletop skills as one batched MuJoCo XLA (JAX) simulation, GPU or CPU; one block per env",
        ),
        Backend(
            "gymnasium",
            "sim.skill_env.gymnasium_backend:make_fetch_env",
            ("reach", "push", "pick_and_place"),
            "gymnasium-robotics' FetchReach-v4, FetchPush-v4 and FetchPickAndPlace-v4 (a benchmark peer)",
        ),
        Backend(
            "robosuite",
            "sim.skill_env.robosuite_backend:make_robosuite_env",
            ("reach", "pick_and_place", "stack", "bin_pick_place"),
            "robosuite's Panda under OSC on Lift, Stack and PickPlace, with the tabletop's observation",
        ),
        Backend(
            "isaacgym",
            "sim.skill_env.isaacgym_backend:make_isaacgym_env",
            ("reach", "push", "pick_and_place"),
            "the tabletop skills as one Isaac Gym simulation (needs Isaac Gym; not exercised by CI)",
        ),
    )
}
"""Registered backends, keyed by exact name."""


def make_skill_env(
    backend: str,
    skill: str,
    num_envs: int,
    seed: int = 0,
    randomization: RandomizationConfig | str | Path | None = None,
    **options: Any,
) -> GoalVecEnv:
    """Build a batched goal-conditioned environment (see `sim.skill_env.contract.GoalVecEnv`).

    randomization: None for the nominal simulator, a RandomizationConfig, or the path of a YAML file of one
    (`sim.skill_env.DEFAULT_RANDOMIZATION_FILE` is the shipped default). options: the backend's own (for
    `mujoco`, the fields of TabletopEnvConfig such as max_episode_steps, distance_threshold, num_threads).
    Unknown backends, skills and options raise ValueError naming the known ones.
    """
    if backend not in BACKENDS:
        raise ValueError(f"unknown skill-env backend {backend!r}; known: {', '.join(BACKENDS)}")
    spec = BACKENDS[backend]
    if skill not in spec.skills:
        raise ValueError(f"backend {backend!r} has no skill {skill!r}; known: {', '.join(spec.skills)}")
    if isinstance(randomization, str | Path):
        randomization = RandomizationConfig.load(randomization)
    module, function = spec.factory.split(":")
    factory = getattr(importlib.import_module(module), function)
    env: GoalVecEnv = factory(skill, num_envs, seed, randomization, **options)
    return env
