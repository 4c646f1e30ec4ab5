"""Goal-conditioned skill networks: the actor π(a | obs, goal) and the critic Q(obs, goal, a) that SAC trains.

The actor carries its own observation and goal normalizers (running mean and variance, as buffers), so a
checkpoint or an exported ONNX file is the whole policy: nothing outside it has to remember statistics.
`ActorConfig` holds every constructor argument, so `GoalConditionedActor(ActorConfig(**saved))` rebuilds it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn
from torch.nn import functional as F  # noqa: N812 (the usual spelling)


class RunningNormalizer(nn.Module):
    """(x - mean) / std, clipped to ±clip; mean and variance are running statistics updated by `update`.

    The statistics are buffers, not parameters: they travel with `state_dict` and are folded into an ONNX
    export as constants, but no optimizer touches them.
    """

    def __init__(self, dim: int, clip: float = 5.0, eps: float = 1e-4) -> None:
        super().__init__()
        self.clip, self.eps = clip, eps
        self.register_buffer("mean", torch.zeros(dim))
        self.register_buffer("var", torch.ones(dim))
        self.register_buffer("count", torch.tensor(0.0, dtype=torch.float64))

    mean: torch.Tensor
    var: torch.Tensor
    count: torch.Tensor

    @torch.no_grad()
    def update(self, x: torch.Tensor) -> None:
        """Fold a batch (..., dim) into the statistics (Chan et al.'s parallel mean and variance)."""
        x = x.reshape(-1, self.mean.shape[0]).to(self.mean)
        n = float(x.shape[0])
        if n == 0:
            return
        batch_mean, batch_var = x.mean(0), x.var(0, unbiased=False)
        total = float(self.count) + n
        delta = batch_mean - self.mean
        self.mean += delta * (n / total)
        m2 = self.var * float(self.count) + batch_var * n + delta.square() * float(self.count) * n / total
        self.var.copy_(m2 / total)
        self.count.fill_(total)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return ((x - self.mean) / torch.sqrt(self.var + self.eps)).clamp(-self.clip, self.clip)


def mlp(in_dim: int, hidden: tuple[int, ...], out_dim: int) -> nn.Sequential:
    """Linear-ReLU layers of the given widths, then a linear output layer."""
    layers: list[nn.Module] = []
    for width in hidden:
        layers += [nn.Linear(in_dim, width), nn.ReLU()]
        in_dim = width
    layers.append(nn.Linear(in_dim, out_dim))
    return nn.Sequential(*layers)


@dataclass(frozen=True)
class ActorConfig:
    """The actor's constructor arguments; saved beside its weights so a checkpoint rebuilds it."""

    obs_dim: int
    """Length of the observation vector (the env's observation layout)."""
    goal_dim: int
    """Length of the desired-goal vector (the env's goal layout)."""
    action_dim: int = 4
    """End-effector velocity fraction (3) and gripper command (1), each in [-1, 1]."""
    hidden: tuple[int, ...] = (256, 256)
    """Widths of the hidden layers."""
    norm_clip: float = 5.0
    """Normalized inputs are clipped to ±norm_clip."""
    log_std_min: float = -5.0
    """Lower bound of the Gaussian's log standard deviation (before tanh)."""
    log_std_max: float = 2.0
    """Upper bound of the Gaussian's log standard deviation."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(w) for w in self.hidden))  # lists from YAML or JSON
        if min(self.obs_dim, self.goal_dim, self.action_dim) < 1:
            raise ValueError(f"obs_dim, goal_dim and action_dim must be >= 1, got {self}")


class GoalConditionedActor(nn.Module):
    """π(a | obs, goal): an MLP on [normalized obs, normalized goal] giving a tanh-squashed Gaussian.

    `forward` is the deterministic policy for deployment (tanh of the mean, in [-1, 1]^action_dim);
    `sample` draws a reparameterized action with its log-probability for SAC.
    """

    def __init__(self, config: ActorConfig) -> None:
        super().__init__()
        self.config = config
        self.obs_normalizer = RunningNormalizer(config.obs_dim, config.norm_clip)
        self.goal_normalizer = RunningNormalizer(config.goal_dim, config.norm_clip)
        self.trunk = mlp(config.obs_dim + config.goal_dim, config.hidden, 2 * config.action_dim)

    def normalize(self, obs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """[normalized obs, normalized goal]: the input of the actor's MLP and of the critic."""
        return torch.cat([self.obs_normalizer(obs), self.goal_normalizer(goal)], dim=-1)

    def input_statistics(self) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """(obs mean, obs std, goal mean, goal std) the normalizers learned: the range export checks."""
        obs, goal = self.obs_normalizer, self.goal_normalizer
        return obs.mean, (obs.var + obs.eps).sqrt(), goal.mean, (goal.var + goal.eps).sqrt()

    def update_normalizers(self, obs: torch.Tensor, goal: torch.Tensor) -> None:
        self.obs_normalizer.update(obs)
        self.goal_normalizer.update(goal)

    def mean_log_std(self, obs: torch.Tensor, goal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The pre-tanh Gaussian's mean and (clamped) log-std, (..., action_dim) each."""
        mean, log_std = self.trunk(self.normalize(obs, goal)).chunk(2, dim=-1)
        return mean, log_std.clamp(self.config.log_std_min, self.config.log_std_max)

    def mean_and_detached_log_std(
        self, obs: torch.Tensor, goal: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """`mean_log_std` with the log-std read from features that pass it no gradient: what behaviour
        cloning fits, so that fitting the spread never bends the features the mean needs."""
        features = self.trunk[:-1](self.normalize(obs, goal))
        head, n = self.trunk[-1], self.config.action_dim
        assert isinstance(head, nn.Linear)
        mean = F.linear(features, head.weight[:n], head.bias[:n])
        log_std = F.linear(features.detach(), head.weight[n:], head.bias[n:])
        return mean, log_std.clamp(self.config.log_std_min, self.config.log_std_max)

    def forward(self, obs: torch.Tensor, goal: torch.Tensor) -> torch.Tensor:
        """The deterministic action tanh(mean), (..., action_dim) in [-1, 1]."""
        return torch.tanh(self.mean_log_std(obs, goal)[0])

    def sample(self, obs: torch.Tensor, goal: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """(action, log π(action)) with action = tanh(mean + std·ε), differentiable in the weights."""
        mean, log_std = self.mean_log_std(obs, goal)
        pre_tanh = mean + log_std.exp() * torch.randn_like(mean)
        gaussian_log_prob = (-0.5 * ((pre_tanh - mean) / log_std.exp()).square() - log_std).sum(-1) - (
            0.5 * math.log(2 * math.pi) * mean.shape[-1]
        )
        # log|d tanh(u)/du| = 2 (log 2 - u - softplus(-2u)), numerically stable for large |u|.
        squash = (2 * (math.log(2) - pre_tanh - F.softplus(-2 * pre_tanh))).sum(-1)
        return torch.tanh(pre_tanh), gaussian_log_prob - squash


class GoalConditionedCritic(nn.Module):
    """`num_q` independent Q(obs, goal, a) heads (SAC's clipped double-Q takes their minimum).

    It reads the actor's normalized input (`actor.normalize(obs, goal)`), so actor and critic share one
    set of statistics, as in HER's reference implementation.
    """

    def __init__(self, config: ActorConfig, num_q: int = 2) -> None:
        super().__init__()
        in_dim = config.obs_dim + config.goal_dim + config.action_dim
        self.heads = nn.ModuleList(mlp(in_dim, config.hidden, 1) for _ in range(num_q))

    def forward(self, normalized: torch.Tensor, action: torch.Tensor) -> torch.Tensor:
        """Q-values, shape (num_q, batch)."""
        x = torch.cat([normalized, action], dim=-1)
        return torch.stack([head(x).squeeze(-1) for head in self.heads])
