"""Soft actor-critic (Haarnoja et al. 2018) for goal-conditioned skills, with an optional demonstration term.

The algorithm only: `act` picks actions, `update` takes one gradient step on a batch (`pretrain` one on
demonstrations alone, before RL); the runner owns the loop, the envs and the replay buffers. With
demonstrations, a batch's demo rows add a behaviour-cloning loss on the actor, kept only where the critic
rates the demonstrated action above the actor's own (the Q-filter of Nair et al. 2018, "Overcoming
Exploration in Reinforcement Learning with Demonstrations").
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass, field
from typing import Any

import torch

from policies.skills.her_buffer import Batch
from policies.skills.networks import ActorConfig, GoalConditionedActor, GoalConditionedCritic


@dataclass(frozen=True)
class SacConfig:
    """SAC's hyperparameters; one line of why beside the ones that matter most for goal reaching."""

    hidden: tuple[int, ...] = (256, 256)
    """Hidden widths of actor and critics."""
    gamma: float = 0.98
    """Discount; HER's reference value for 50-step episodes."""
    tau: float = 0.05
    """Polyak rate of the target critics (HER's reference uses 0.05)."""
    actor_lr: float = 1e-3
    critic_lr: float = 1e-3
    alpha_lr: float = 1e-3
    init_alpha: float = 0.1
    """Initial entropy temperature; tuned automatically towards target_entropy."""
    target_entropy: float | None = None
    """Entropy target; None means -action_dim."""
    batch_size: int = 256
    """Transitions per gradient step (demo rows included)."""
    clip_target: bool = True
    """Clip TD targets to [-1 / (1 - gamma), 0], the range of a return of rewards in [-1, 0] (as HER does)."""
    action_l2: float = 0.0
    """Weight of a penalty on the squared actions the actor samples (as OpenAI's HER uses on Fetch): it buys
    gentle commands near the goal, where full-gain moves on noisy, late observations overshoot."""
    demo_batch_size: int = 0
    """Rows of each batch drawn from the demonstration buffer (0: no demonstrations)."""
    bc_weight: float = 1.0
    """Weight of the Q-filtered behaviour-cloning loss on demo rows."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "hidden", tuple(int(w) for w in self.hidden))
        if not 0 < self.gamma < 1 or not 0 < self.tau <= 1:
            raise ValueError(f"need 0 < gamma < 1 and 0 < tau <= 1, got gamma={self.gamma}, tau={self.tau}")
        if not 0 <= self.demo_batch_size < self.batch_size:
            raise ValueError(f"demo_batch_size must be in [0, batch_size), got {self.demo_batch_size}")


@dataclass
class UpdateStats:
    """Means over the gradient steps since the last `pop`, for logging."""

    sums: dict[str, torch.Tensor] = field(default_factory=dict)
    count: int = 0

    def add(self, values: dict[str, torch.Tensor]) -> None:
        # Kept as tensors: a float() per value would wait for the GPU after every gradient step.
        for name, value in values.items():
            self.sums[name] = self.sums[name] + value if name in self.sums else value.clone()
        self.count += 1

    def pop(self) -> dict[str, float]:
        means = {name: float(total) / max(self.count, 1) for name, total in self.sums.items()}
        self.sums, self.count = {}, 0
        return means


def _tensors(batch: Batch, device: torch.device) -> tuple[torch.Tensor, ...]:
    return tuple(
        torch.from_numpy(x).to(device, non_blocking=True)
        for x in (batch.obs, batch.goal, batch.action, batch.reward, batch.next_obs, batch.terminated)
    )


def _cloned_action(demo: Batch, device: torch.device) -> torch.Tensor:
    """The action behaviour cloning imitates: the expert's own where the buffer kept it, else the executed."""
    action = demo.action if demo.expert_action is None else demo.expert_action
    return torch.from_numpy(action).to(device, non_blocking=True)


class SAC:
    """Actor, twin critics with targets, entropy temperature, and their optimizers, all on one device.

    `act`, `observe` and `update` take CPU tensors or batches and move them there themselves.
    """

    def __init__(self, actor_config: ActorConfig, config: SacConfig, device: str = "cpu") -> None:
        self.config = config
        self.device = torch.device(device)
        self.actor = GoalConditionedActor(actor_config).to(self.device)
        self.critic = GoalConditionedCritic(actor_config).to(self.device)
        self.critic_target = copy.deepcopy(self.critic).requires_grad_(False)
        self.log_alpha = torch.tensor(math.log(config.init_alpha), device=self.device, requires_grad=True)
        self.target_entropy = (
            -float(actor_config.action_dim) if config.target_entropy is None else config.target_entropy
        )
        # fused Adam: one kernel per step instead of a handful per parameter tensor (CPU too since torch 2.4).
        self.actor_optimizer = torch.optim.Adam(self.actor.parameters(), lr=config.actor_lr, fused=True)
        self.critic_optimizer = torch.optim.Adam(self.critic.parameters(), lr=config.critic_lr, fused=True)
        self.alpha_optimizer = torch.optim.Adam([self.log_alpha], lr=config.alpha_lr, fused=True)
        self._critic_params: list[torch.Tensor] = list(self.critic.parameters())
        self._target_params: list[torch.Tensor] = list(self.critic_target.parameters())
        self.stats = UpdateStats()
        low = -1.0 / (1.0 - config.gamma) if config.clip_target else -math.inf
        self._target_range = (low, 0.0 if config.clip_target else math.inf)

    @torch.no_grad()
    def act(self, obs: torch.Tensor, goal: torch.Tensor, deterministic: bool = False) -> torch.Tensor:
        """CPU actions (B, action_dim) in [-1, 1]: sampled while training, tanh(mean) if deterministic."""
        obs, goal = obs.to(self.device), goal.to(self.device)
        action = self.actor(obs, goal) if deterministic else self.actor.sample(obs, goal)[0]
        return action.cpu()

    def observe(self, obs: torch.Tensor, goal: torch.Tensor, achieved: torch.Tensor) -> None:
        """Fold collected observations into the normalizers; goals from both desired and achieved ones."""
        self.actor.obs_normalizer.update(obs.to(self.device))
        self.actor.goal_normalizer.update(torch.cat([goal, achieved]).to(self.device))

    def update(self, batch: Batch, demo: Batch | None = None) -> None:
        """One gradient step of critics, actor and temperature; `demo` rows get the Q-filtered BC term."""
        obs, goal, action, reward, next_obs, terminated = _tensors(batch, self.device)
        n_demo = 0
        if demo is not None:
            parts = _tensors(demo, self.device)
            n_demo = parts[0].shape[0]
            ours = (obs, goal, action, reward, next_obs, terminated)
            obs, goal, action, reward, next_obs, terminated = (
                torch.cat([a, b]) for a, b in zip(ours, parts, strict=True)
            )
        alpha = self.log_alpha.exp().detach()
        normalized, stats = self._critic_step(obs, goal, action, reward, next_obs, terminated, alpha)

        for param in self._critic_params:  # the actor's loss needs no gradient of the critic's weights
            param.requires_grad = False
        new_action, log_prob = self.actor.sample(obs, goal)
        q_new = self.critic(normalized, new_action).min(0).values
        actor_loss = (alpha * log_prob - q_new).mean()
        if self.config.action_l2:
            actor_loss = actor_loss + self.config.action_l2 * new_action.square().mean()
        stats["actor_loss"] = actor_loss.detach()
        if demo is not None:
            demo_action = _cloned_action(demo, self.device)
            deterministic = self.actor(obs[-n_demo:], goal[-n_demo:])
            with torch.no_grad():
                q_demo = self.critic(normalized[-n_demo:], demo_action).min(0).values
                q_policy = self.critic(normalized[-n_demo:], deterministic).min(0).values
                keep = (q_demo > q_policy).float()
            bc_loss = ((deterministic - demo_action).square().sum(-1) * keep).sum() / keep.sum().clamp(min=1)
            actor_loss = actor_loss + self.config.bc_weight * bc_loss
            stats["bc_loss"], stats["bc_kept"] = bc_loss.detach(), keep.mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        actor_loss.backward()
        self.actor_optimizer.step()
        for param in self._critic_params:
            param.requires_grad = True

        alpha_loss = -(self.log_alpha * (log_prob.detach() + self.target_entropy)).mean()
        self.alpha_optimizer.zero_grad(set_to_none=True)
        alpha_loss.backward()
        self.alpha_optimizer.step()
        stats["alpha"] = alpha
        stats["entropy"] = -log_prob.detach().mean()
        self.stats.add(stats)

    def pretrain(self, demo: Batch) -> None:
        """One step before RL on demonstrations alone: the actor clones their actions (every row, no
        Q-filter: the critic knows nothing yet) and fits its std to its error; the critics learn the values
        of those actions under the actor being cloned. RL then starts from the expert's imitation with a
        critic that already ranks it (DDPGfD, Vecerik et al. 2017, pretrains on its demonstrations
        likewise)."""
        obs, goal, action, reward, next_obs, terminated = _tensors(demo, self.device)
        _, stats = self._critic_step(
            obs, goal, action, reward, next_obs, terminated, self.log_alpha.exp().detach()
        )
        mean, log_std = self.actor.mean_and_detached_log_std(obs, goal)
        cloned, target = torch.tanh(mean), _cloned_action(demo, self.device)
        bc_loss = (cloned - target).square().sum(-1).mean()
        # The spread: the std under which the expert's action is likeliest around the cloned one (held fixed),
        # in action units; as tanh's slope is at most 1, sampled actions then stray no further than the
        # clone's own error. Untrained, the std stayed at ~1-1.5 in pre-tanh units and RL's first sampled
        # episodes were near-random (pick and place: 0.08 of them succeeded where the mean did 0.9).
        residual = (target - cloned.detach()) * torch.exp(-log_std)
        spread_loss = (0.5 * residual.square() + log_std).sum(-1).mean()
        self.actor_optimizer.zero_grad(set_to_none=True)
        (bc_loss + spread_loss).backward()
        self.actor_optimizer.step()
        stats["pretrain_bc_loss"] = bc_loss.detach()
        stats["pretrain_log_std"] = log_std.detach().mean()
        self.stats.add(stats)

    def _critic_step(
        self,
        obs: torch.Tensor,
        goal: torch.Tensor,
        action: torch.Tensor,
        reward: torch.Tensor,
        next_obs: torch.Tensor,
        terminated: torch.Tensor,
        alpha: torch.Tensor,
    ) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
        """One TD step of the twin critics and the Polyak update of their targets; returns the batch's
        normalized input (the actor's loss reuses it) and the step's statistics."""
        with torch.no_grad():
            next_action, next_log_prob = self.actor.sample(next_obs, goal)
            next_q = self.critic_target(self.actor.normalize(next_obs, goal), next_action).min(0).values
            target = reward + self.config.gamma * (1.0 - terminated) * (next_q - alpha * next_log_prob)
            target = target.clamp(*self._target_range)
            normalized = self.actor.normalize(obs, goal)
        q = self.critic(normalized, action)
        critic_loss = (q - target).square().mean(1).sum()
        self.critic_optimizer.zero_grad(set_to_none=True)
        critic_loss.backward()
        self.critic_optimizer.step()
        with torch.no_grad():
            torch._foreach_lerp_(self._target_params, self._critic_params, self.config.tau)
        return normalized, {"critic_loss": critic_loss.detach(), "q": q.detach().mean()}

    def state_dict(self) -> dict[str, Any]:
        return {
            "actor": self.actor.state_dict(),
            "critic": self.critic.state_dict(),
            "critic_target": self.critic_target.state_dict(),
            "log_alpha": self.log_alpha.detach().clone(),
            "actor_optimizer": self.actor_optimizer.state_dict(),
            "critic_optimizer": self.critic_optimizer.state_dict(),
            "alpha_optimizer": self.alpha_optimizer.state_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.actor.load_state_dict(state["actor"])
        self.critic.load_state_dict(state["critic"])
        self.critic_target.load_state_dict(state["critic_target"])
        with torch.no_grad():
            self.log_alpha.copy_(state["log_alpha"])
        self.actor_optimizer.load_state_dict(state["actor_optimizer"])
        self.critic_optimizer.load_state_dict(state["critic_optimizer"])
        self.alpha_optimizer.load_state_dict(state["alpha_optimizer"])
