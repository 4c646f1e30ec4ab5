"""Training configuration: one YAML file per skill (`policies/skills/config/*.yaml`) loaded into dataclasses.

Unknown keys are errors that list the known ones, so a typo never trains with a silent default.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml  # type: ignore[import-untyped]  # no stubs pinned

from policies.skills.ppo_config import PpoConfig
from policies.skills.sac import SacConfig
from sim.config_mapping import build_dataclass, config_to_dict, merge
from sim.skill_env.randomization import RandomizationConfig

CONFIG_DIR = Path(__file__).parent / "config"
ALGORITHMS = ("sac", "ppo")
"""sac: SAC + HER (`runner.OffPolicyRunner`); ppo: rsl-rl-lib's PPO (`ppo_runner.PpoRunner`)."""


@dataclass(frozen=True)
class DemoConfig:
    """Scripted-expert demonstrations in a second replay buffer (Nair et al. 2018); off with episodes 0."""

    episodes: int = 0
    """Expert episodes collected before training (0: no demonstrations)."""
    action_noise: float = 0.0
    """Std of Gaussian noise added to the expert's actions while collecting, for wider coverage."""
    pretrain_steps: int = 0
    """Gradient steps on the demonstrations alone before RL (`SAC.pretrain`: the actor clones them and fits
    its std to its error, the critics learn their values); 0: RL starts from a random actor."""
    dagger_rounds: int = 0
    """DAgger rounds after pretraining (Ross et al. 2011): the cloned actor plays, the expert labels every
    state it reaches, and pretraining goes on over all the demonstrations (0: none)."""
    dagger_episodes: int = 0
    """Episodes the actor plays in each DAgger round."""
    dagger_steps: int = 0
    """Pretraining steps after each DAgger round."""

    def __post_init__(self) -> None:
        counts = (self.episodes, self.pretrain_steps, self.dagger_rounds, self.dagger_episodes)
        if min(*counts, self.dagger_steps) < 0:
            raise ValueError(f"demonstration counts must be >= 0, got {self}")
        if self.pretrain_steps and not self.episodes:
            raise ValueError("pretrain_steps needs demonstrations: set episodes > 0")
        if self.dagger_rounds and not (self.pretrain_steps and self.dagger_episodes and self.dagger_steps):
            raise ValueError("dagger_rounds needs pretrain_steps, dagger_episodes and dagger_steps > 0")

    @property
    def capacity_episodes(self) -> int:
        """Episodes the demonstration buffer holds: the expert's and every DAgger round's."""
        return self.episodes + self.dagger_rounds * self.dagger_episodes


@dataclass(frozen=True)
class TrainConfig:
    """Everything one `hgpo train-skills` run needs besides its output folder."""

    skill: str
    """The skill to train (an env task of the backend, e.g. reach, push, pick_and_place, FetchReach)."""
    algorithm: str = "sac"
    """sac (off-policy, HER; the sample-efficient choice on CPU) or ppo (on-policy, for massively parallel
    backends). SAC reads the sac block and the replay fields; PPO reads the ppo block."""
    backend: str = "mujoco"
    """Env backend: mujoco, mjx, gymnasium, robosuite or isaacgym."""
    seed: int = 0
    num_envs: int = 8
    """Parallel envs stepped as one batch."""
    randomize: bool = False
    """Domain randomization during training (the backend's default randomization config)."""
    randomization: dict[str, Any] = field(default_factory=dict)
    """Knobs over the default randomization config for the training envs only: evaluations, during training
    and by `hgpo eval-skills --randomize`, keep the default, so a run is measured where its peers are."""
    env_options: dict[str, Any] = field(default_factory=dict)
    """The backend's own options (mujoco: TabletopEnvConfig fields such as max_episode_steps)."""
    env_steps: int = 100_000
    """Total env transitions (summed over the parallel envs)."""
    time_budget_s: float = 0.0
    """Stop after this much wall-clock time (0: no limit)."""
    target_success: float = 0.0
    """Stop at the first evaluation reaching this success rate (0: never stop early)."""
    learning_starts: int = 1_000
    """Env transitions collected with random actions before the first gradient step."""
    updates_per_step: float = 0.5
    """Gradient steps per env transition (the update-to-data ratio)."""
    buffer_size: int = 1_000_000
    """Replay capacity in transitions."""
    her_k: int = 4
    """Relabelled goals per real one ("future" strategy)."""
    eval_every: int = 5_000
    """Env transitions between evaluations."""
    eval_episodes: int = 20
    """Deterministic episodes per evaluation."""
    checkpoint_every: int = 20_000
    """Env transitions between checkpoints (one is always written at the end)."""
    torch_threads: int = 1
    """torch intra-op threads; small MLPs run fastest on one core."""
    device: str = "cpu"
    """Where the networks train: cpu, or cuda on a GPU box (many envs, big batches). SAC's envs and replay
    stay on the CPU; PPO's rollout storage and updates run on the device, the envs where their backend runs
    (mjx: JAX's device)."""
    sac: SacConfig = field(default_factory=SacConfig)
    ppo: PpoConfig = field(default_factory=PpoConfig)
    demos: DemoConfig = field(default_factory=DemoConfig)

    def __post_init__(self) -> None:
        if self.algorithm not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algorithm!r}; known: {', '.join(ALGORITHMS)}")
        if self.num_envs < 1 or self.env_steps < 1 or self.eval_episodes < 1:
            raise ValueError("num_envs, env_steps and eval_episodes must be >= 1")
        if self.updates_per_step < 0:
            raise ValueError(f"updates_per_step must be >= 0, got {self.updates_per_step}")
        if self.device.split(":")[0] not in ("cpu", "cuda"):
            raise ValueError(f"device must be cpu or cuda[:N], got {self.device!r}")
        if self.randomization and not self.randomize:
            raise ValueError("randomization knobs are given but randomize is false")
        training_randomization(self)  # unknown knobs and bad values fail at load, not at the first reset


def training_randomization(config: TrainConfig) -> RandomizationConfig | None:
    """The randomization of a run's training envs: the default config with the run's knobs over it."""
    if not config.randomize:
        return None
    default = RandomizationConfig.load()
    return RandomizationConfig.from_dict(
        {f.name: getattr(default, f.name) for f in dataclasses.fields(default)} | config.randomization
    )


def config_from_dict(data: dict[str, Any], where: str = "config") -> TrainConfig:
    result: TrainConfig = build_dataclass(TrainConfig, data, where)
    return result


def load_config(path: str | Path) -> TrainConfig:
    """Read a YAML training config; a path without a folder names a file of `policies/skills/config/`."""
    path = Path(path)
    if not path.exists() and path.parent == Path("."):
        path = CONFIG_DIR / (path.name if path.suffix else f"{path.name}.yaml")
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in CONFIG_DIR.glob("*.yaml")))
        raise FileNotFoundError(f"no training config {path}; shipped configs: {known}")
    return config_from_dict(yaml.safe_load(path.read_text()) or {}, str(path))


def with_overrides(config: TrainConfig, overrides: dict[str, Any]) -> TrainConfig:
    """A copy with the fields `overrides` names replaced, nested ones too (the command line's --seed,
    --set sac.lr=...), checked as the YAML file is."""
    return config_from_dict(merge(config_to_dict(config), overrides))


def save_config(config: TrainConfig, run_dir: Path) -> None:
    """The run folder's config.yaml, replaced whole. A resumed run writes it again: a budget raised with
    `--resume RUN --env-steps N` is then part of the run, and a later plain resume keeps it."""
    tmp = run_dir / "config.yaml.tmp"
    tmp.write_text(yaml.safe_dump(config_to_dict(config), sort_keys=False))
    tmp.replace(run_dir / "config.yaml")
