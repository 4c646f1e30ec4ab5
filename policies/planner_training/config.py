"""Planner training configuration: one YAML per algorithm (`policies/planner_training/config/*.yaml`)
loaded into frozen dataclasses; unknown keys are errors that list the known ones."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from policies.planner_training.advantages import ESTIMATORS
from policies.planning.llm_config import DEFAULT_MODEL, DTYPES
from policies.worlds import WORLDS
from sim.config_mapping import build_dataclass, config_to_dict

CONFIG_DIR = Path(__file__).parent / "config"
ALGORITHMS = ("bc", "grpo", "gigpo", "hgpo", "dpo")
SPLITS = ("decision", "episode")
DOMAIN_BUDGETS = {"tabletop": 10, "alfworld": 50}
"""Subgoals an episode may take by default: ALFWorld games get the 50 commands `hgpo alfworld eval` and
the bridge give them, as a 10-subgoal budget ends most games before the object is even found."""


@dataclass(frozen=True)
class LoraSettings:
    """The peft LoRA adapter that is trained (the base model stays frozen)."""

    r: int = 8
    alpha: int = 16
    dropout: float = 0.0
    """Dropout on the adapter's input; 0 keeps RL's old and new log-probabilities comparable."""
    target_modules: tuple[str, ...] = ("all-linear",)
    """Module names to adapt; ("all-linear",) adapts every linear layer but the output head."""
    last_layers: int = 0
    """Adapt only the last N transformer blocks (0: all). Gradients then stop at the lowest adapted block,
    which makes a training step on a CPU several times cheaper for a deep model."""


@dataclass(frozen=True)
class RewardWeights:
    """A decision's reward: process for a subgoal that succeeded, minus penalty for an invalid answer or a
    failed subgoal, plus outcome on the episode's last decision when the task succeeded."""

    outcome: float = 1.0
    process: float = 0.1
    penalty: float = 0.1


@dataclass(frozen=True)
class RolloutSettings:
    """Where episodes start and how they run (in-process, the planner node's closed loop)."""

    tasks: tuple[str, ...] = ("reach", "pick_place", "push", "stack", "sort")
    """tabletop: the tasks (or groups: templated, compositions, all) to train and evaluate on."""
    train_split: str = ""
    """tabletop: grammar split of the training states' instructions: "" (canonical sentences) or train."""
    eval_split: str = ""
    """tabletop: grammar split of the evaluation states: "" (canonical sentences) or heldout."""
    train_seeds: int = 200
    """tabletop: training initial states are seeds 0..train_seeds-1 of each task."""
    eval_seed_start: int = 10_000
    """tabletop: held-out evaluation seeds start here (never trained on)."""
    games: str = "runs/alfworld/games/train"
    """alfworld: folder of training games (`hgpo alfworld make-games`)."""
    eval_games: str = "runs/alfworld/games/valid_unseen"
    """alfworld: folder of evaluation games."""
    max_subgoals: int = 0
    """An episode fails after this many executed subgoals (alfworld: the game's command budget); 0: the
    domain's usual budget (`budget`)."""
    subgoal_timeout_s: float = 12.0
    """tabletop: simulated seconds a subgoal may take."""
    skills: str = "onnx"
    """tabletop: the controller's skill policy backend (`policies/control`): onnx runs the learned policies
    in `skill_dir` and the scripted expert for skills without one, as `hgpo launch sim` does; expert runs
    the scripted skills only."""
    skill_dir: str = ""
    """tabletop, skills onnx: folder of `<skill>/policy.onnx` files; "": the shipped pretrained ones."""
    action_hold: int = 4
    """tabletop: physics steps per control tick (100 Hz physics, 25 Hz control)."""
    temperature: float = 1.0
    """Sampling temperature of rollouts (evaluation is greedy)."""
    batch: int = 8
    """Episodes played at once, each in its own thread and world, their decisions answered in one
    batched generation (the prompts' shared prefix prefilled once); 1: one episode at a time."""
    decoding: str = "jump_forward"
    """The constrained decoder of rollouts (LLMConfig.decoding): jump_forward or plain; the same
    distributions either way."""

    def budget(self, domain: str) -> int:
        """The subgoal budget of an episode: `max_subgoals`, or the domain's (DOMAIN_BUDGETS)."""
        return self.max_subgoals or DOMAIN_BUDGETS[domain]


@dataclass(frozen=True)
class BCSettings:
    demos: tuple[str, ...] = ()
    """JSONL files of demonstrations (`hgpo tabletop-demos`, `hgpo alfworld demos`) or decision logs."""
    val_fraction: float = 0.1
    epochs: int = 3
    batch_size: int = 8
    patience: int = 2
    """Stop after this many validations without a lower validation loss (the best adapter is kept)."""
    validate_every: int = 50
    """Optimizer steps between validations (and at every epoch's end)."""
    split: str = "decision"
    """What validation holds out: `decision`, a seeded share of all decisions; `episode`, whole games
    (alfworld) or task seeds (tabletop), so that validation is played on episodes training never saw."""
    repeat: dict[str, int] = field(default_factory=dict)
    """Times each training decision of a skill is shown per epoch, e.g. {heat: 4, take: 2}: rare steps
    of the expert's plans count for more (validation is never repeated). Unlisted skills: once."""

    def __post_init__(self) -> None:
        if self.split not in SPLITS:
            raise ValueError(f"bc.split must be one of {', '.join(SPLITS)}, not {self.split!r}")
        if not isinstance(self.repeat, dict):
            raise ValueError(f"bc.repeat must map skills to counts, e.g. {{take: 2}}, not {self.repeat!r}")
        bad = {k: v for k, v in self.repeat.items() if not isinstance(v, int) or v < 1}
        if bad:
            raise ValueError(f"bc.repeat: each count must be a whole number >= 1, got {bad}")


@dataclass(frozen=True)
class RLSettings:
    group_size: int = 8
    """Episodes per initial state (the group of GRPO)."""
    states_per_iteration: int = 2
    iterations: int = 50
    epochs: int = 2
    """Passes of clipped policy-gradient updates over each iteration's decisions."""
    minibatch: int = 8
    clip: float = 0.2
    kl_coef: float = 0.02
    """Weight of the KL penalty to the reference (the starting adapter, frozen)."""
    gamma: float = 0.95
    """Discount of step-level returns-to-go (GiGPO, HGPO)."""
    step_weight: float = 1.0
    """Weight of the step-level advantage added to the episode-level one (GiGPO, HGPO)."""
    std: bool = True
    """Divide relative advantages by their group's standard deviation."""
    max_depth: int = 2
    """HGPO: deepest shared history context K."""
    alpha: float = 1.0
    """HGPO: a depth-k group's weight is (k + 1)^alpha."""
    dynamic_sampling: int = 0
    """DAPO's dynamic sampling: keep only groups whose episodes' returns differ, drawing more initial states
    (at most this many extra draws of `states_per_iteration`) until `states_per_iteration` such groups are
    in the batch; 0: off (every group is kept)."""
    bc_coef: float = 0.0
    """Weight of a BC term (InstructGPT's PPO-ptx): every optimizer step of the update also descends this
    times the mean negative log-likelihood of `bc_minibatch` expert decisions drawn from `bc.demos`, so the
    families and phrasings outside an iteration's few rollout states keep what BC taught them (the KL
    penalty is measured only at the batch's own states); 0: off."""
    bc_minibatch: int = 8
    """Expert decisions of the BC term per optimizer step."""
    overlap: bool = False
    """With rollout workers (`--workers`, `--ray-address`): the workers sample iteration t+1's groups with
    the adapter as it was before iteration t's update while the learner runs that update, one iteration
    off-policy; the update's ratio scores them against those older weights (docs/distributed.md).
    False: rollouts and updates take turns, every iteration on-policy."""


@dataclass(frozen=True)
class DPOSettings:
    beta: float = 0.1
    rounds: int = 5
    """Rounds of: rollouts with the current policy, pair mining, `epochs` passes of DPO over the pairs."""
    group_size: int = 8
    states_per_round: int = 4
    epochs: int = 2
    batch_size: int = 4
    """Pairs per optimizer step."""
    max_pairs_per_state: int = 4
    minibatch: int = 8
    """Decisions per forward and backward pass: bounds memory whatever a trajectory's length."""


@dataclass(frozen=True)
class PlannerTrainConfig:
    algo: str = "bc"
    domain: str = "tabletop"
    model: str = DEFAULT_MODEL
    """Base model: an alias, a folder or a cached hub name (as the planner's `llm.model`)."""
    adapter: str = ""
    """Starting LoRA adapter folder (RL, DPO: the BC adapter; also the frozen KL / DPO reference)."""
    seed: int = 0
    lr: float = 2e-4
    max_grad_norm: float = 1.0
    threads: int = 1
    """torch CPU threads, rollouts and updates. More than one only pays on cores no other process is
    using: on a busy machine every op of the pool waits at its barrier for a descheduled thread, and
    batch-1 decoding (hundreds of small ops per token) slowed ~6x with 2 threads on 2 busy cores."""
    device: str = "cpu"
    """torch device of rollouts and updates (cuda on a GPU machine)."""
    dtype: str = "float32"
    """Number format of the frozen base model's weights: float32 | bfloat16 | auto (bfloat16 where the device
    multiplies it natively, as the planner's `llm.dtype`). The LoRA weights and the optimizer stay float32."""
    history_k: int = 4
    """Subgoals of history in the prompt, as the planner's `llm.history_k`."""
    task_rules: bool = True
    """Rollouts and evaluations prune the domain's futile and off-task subgoals, as the planner's
    `llm.task_rules` (false: the model chooses among every valid subgoal, to train or measure without
    them)."""
    eval_every: int = 10
    """Iterations (RL) or rounds (DPO) between evaluations; 0: only at the end."""
    eval_episodes: int = 4
    """Greedy evaluation episodes per task (tabletop) or games (alfworld; 0: all)."""
    checkpoint_every: int = 5
    time_budget_s: float = 0.0
    """Stop training after this much wall-clock time (0: no limit)."""
    pass_tokens: int = 4096
    """Most tokens (rows x the longest row) a BC or RL forward/backward pass holds: a minibatch of longer
    prompts runs in several passes, its gradients accumulated (the same update). The activations kept for
    the backward grow with it, ~1 MB a token for SmolLM2-135M with LoRA on every layer; 0: a minibatch
    in one pass, whatever its prompts' length."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    reward: RewardWeights = field(default_factory=RewardWeights)
    rollout: RolloutSettings = field(default_factory=RolloutSettings)
    bc: BCSettings = field(default_factory=BCSettings)
    rl: RLSettings = field(default_factory=RLSettings)
    dpo: DPOSettings = field(default_factory=DPOSettings)

    def __post_init__(self) -> None:
        if self.algo not in ALGORITHMS:
            raise ValueError(f"unknown algorithm {self.algo!r}; known: {', '.join(ALGORITHMS)}")
        WORLDS.world(self.domain)  # an unknown name raises, listing the known ones
        if self.algo not in ESTIMATORS and self.rl.overlap:
            raise ValueError(
                f"rl.overlap is for grpo, gigpo and hgpo, whose clipped ratio corrects for rollouts one "
                f"update old; {self.algo} takes turns (drop rl.overlap)"
            )
        if self.pass_tokens < 0:
            raise ValueError(f"pass_tokens must be >= 0 (0: a minibatch in one pass), got {self.pass_tokens}")
        if self.algo in ESTIMATORS and self.rl.group_size < 2:
            raise ValueError("rl.group_size must be >= 2: advantages are relative within a group")
        if self.rl.bc_coef < 0 or self.rl.bc_minibatch < 1:
            raise ValueError(
                f"rl.bc_coef must be >= 0 and rl.bc_minibatch >= 1, got {self.rl.bc_coef} and "
                f"{self.rl.bc_minibatch}"
            )
        if self.rl.bc_coef and self.algo not in ESTIMATORS:
            raise ValueError(f"rl.bc_coef is for grpo, gigpo and hgpo, not {self.algo}")
        if self.rl.bc_coef and not self.bc.demos:
            raise ValueError(
                "rl.bc_coef needs expert decisions: give --demos FILE.jsonl (`hgpo tabletop-demos`, "
                "`hgpo alfworld demos`) or bc.demos in the config"
            )
        if self.dtype not in DTYPES:
            raise ValueError(f"unknown dtype {self.dtype!r}; known: {', '.join(DTYPES)}")
        if self.lr <= 0:
            raise ValueError(f"lr must be > 0, got {self.lr}")
        if self.rollout.batch < 1:
            raise ValueError(
                f"rollout.batch must be >= 1 (1: one episode at a time), not {self.rollout.batch}"
            )


def from_mapping(data: dict[str, Any], where: str = "config") -> PlannerTrainConfig:
    config: PlannerTrainConfig = build_dataclass(PlannerTrainConfig, data, where)
    return config


def to_mapping(config: PlannerTrainConfig) -> dict[str, Any]:
    return config_to_dict(config)
