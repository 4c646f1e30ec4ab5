"""Skill episode starts drawn on the host, ahead of time, for a backend that resets on the device.

A batched GPU simulation resets thousands of envs per second inside one compiled step, where the
`mujoco` backend's samplers (rejection sampling of layouts, an IK solve placing the grip point) cannot run.
So a bank of starts is drawn here with those very samplers, from the run's seed, and the device draws an
entry for each new episode (randomization then moves the block and the arm's joints per episode, on the
device, as the `mujoco` backend does). With a bank of thousands the starts are as varied as training
needs; the distribution is the `mujoco` backend's.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from sim.skill_env.tabletop_skills import Episode, TabletopSkill
from sim.tabletop.layout import LayoutRanges
from sim.tabletop.model import ARM_JOINTS
from sim.tabletop.state import SceneState
from sim.tabletop.world import TabletopWorld

PROGRESS_ABOVE = 8192
"""Banks larger than this (about 6 s to draw) show a progress bar while they are drawn."""


@dataclass(frozen=True)
class EpisodeBank:
    """Starts of skill episodes, one row each: what a device-side reset needs."""

    arm_qpos: np.ndarray
    """(n, 7) arm joints putting the grip point at the episode's start, gripper pointing down."""
    block_pose: np.ndarray
    """(n, 3) the block's x, y and yaw on the table."""
    goal: np.ndarray
    """(n, 3) the desired goal."""
    objects: tuple[str, ...]
    """The tabletop block each row's episode was drawn for (the block the scene's one block stands for)."""


def bank_from_episodes(
    episodes: Sequence[Episode], world: TabletopWorld, description: str = "episode starts"
) -> EpisodeBank:
    """The bank of these episodes, in order: each arm start placed by `world.reset_layout`, as the `mujoco`
    backend places it (that IK placement is what takes time, about 1 ms an episode)."""
    starts = tqdm(episodes, desc=description, disable=len(episodes) <= PROGRESS_ABOVE)
    arm = [world.reset_layout(e.layout, e.grip_start).joint_positions[: len(ARM_JOINTS)] for e in starts]
    return EpisodeBank(
        arm_qpos=np.array(arm).reshape(-1, len(ARM_JOINTS)),
        block_pose=np.array([e.layout.blocks[e.obj] for e in episodes], dtype=np.float64).reshape(-1, 3),
        goal=np.array([e.goal for e in episodes], dtype=np.float64).reshape(-1, 3),
        objects=tuple(e.obj for e in episodes),
    )


def sample_bank(
    skill: TabletopSkill, size: int, seed: int, world: TabletopWorld, ranges: LayoutRanges | None = None
) -> EpisodeBank:
    """`size` episodes of a skill from the `mujoco` backend's sampler, seeded."""
    if size < 1:
        raise ValueError(f"an episode bank needs at least one episode, got {size}")
    rng = np.random.default_rng(seed)
    ranges = ranges or LayoutRanges()
    episodes = [skill.sample(rng, ranges) for _ in range(size)]
    return bank_from_episodes(episodes, world, f"{skill.name} episode starts")


def bank_from_scenes(states: Sequence[SceneState], objects: Sequence[str], goals: np.ndarray) -> EpisodeBank:
    """A bank of the starts of episodes already begun elsewhere (e.g. the `mujoco` backend's envs just
    reset), read from their scenes: the arm's joints, the object's place and yaw on the table, the goals."""
    yaws = []
    for state, obj in zip(states, objects, strict=True):
        w, _, _, z = state.object(obj).quaternion
        yaws.append(2.0 * np.arctan2(z, w))
    return EpisodeBank(
        arm_qpos=np.array([s.joint_positions[: len(ARM_JOINTS)] for s in states]),
        block_pose=np.array(
            [[*s.object(obj).position[:2], yaw] for s, obj, yaw in zip(states, objects, yaws, strict=True)]
        ),
        goal=np.asarray(goals, dtype=np.float64).reshape(-1, 3),
        objects=tuple(objects),
    )
