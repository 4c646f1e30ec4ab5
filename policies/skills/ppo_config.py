"""PPO's settings (the `ppo:` block of a training YAML with `algorithm: ppo`), turned into rsl-rl-lib's dict.

The algorithm is rsl-rl-lib's PPO (the library legged_gym and Isaac Lab train with); this dataclass only
names the knobs we expose, with rsl-rl's defaults unless a comment says otherwise.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REWARDS = ("dense", "sparse")
"""dense: minus the distance (metres) between achieved and desired goal after each step; sparse: the
contract's -1/0 reward. PPO has no hindsight relabelling, so it learns from the dense one."""

ACTOR_GROUPS = ["observation", "desired_goal"]
"""The policy's input, in this order: our ONNX contract's `obs` then `goal`."""
CRITIC_GROUPS = ["observation", "achieved_goal", "desired_goal"]


@dataclass(frozen=True)
class PpoConfig:
    reward: str = "dense"
    """dense (minus the goal distance, metres, every step) or sparse (the contract's -1/0): see rsl_rl_env."""
    num_steps_per_env: int = 24
    """Rollout length per env per iteration (one iteration = num_envs x this many env steps)."""
    hidden: tuple[int, ...] = (64, 64)
    activation: str = "elu"
    init_std: float = 1.0
    """Initial standard deviation of the Gaussian over actions."""
    obs_normalization: bool = True
    learning_rate: float = 1e-3
    num_learning_epochs: int = 5
    num_mini_batches: int = 4
    clip_param: float = 0.2
    gamma: float = 0.98
    """0.98 rather than rsl-rl's 0.99: the skills' episodes are 50-100 steps."""
    lam: float = 0.95
    entropy_coef: float = 0.005
    value_loss_coef: float = 1.0
    max_grad_norm: float = 1.0
    schedule: str = "adaptive"
    desired_kl: float = 0.01
    init_policy: str = ""
    """A trained policy of the same layouts (an ONNX file or a checkpoint, e.g. the DAgger clone
    policies/pretrained/skills/pick_and_place/teacher.onnx) that the actor learns to act as before PPO
    starts (`ppo_distill`); empty: PPO from scratch."""
    distill_rounds: int = 4
    """Rounds of DAgger distillation: the teacher plays the first, the student every later one."""
    distill_steps: int = 100
    """Env steps per env in each round (every state labelled by the teacher)."""
    distill_updates: int = 500
    """Minibatch regression steps after each round, over every label so far."""
    critic_warmup_iterations: int = 0
    """PPO iterations at a run's start in which only the critic learns, the actor acting as it started: a
    random critic's advantages would move a started actor (`init_policy`) at random."""
    kickstart_lr: float = 0.0
    """With `init_policy`: after each PPO update the actor also regresses onto that policy's actions at the
    rollout's states (`kickstart.py`), at this step size times `kickstart_decay` per iteration; 0: off."""
    kickstart_decay: float = 0.99
    """Per-iteration factor of the teacher term's step size (0.99: a twentieth of it after 300 iterations)."""
    kickstart_updates: int = 10
    """Minibatch regression steps of the teacher term per PPO iteration."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(w) for w in self.hidden))
        if self.reward not in REWARDS:
            raise ValueError(f"ppo.reward must be one of {', '.join(REWARDS)}, got {self.reward!r}")
        if self.num_steps_per_env < 1 or self.num_mini_batches < 1 or self.num_learning_epochs < 1:
            raise ValueError("ppo.num_steps_per_env, num_mini_batches and num_learning_epochs must be >= 1")
        if self.init_policy and min(self.distill_rounds, self.distill_steps, self.distill_updates) < 1:
            raise ValueError(
                "ppo.distill_rounds, distill_steps and distill_updates must be >= 1 with init_policy"
            )
        if self.kickstart_lr < 0 or self.kickstart_updates < 1 or not 0 < self.kickstart_decay <= 1:
            raise ValueError("need ppo.kickstart_lr >= 0, kickstart_updates >= 1, 0 < kickstart_decay <= 1")
        if self.kickstart_lr and not self.init_policy:
            raise ValueError("ppo.kickstart_lr needs ppo.init_policy: the teacher it holds the actor to")

    def rsl_rl_train_cfg(self) -> dict[str, Any]:
        """The `train_cfg` dict of rsl_rl's OnPolicyRunner (5.x layout: actor, critic, algorithm)."""
        model = {
            "class_name": "MLPModel",
            "hidden_dims": list(self.hidden),
            "activation": self.activation,
            "obs_normalization": self.obs_normalization,
        }
        return {
            "num_steps_per_env": self.num_steps_per_env,
            "save_interval": 10**9,  # our runner writes the checkpoints
            "obs_groups": {"actor": list(ACTOR_GROUPS), "critic": list(CRITIC_GROUPS)},
            "actor": {
                **model,
                "distribution_cfg": {"class_name": "GaussianDistribution", "init_std": self.init_std},
            },
            "critic": model,
            "algorithm": {
                "class_name": "policies.skills.kickstart:KickstartPPO" if self.kickstart_lr else "PPO",
                "learning_rate": self.learning_rate,
                "num_learning_epochs": self.num_learning_epochs,
                "num_mini_batches": self.num_mini_batches,
                "clip_param": self.clip_param,
                "gamma": self.gamma,
                "lam": self.lam,
                "entropy_coef": self.entropy_coef,
                "value_loss_coef": self.value_loss_coef,
                "max_grad_norm": self.max_grad_norm,
                "schedule": self.schedule,
                "desired_kl": self.desired_kl,
            },
        }
