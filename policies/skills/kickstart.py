"""Kickstarting (Schmitt et al. 2018): PPO whose actor keeps learning from the policy it was started from.

Distilled from the DAgger clone and then left to PPO alone, the actor lost the clone's grasps within
~50,000 env steps on the CPU, at every learning rate tried (docs/skills.md): the adaptive schedule held the
shared rate at its 1e-5 floor, so the critic hardly learned and the advantages were mostly noise, which a
policy as precise as a grasp does not survive. So after each PPO update the actor also regresses onto the
teacher's actions at the states of the rollout it just played (its own states, as in DAgger), with a step
size that decays every iteration: early on the teacher holds the policy where PPO's advantages are noise;
later RL alone decides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from rsl_rl.algorithms import PPO
from rsl_rl.models import MLPModel
from tensordict import TensorDict

from policies.skills.evaluation import Policy
from policies.skills.ppo_config import ACTOR_GROUPS
from policies.skills.ppo_distill import regress, teacher_actions


@dataclass
class Kickstart:
    """The teacher term: `updates` minibatch steps after each PPO update, at `lr * decay ** iteration`."""

    teacher: Policy
    lr: float
    decay: float
    updates: int
    iteration: int = 0
    """PPO iterations so far (a resumed run sets it, so the step size goes on decaying where it was)."""
    batch_size: int = 1024
    _optimizer: torch.optim.Optimizer | None = field(default=None, repr=False)

    def step(self, actor: MLPModel, observations: TensorDict) -> float | None:
        """Regress the actor's mean onto the teacher at `observations`; the last minibatch's loss, or None
        while the actor is frozen (the critic's warm-up)."""
        lr = self.lr * self.decay**self.iteration
        self.iteration += 1
        if not any(p.requires_grad for p in actor.mlp.parameters()):
            return None
        if self._optimizer is None:
            self._optimizer = torch.optim.Adam(actor.mlp.parameters(), lr=lr)
        for group in self._optimizer.param_groups:
            group["lr"] = lr
        labels = teacher_actions(self.teacher, observations, str(observations.device))
        inputs = torch.cat([observations[group] for group in ACTOR_GROUPS], dim=-1)
        return regress(actor, self._optimizer, inputs, labels, self.updates, self.batch_size)


class KickstartPPO(PPO):
    """rsl-rl's PPO, then the teacher term on the same rollout (`ppo.kickstart_lr`); rsl-rl logs its loss as
    Loss/kickstart. Without `kickstart` set (an export rebuilding the runner) it is PPO."""

    kickstart: Kickstart | None = None

    def update(self) -> dict[str, float]:
        observations = self.storage.observations.flatten(0, 1)  # this rollout's, until the next one
        losses = super().update()
        loss = None if self.kickstart is None else self.kickstart.step(self.actor, observations)  # type: ignore[arg-type]
        if loss is not None:
            losses["kickstart"] = loss
        return losses
