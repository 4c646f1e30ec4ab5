"""Domain randomization: a YAML-loadable config, per-episode samples of it, and observation noise.

A `RandomizationConfig` says how far each knob may move; at every episode start a backend draws one
`EpisodeRandomization` from the env's own generator (so a seed reproduces the run) and applies it to its
simulator. Every knob has an identity value (scale range (1, 1), noise 0, latency (0, 0)); a config with
all knobs at identity, or no config at all, is the nominal run bit for bit.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import numpy as np
import yaml  # type: ignore[import-untyped]  # no stubs pinned

from sim.config_mapping import build_dataclass
from sim.tabletop.state import ObjectState, SceneState

DEFAULT_RANDOMIZATION_FILE = Path(__file__).with_name("randomization.yaml")


@dataclass(frozen=True)
class RandomizationConfig:
    """How far each quantity may move: scales multiply nominal model values; ranges are [low, high]."""

    object_mass_scale: tuple[float, float] = (1.0, 1.0)
    """Mass of every block."""
    friction_scale: tuple[float, float] = (1.0, 1.0)
    """Sliding friction of both geoms of each gripper-block and block-table contact (MuJoCo takes the pair's
    larger value, so scaling one side alone may change nothing)."""
    joint_damping_scale: tuple[float, float] = (1.0, 1.0)
    """Damping of the arm's and the fingers' joints."""
    actuator_gain_scale: tuple[float, float] = (1.0, 1.0)
    """Stiffness kp of the joint position servos and of the gripper (gain and bias together)."""
    observation_noise_m: float = 0.0
    """Standard deviation of Gaussian noise on every observed position, each step (m)."""
    observation_noise_scale: tuple[float, float] = (1.0, 1.0)
    """An episode's observation noise is observation_noise_m times a factor drawn from this range: training
    across sensor qualities, down to none, keeps a memoryless policy precise on clean inputs and still robust
    to the full noise (drawn only when the range is wider than one value, so other configs keep their
    streams)."""
    gripper_noise_m: float = 0.0
    """Standard deviation of Gaussian noise on the observed gripper width, each step (m)."""
    action_noise: float = 0.0
    """Standard deviation of Gaussian noise added to the normalized action, each step."""
    action_latency_steps: tuple[int, int] = (0, 0)
    """An episode's actions take effect this many control steps late (an integer drawn from [low, high])."""
    arm_joint_noise_rad: float = 0.0
    """Half-width of the uniform offset added to each arm joint of the start pose (rad): moves the grip point
    and tilts the gripper a little (the servo holds the tilt through the episode)."""
    object_position_noise_m: float = 0.0
    """Half-width of the uniform offset added to each block's start position on the table (m)."""

    def __post_init__(self) -> None:
        for name in ("object_mass_scale", "friction_scale", "joint_damping_scale", "actuator_gain_scale"):
            low, high = getattr(self, name)
            if not 0 < low <= high:
                raise ValueError(f"randomization {name} must be a range 0 < low <= high, got {[low, high]}")
        for name in (
            "observation_noise_m",
            "gripper_noise_m",
            "action_noise",
            "arm_joint_noise_rad",
            "object_position_noise_m",
        ):
            if not getattr(self, name) >= 0:
                raise ValueError(f"randomization {name} must be >= 0, got {getattr(self, name)}")
        if not 0 <= self.observation_noise_scale[0] <= self.observation_noise_scale[1]:
            raise ValueError(
                "randomization observation_noise_scale must be a range 0 <= low <= high, got "
                f"{list(self.observation_noise_scale)}"
            )
        low, high = self.action_latency_steps
        if not (int(low) == low and int(high) == high and 0 <= low <= high):
            raise ValueError(
                f"randomization action_latency_steps must be integers 0 <= low <= high, got {[low, high]}"
            )

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> RandomizationConfig:
        """Build from a mapping (a YAML document) through the one strict loader: an unknown knob or a range
        that is not a [low, high] pair raises ValueError naming it."""
        config: RandomizationConfig = build_dataclass(cls, values, "randomization")
        return config

    @classmethod
    def load(cls, path: str | Path = DEFAULT_RANDOMIZATION_FILE) -> RandomizationConfig:
        """Read a YAML file (default: the shipped randomization.yaml); clear errors for a bad file."""
        path = Path(path)
        try:
            values = yaml.safe_load(path.read_text())
        except (OSError, yaml.YAMLError) as error:
            raise ValueError(f"cannot read randomization config {path}: {error}") from error
        if not isinstance(values, dict):
            raise ValueError(
                f"randomization config {path} must be a mapping of knobs, got {type(values).__name__}"
            )
        return cls.from_dict(values)

    def only(self, *knobs: str) -> RandomizationConfig:
        """This config with every knob but the named ones at identity (to study one knob at a time)."""
        unknown = sorted(set(knobs) - {f.name for f in fields(self)})
        if unknown:
            raise ValueError(
                f"unknown randomization knob(s) {unknown}; known: {', '.join(f.name for f in fields(self))}"
            )
        return dataclasses.replace(RandomizationConfig(), **{name: getattr(self, name) for name in knobs})


@dataclass(frozen=True)
class EpisodeRandomization:
    """One episode's draw from a RandomizationConfig."""

    object_mass_scale: float
    friction_scale: float
    joint_damping_scale: float
    actuator_gain_scale: float
    action_latency_steps: int
    arm_joint_offset: np.ndarray
    """(num_arm_joints,) rad."""
    object_offset: np.ndarray
    """(num_objects, 2) xy offsets (m)."""
    observation_noise_m: float
    """Standard deviation of this episode's noise on observed positions (m)."""


def sample_episode(
    config: RandomizationConfig, rng: np.random.Generator, arm_joints: int, objects: int
) -> EpisodeRandomization:
    """Draw one episode's parameters; always the same number of draws for a config: streams stay aligned."""
    return EpisodeRandomization(
        object_mass_scale=float(rng.uniform(*config.object_mass_scale)),
        friction_scale=float(rng.uniform(*config.friction_scale)),
        joint_damping_scale=float(rng.uniform(*config.joint_damping_scale)),
        actuator_gain_scale=float(rng.uniform(*config.actuator_gain_scale)),
        action_latency_steps=int(
            rng.integers(config.action_latency_steps[0], config.action_latency_steps[1] + 1)
        ),
        arm_joint_offset=rng.uniform(-1.0, 1.0, arm_joints) * config.arm_joint_noise_rad,
        object_offset=rng.uniform(-1.0, 1.0, (objects, 2)) * config.object_position_noise_m,
        observation_noise_m=config.observation_noise_m * _noise_scale(config, rng),  # the last draw
    )


def _noise_scale(config: RandomizationConfig, rng: np.random.Generator) -> float:
    low, high = config.observation_noise_scale
    return float(rng.uniform(low, high)) if low < high else low


def noisy_state(
    state: SceneState, rng: np.random.Generator, position_std: float, width_std: float
) -> SceneState:
    """The scene as a noisy sensor reports it: Gaussian noise on grip point, width and object positions."""
    objects = {
        name: ObjectState(
            obj.name, obj.category, obj.position + rng.normal(0.0, position_std, 3), obj.quaternion, obj.size
        )
        for name, obj in state.objects.items()
    }
    return dataclasses.replace(
        state,
        ee_position=state.ee_position + rng.normal(0.0, position_std, 3),
        gripper_width=float(state.gripper_width + rng.normal(0.0, width_std)),
        objects=objects,
    )
