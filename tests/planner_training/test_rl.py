"""RL and DPO: the objectives on hand-computed numbers, rewards from decisions, and each algorithm raising
the tiny GPT-2 planner's success on a real tabletop task (reach, seed 0, through the planner node's closed
loop and the controller's skill policies) above its measured start within a CI budget."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml  # type: ignore[import-untyped]

from policies.planner_training import rl
from policies.planner_training.config import (
    CONFIG_DIR,
    LoraSettings,
    RewardWeights,
    RLSettings,
    RolloutSettings,
    from_mapping,
)
from policies.planner_training.data import Example, collate
from policies.planner_training.dpo import Pair, dpo_backward, dpo_loss
from policies.planner_training.model import Policy, load_policy, token_logprobs
from policies.planner_training.rl import pg_loss
from policies.planner_training.rollouts import Episode, decision_reward, make_arena
from policies.planner_training.runner import play_iteration, train
from policies.planning import Decision, LLMConfig
from policies.planning.backends.transformers_lm import TransformersModel
from policies.planning.decisions import Attempt, DecisionTrace
from policies.skills.onnx_contract import PolicyFileError
from policies.worlds import make_planner
from tests.planner_training.live_lora import chat_examples, live_lora_policy
from tests.skill_policy_files import GAIN, write_policy_folder


def test_clipped_token_level_objective_by_hand() -> None:
    # two decisions, answers of 2 and 1 tokens; ratios e^0.5 (clipped at 1.2 for A>0), e^-0.1, e^0 (A<0)
    logp = torch.tensor([[0.5, -0.1], [0.0, 0.0]])
    old = torch.zeros(2, 2)
    ref = torch.tensor([[0.5, -0.1], [math.log(2.0), 0.0]])
    mask = torch.tensor([[True, True], [True, False]])
    adv = torch.tensor([1.0, -2.0])
    loss, stats = pg_loss(logp, old, ref, adv, mask, clip=0.2, kl_coef=0.5)
    surrogate = [min(math.exp(0.5), 1.2) * 1.0, math.exp(-0.1) * 1.0, 1.0 * -2.0]
    kl = [0.0, 0.0, 2.0 - math.log(2.0) - 1.0]  # k3: e^(ref - logp) - (ref - logp) - 1
    expected = sum(-s + 0.5 * k for s, k in zip(surrogate, kl, strict=True)) / 3
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert stats["kl"] == pytest.approx(sum(kl) / 3, rel=1e-6)
    assert stats["clip_fraction"] == pytest.approx(1 / 3)


def test_an_update_whose_advantages_are_all_zero_at_the_reference_is_skipped(tiny_planner_dir: Path) -> None:
    """Every sampled episode equally good (an adapter that wins them all): before the first step the policy
    is its reference, the objective's gradient is exactly zero, and minutes of passes are skipped. Once a
    step has moved the policy, the KL term has gradient and the update runs."""
    policy = load_policy(str(tiny_planner_dir), "", LoraSettings(r=4, alpha=8, dropout=0.0))
    examples = chat_examples(
        policy,
        "You plan the next subgoal of a tabletop task.",
        [
            ("Put the red block on the left plate.", "pick(red_block)"),
            ("Holding red_block.", "place(red_block, left_plate)"),
        ],
    )
    [(old, ref)] = rl.anchor_logprobs(policy, [examples])
    logp, _, mask = token_logprobs(policy.model, collate(examples, policy.pad_id))
    loss, _ = pg_loss(logp, old, ref, torch.zeros(len(examples)), mask, clip=0.2, kl_coef=0.02)
    loss.backward()
    assert all(float(p.grad.abs().max()) == 0.0 for p in policy.parameters() if p.grad is not None)

    start = policy.trainable_state()
    optimizer = torch.optim.AdamW(policy.parameters(), lr=0.05, weight_decay=0.0)
    settings = RLSettings(epochs=2, minibatch=1)
    zero = rl.Batch(examples, np.zeros(len(examples)))
    assert rl.update(policy, optimizer, zero, settings, 1.0, seed=0)["train/skipped"] == 1.0
    assert not optimizer.state
    assert all(torch.equal(p, start[n]) for n, p in policy.trainable_state().items())

    moved = rl.update(policy, optimizer, rl.Batch(examples, np.array([1.0, -1.0])), settings, 1.0, seed=0)
    assert "train/skipped" not in moved and optimizer.state
    after = rl.update(policy, optimizer, zero, settings, 1.0, seed=1)
    assert "train/skipped" not in after and after["train/kl"] > 0


def test_a_stale_batch_is_scored_against_the_weights_that_sampled_it(tiny_planner_dir: Path) -> None:
    """rl.overlap: the ratio's old log-probabilities are the behaviour adapter's, not the learner's, so the
    first step of an update on answers sampled by other weights already sees ratios away from 1 (clipped),
    where on-policy it starts at exactly 1; the reference's log-probabilities and the learner's own
    weights stay as they are."""
    policy = live_lora_policy(tiny_planner_dir)
    own = policy.trainable_state()
    generator = torch.Generator().manual_seed(0)
    behaviour = {n: v + 0.5 * torch.randn(v.shape, generator=generator) for n, v in own.items()}
    examples = chat_examples(
        policy, "You plan.", [("Reach the red block.", "reach(red_block)"), ("Done?", "pick(red_block)")]
    )
    [(old, ref)] = rl.anchor_logprobs(policy, [examples], behaviour)
    [(own_old, own_ref)] = rl.anchor_logprobs(policy, [examples])
    assert all(torch.equal(v, own[n]) for n, v in policy.trainable_state().items())
    policy.load_trainable_state(behaviour)
    with torch.no_grad():
        sampled, _, mask = token_logprobs(policy.model, collate(examples, policy.pad_id))
    torch.testing.assert_close(old, sampled)
    torch.testing.assert_close(ref, own_ref)
    assert float((old - own_old)[mask].abs().max()) > 0.1

    batch = rl.Batch(examples, np.array([1.0, -1.0]))
    settings = RLSettings(epochs=1, minibatch=2)
    clipped = {}
    for stale in (None, behaviour):
        policy.load_trainable_state(own)
        optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-3, weight_decay=0.0)
        metrics = rl.update(policy, optimizer, batch, settings, 1.0, seed=0, behaviour=stale)
        clipped[stale is not None] = metrics["train/clip_fraction"]
    assert clipped[False] == 0.0 and clipped[True] > 0.0


def test_a_minibatch_run_in_token_passes_is_the_same_update(tiny_planner_dir: Path) -> None:
    """Long prompts: a minibatch cut into passes of a few rows, gradients accumulated, takes the same step
    and reports the same loss as the whole minibatch in one pass."""

    def start() -> Policy:
        torch.manual_seed(0)  # live_lora_policy's draw of B
        return live_lora_policy(tiny_planner_dir)

    examples = chat_examples(
        start(),
        "You plan subgoals for a robot arm at a table. " * 4,
        [
            ("Scene: red_block on the table. Instruction: pick it", "pick(red_block)"),
            ("Scene: the gripper holds red_block", "place(red_block, left_plate)"),
            ("done?", "done()"),
            ("Scene: blue_block on red_block. " * 3, "reach(blue_block)"),
        ],
    )
    batch = rl.Batch(examples, np.array([1.0, -1.0, 0.5, -0.5]))
    settings = RLSettings(epochs=2, minibatch=4)
    results = []
    for pass_tokens in (0, 1, 150):
        policy = start()
        optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-2, weight_decay=0.0)
        metrics = rl.update(policy, optimizer, batch, settings, 1.0, 0, pass_tokens=pass_tokens)
        results.append((metrics, policy.trainable_state()))
    (whole, weights), *cut = results
    before = start().trainable_state()
    assert any(not torch.equal(value, before[name]) for name, value in weights.items())
    for metrics, moved in cut:
        for key in ("train/loss", "train/kl", "train/entropy"):
            assert metrics[key] == pytest.approx(whole[key], rel=1e-4, abs=1e-6)
        for name, value in weights.items():
            torch.testing.assert_close(moved[name], value, atol=1e-5, rtol=1e-4)


def test_the_bc_term_holds_expert_decisions_the_batch_never_shows(tiny_planner_dir: Path) -> None:
    """rl.bc_coef (PPO-ptx): updates that push one state's answers around also move the answers of states
    outside the batch (the KL penalty sees only the batch's). With the BC term on expert decisions of those
    other states, their likelihood ends higher than without it, the batch's own signal still learned; and
    a batch of all-zero advantages is not skipped, since the BC term alone has gradient."""

    def start() -> Policy:
        torch.manual_seed(0)  # live_lora_policy's draw of B
        return live_lora_policy(tiny_planner_dir)

    system = "You plan the next subgoal of a tabletop task."
    batch_turns = [
        ("Push the red block to the left plate.", a) for a in ("push(red_block)", "pick(red_block)")
    ]
    expert_turns = [
        ("Bring the gripper over the blue block.", "reach(blue_block)"),
        ("Clear the left plate.", "pick(green_block)"),
        ("Put the yellow cube on the right plate.", "pick(yellow_block)"),
    ]
    examples = chat_examples(start(), system, batch_turns)
    demos = chat_examples(start(), system, expert_turns)
    batch = rl.Batch(examples, np.array([1.0, -1.0]))

    def nll(policy: Policy, rows: list[Example]) -> float:
        with torch.no_grad():
            logp, _, _ = token_logprobs(policy.model, collate(rows, policy.pad_id))
        return float(-logp.sum()) / sum(len(e.answer_ids) for e in rows)

    ends = {}
    for coef in (0.0, 1.0):
        policy = start()
        optimizer = torch.optim.AdamW(policy.parameters(), lr=3e-2, weight_decay=0.0)
        settings = RLSettings(epochs=4, minibatch=2, kl_coef=0.0, bc_coef=coef, bc_minibatch=2)
        for seed in range(3):
            metrics = rl.update(policy, optimizer, batch, settings, 1.0, seed, demos=demos)
        assert ("train/bc_loss" in metrics) == bool(coef)
        pushed, picked = (nll(policy, [e]) for e in examples)
        assert pushed < picked  # the batch's advantage is learned either way
        ends[coef] = nll(policy, demos)
    before = nll(start(), demos)
    assert ends[1.0] < before < ends[0.0], (ends, before)

    policy = start()
    optimizer = torch.optim.AdamW(policy.parameters(), lr=3e-2, weight_decay=0.0)
    anchored = RLSettings(epochs=1, minibatch=2, bc_coef=1.0, bc_minibatch=2)
    zero = rl.Batch(examples, np.zeros(len(examples)))
    assert "train/skipped" not in rl.update(policy, optimizer, zero, anchored, 1.0, 0, demos=demos)
    assert nll(policy, demos) < before


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"algo": "hgpo", "rl": {"bc_coef": 1.0}}, "rl.bc_coef needs expert decisions"),
        ({"algo": "dpo", "rl": {"bc_coef": 1.0}, "bc": {"demos": ["d.jsonl"]}}, "for grpo, gigpo and hgpo"),
        ({"algo": "grpo", "rl": {"bc_coef": -1.0}}, "rl.bc_coef must be >= 0"),
    ],
)
def test_a_bc_term_the_run_cannot_have_is_refused_saying_why(overrides: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        from_mapping(overrides)


def test_dpo_loss_by_hand() -> None:
    loss, stats = dpo_loss(
        torch.tensor([-1.0, -3.0]), torch.tensor([-2.0, -1.0]), torch.tensor([-1.5, -2.0]),
        torch.tensor([-1.5, -2.0]), beta=0.5,
    )  # fmt: skip
    margins = [0.5 * ((-1.0 + 1.5) - (-2.0 + 1.5)), 0.5 * ((-3.0 + 2.0) - (-1.0 + 2.0))]  # 0.5, -1.0
    expected = sum(math.log1p(math.exp(-m)) for m in margins) / 2
    assert float(loss) == pytest.approx(expected, rel=1e-6)
    assert stats["reward_accuracy"] == 0.5


def test_dpo_gradient_in_minibatches_is_the_whole_trajectories_gradient(tiny_planner_dir: Path) -> None:
    """An ALFWorld pair (two trajectories of up to 50 long prompts) does not fit one backward pass: DPO
    backpropagates a few decisions at a time, and the adapter gets the gradient of the whole-trajectory loss,
    never running more than `minibatch` decisions at once."""
    policy = live_lora_policy(tiny_planner_dir)
    steps = chat_examples(
        policy,
        "You plan the next command of a household game.",
        [
            ("You are in the middle of a room.", "go_to(fridge 1)"),
            ("You arrive at fridge 1. The fridge 1 is closed.", "open(fridge 1)"),
            ("You open the fridge 1. In it, you see an apple 1.", "take(apple 1, fridge 1)"),
            ("You pick up the apple 1 from the fridge 1.", "cool(apple 1, fridge 1)"),
            ("You arrive at microwave 1.", "heat(apple 1, microwave 1)"),
        ],
    )
    pairs = [Pair(tuple(steps[:4]), tuple(steps[4:] + steps[:1])), Pair(tuple(steps[1:2]), tuple(steps[2:]))]
    ref_chosen, ref_rejected = torch.tensor([-9.0, -4.0]), torch.tensor([-7.0, -12.0])

    def whole(side: list[tuple[Example, ...]]) -> torch.Tensor:
        flat = [e for t in side for e in t]
        logp, _, _ = token_logprobs(policy.model, collate(flat, policy.pad_id))
        owner = torch.tensor([i for i, t in enumerate(side) for _ in t])
        return torch.zeros(len(side)).index_add(0, owner, logp.sum(-1))

    policy.model.zero_grad()
    chosen, rejected = whole([p.chosen for p in pairs]), whole([p.rejected for p in pairs])
    expected_loss, _ = dpo_loss(chosen, rejected, ref_chosen, ref_rejected, beta=0.5)
    expected_loss.backward()
    trained = {n: p for n, p in policy.model.named_parameters() if p.requires_grad}
    expected = {n: p.grad.clone() for n, p in trained.items() if p.grad is not None}
    assert expected.keys() == trained.keys() and any(bool(g.abs().sum() > 0) for g in expected.values())
    rows: list[int] = []
    embeddings = policy.model.get_input_embeddings()

    def count_rows(_module: torch.nn.Module, inputs: tuple[torch.Tensor, ...], _output: torch.Tensor) -> None:
        rows.append(inputs[0].shape[0])

    hook = embeddings.register_forward_hook(count_rows)
    try:
        for minibatch in (1, 3):
            rows.clear()
            policy.model.zero_grad()
            loss, _ = dpo_backward(policy, pairs, ref_chosen, ref_rejected, beta=0.5, minibatch=minibatch)
            assert float(loss) == pytest.approx(expected_loss.item(), rel=1e-5)
            assert max(rows) == minibatch
            for name, grad in expected.items():
                torch.testing.assert_close(trained[name].grad, grad, atol=1e-5, rtol=1e-3)
    finally:
        hook.remove()


def test_decision_rewards_weigh_outcome_process_and_penalty() -> None:
    weights = RewardWeights(outcome=1.0, process=0.1, penalty=0.3)

    def decision(result: dict | None, subgoal: str | None = "pick(red_block)") -> Decision:
        return Decision(0, "llm", "x", subgoal, 1.0, result=result)

    assert decision_reward(decision({"success": True}), False, False, weights) == pytest.approx(0.1)
    assert decision_reward(decision({"success": False}), False, False, weights) == pytest.approx(-0.3)
    assert decision_reward(decision({"success": True}), True, True, weights) == pytest.approx(1.1)
    assert decision_reward(decision(None, None), True, False, weights) == pytest.approx(-0.3)


def one_decision_episode(state: str, success: bool) -> Episode:
    """An episode of one model decision (pick) that the task judged `success`."""
    attempt = Attempt((), "prompt", "pick(red_block)", True, "", 1.0)
    trace = DecisionTrace("m", "tabletop", "scene", ("pick(red_block)",), True, (attempt,))
    decision = Decision(0, "llm", "x", "pick(red_block)", 1.0, trace, {"success": True})
    return Episode(state, "pick_place", success, (decision,))


def test_dynamic_sampling_keeps_the_groups_whose_returns_differ() -> None:
    weights = RewardWeights()
    mixed = [one_decision_episode("a:0", ok) for ok in (True, False, True)]
    solved = [one_decision_episode("b:0", True) for _ in range(3)]
    failed = [one_decision_episode("c:0", False) for _ in range(3)]
    assert rl.varied_groups([*solved, *mixed, *failed], weights) == mixed
    assert rl.varied_groups(solved, weights) == []


def test_dynamic_sampling_draws_states_until_groups_teach_something(
    tiny_planner_dir: Path, tmp_path: Path
) -> None:
    """The tiny planner on reach: an iteration keeps drawing initial states (at most 5 extra draws) and keeps
    only groups with differing returns; what it played is still counted in the rollout figures."""
    config = from_mapping(
        {
            "algo": "grpo",
            "model": str(tiny_planner_dir),
            "rollout": {"tasks": ["reach"], "train_seeds": 6, "max_subgoals": 2, "subgoal_timeout_s": 4.0},
            "rl": {"group_size": 4, "states_per_iteration": 1, "dynamic_sampling": 5},
        }
    )
    policy = load_policy(config.model, "", config.lora)
    arena = make_arena("tabletop", config.rollout)
    try:

        def rollouts(states: list[str], group: int, seed: int) -> list[Episode]:
            return rl.play(arena, policy, config, states, group, True, seed)

        played, kept = play_iteration(rollouts, config, arena.train_states(), 1)
    finally:
        arena.close()
    assert len(played) % 4 == 0 and 4 <= len(played) <= 24 and len(kept) in (0, 4)
    assert rl.varied_groups(played, config.reward)[:4] == kept
    if len(kept) == 0:  # six draws of groups that all solved, or all failed: every one was played
        assert len(played) == 24


@pytest.mark.parametrize("algo", ["grpo", "gigpo", "hgpo", "dpo"])
def test_training_raises_success_above_the_start(algo: str, tiny_planner_dir: Path, tmp_path: Path) -> None:
    config = from_mapping(
        {
            "algo": algo,
            "model": str(tiny_planner_dir),
            "lr": 0.003,  # 0.01 overshot GRPO once log-probabilities were the constrained ones (KL 5.9)
            "eval_every": 0,
            "eval_episodes": 0,
            "checkpoint_every": 100,
            "lora": {"r": 16, "alpha": 32},
            "rollout": {"tasks": ["reach"], "train_seeds": 1, "max_subgoals": 2, "subgoal_timeout_s": 4.0},
            "rl": {"group_size": 8, "states_per_iteration": 1, "iterations": 8, "minibatch": 8},
            "dpo": {"rounds": 8, "group_size": 8, "states_per_round": 1, "epochs": 4, "beta": 1.0},
        }
    )
    outcome = train(config, tmp_path / algo, progress=False)
    rows = [json.loads(line) for line in (tmp_path / algo / "metrics.jsonl").read_text().splitlines()]
    success = [row["rollout/success_rate"] for row in rows]
    start, end = sum(success[:2]) / 2, sum(success[-3:]) / 3
    assert end >= 0.85 and end > start + 0.15, success
    assert outcome.steps == 8 and (tmp_path / algo / "adapter" / "adapter_config.json").is_file()
    if algo != "dpo":
        assert rows[-1]["train/kl"] > 0 and rows[-1]["train/entropy"] > 0


def test_rl_on_alfworld_games(
    tiny_planner_dir: Path, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """One GRPO iteration on a real generated ALFWorld game, rewards from its text skills (a smoke run of
    the alfworld arena, not a learning test; evaluation per type shares `alfworld eval`'s episode code)."""
    pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")
    from tests.alfworld_games import generated_game_set

    games = str(generated_game_set(tmp_path_factory))
    config = from_mapping(
        {
            "algo": "grpo",
            "domain": "alfworld",
            "model": str(tiny_planner_dir),
            "eval_episodes": 0,
            "rollout": {"games": games, "eval_games": games, "max_subgoals": 2},
            "rl": {"group_size": 2, "states_per_iteration": 1, "iterations": 1},
        }
    )
    outcome = train(config, tmp_path / "run", progress=False)
    row = json.loads((tmp_path / "run" / "metrics.jsonl").read_text().splitlines()[0])
    assert outcome.steps == 1 and row["rollout/decisions"] >= 2 and "train/kl" in row
    assert (tmp_path / "run" / "adapter" / "adapter_config.json").is_file()


def test_task_rules_off_lets_rollouts_choose_the_futile_subgoals(
    tiny_planner_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """`task_rules: false` (RL and DPO rollouts and the run's evaluations, as the planner's
    `llm.task_rules`): the model is offered futile and off-task subgoals too, so training and its figures
    can be had without the rules; with them (the default) it is offered none while a useful one is left."""
    pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")
    from policies.planning.domain import StepRecord
    from policies.worlds import make_domain
    from sim.alfworld import parse_subgoal
    from tests.alfworld_games import generated_game_set

    games = str(generated_game_set(tmp_path_factory))
    domain = make_domain("alfworld")
    offered_futile = {}
    for rules in (True, False):
        config = from_mapping(
            {
                "algo": "grpo",
                "domain": "alfworld",
                "model": str(tiny_planner_dir),
                "task_rules": rules,
                "rollout": {"games": games, "eval_games": games, "max_subgoals": 5},
            }
        )
        policy = load_policy(config.model, config.adapter, config.lora)
        arena = make_arena("alfworld", config.rollout)
        futile = useful = 0
        for episode in rl.play(arena, policy, config, arena.train_states()[:2], 1, False, seed=0):
            history: list[StepRecord] = []
            for decision in episode.decisions:
                assert decision.trace is not None
                offered = [parse_subgoal(s) for s in decision.trace.valid_subgoals if s != "done()"]
                why = [domain.futile(s, decision.instruction, history) for s in offered]
                futile += sum(w is not None for w in why)
                useful += any(w is None for w in why)
                if decision.result is None:  # the loop stopped here (its repeat check): nothing played
                    break
                played = parse_subgoal(decision.subgoal or "")
                history.append(StepRecord(played, decision.result["success"], decision.result["message"]))
        offered_futile[rules] = futile
        assert useful
    assert offered_futile[True] == 0 and offered_futile[False] > 0, offered_futile


@pytest.mark.parametrize("algo", ["grpo", "gigpo", "hgpo", "dpo"])
def test_shipped_configs_give_each_domain_its_episode_budget(algo: str) -> None:
    """An ALFWorld game gets the 50 commands its evaluation gives it (the configs once pinned the
    tabletop's 10, which ends most games before the object is found); `max_subgoals` still overrides."""
    shipped = yaml.safe_load((CONFIG_DIR / f"{algo}.yaml").read_text())
    budgets = {d: from_mapping({**shipped, "domain": d}).rollout.budget(d) for d in ("tabletop", "alfworld")}
    assert budgets == {"tabletop": 10, "alfworld": 50}
    assert RolloutSettings(max_subgoals=7).budget("alfworld") == 7


def save_random_adapter(model_dir: Path, folder: Path) -> None:
    """A non-trivial adapter for the tiny model (LoRA's B starts at zero: the base model's answers)."""
    start = load_policy(str(model_dir), "", LoraSettings(r=4, alpha=8, dropout=0.3))
    with torch.no_grad():
        for name, param in start.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.5)
    start.save(folder)


@pytest.mark.parametrize(
    ("skills", "gain", "solved"), [("expert", None, True), ("onnx", GAIN, True), ("onnx", -GAIN, False)]
)
def test_tabletop_rollouts_run_subgoals_through_the_configured_skill_policy(
    skills: str, gain: float | None, solved: bool, tmp_path: Path
) -> None:
    """Rollouts execute subgoals with the controller's skill backends, as the sim launch does (`onnx`: the
    policy files, the expert for skills without one): a reach file that drives the arm away from its goal
    fails the episode that the scripted expert and a working file solve."""
    folder = "" if gain is None else str(write_policy_folder(tmp_path, gain))
    settings = RolloutSettings(tasks=("reach",), skills=skills, skill_dir=folder, subgoal_timeout_s=3.0)
    arena = make_arena("tabletop", settings)
    episode = arena.play("reach:0", make_planner("expert"))
    assert episode.success is solved and len(episode.decisions) >= 1


def test_a_skill_folder_without_policy_files_is_refused_naming_it(tmp_path: Path) -> None:
    with pytest.raises(PolicyFileError, match=f"no policy files .* in {tmp_path}"):
        make_arena("tabletop", RolloutSettings(skills="onnx", skill_dir=str(tmp_path)))


def model_outputs(episodes: list[Episode]) -> list[list[str]]:
    """Every raw model answer of each episode, in order."""
    return [[a.output for d in e.decisions if d.trace for a in d.trace.attempts] for e in episodes]


def test_rollouts_decode_as_the_evaluated_adapter_and_leave_the_policy_trainable(
    tiny_planner_dir: Path, tmp_path: Path
) -> None:
    """RL from a saved adapter: rollouts decode from the policy in memory (LoRA unmerged, the trainable
    copy beside the frozen reference, dropout configured) exactly what the planner decodes from that adapter
    folder (`--adapter`: merged, eval mode) with the same seed, greedy and sampled; the update's starting
    log-probabilities of the sampled answers are the served model's; the adapter comes out of the
    rollouts unchanged and still trainable."""
    save_random_adapter(tiny_planner_dir, tmp_path / "start")
    config = from_mapping(
        {
            "algo": "grpo",
            "model": str(tiny_planner_dir),
            "adapter": str(tmp_path / "start"),
            "rollout": {"tasks": ["pick_place"], "max_subgoals": 3, "subgoal_timeout_s": 4.0, "batch": 1},
        }
    )
    policy = load_policy(config.model, config.adapter, config.lora)
    before = policy.trainable_state()
    arena = make_arena("tabletop", config.rollout)
    states = ["pick_place:0", "pick_place:1"]
    answers: dict[bool, list[list[str]]] = {}
    for sample in (False, True):
        rollout = rl.play(arena, policy, config, states, 2, sample, seed=7)
        llm = LLMConfig(
            model=config.model,
            adapter=config.adapter,
            do_sample=sample,
            temperature=config.rollout.temperature,
            seed=7,
            history_k=config.history_k,
            dtype=config.dtype,  # the served weights in the format the policy trains in
        )
        served = make_planner("llm", llm)
        evaluated = [arena.play(state, served) for state in states for _ in range(2)]
        answers[sample] = model_outputs(rollout)
        assert answers[sample] == model_outputs(evaluated)
        assert sum(map(len, answers[sample])) >= 4
    assert answers[True] != answers[False]  # the sampled rollouts did sample

    batch = rl.make_batch(policy, rollout, config)
    [(old, _)] = rl.anchor_logprobs(policy, [batch.examples])
    tensors = collate(batch.examples, policy.pad_id)
    with torch.no_grad():
        served_logp, _, mask = token_logprobs(served.model.model, tensors)  # type: ignore[attr-defined]
    torch.testing.assert_close(old, served_logp, atol=1e-4, rtol=1e-4)
    assert bool(torch.isfinite(old[mask]).all())

    after = policy.trainable_state()
    assert after.keys() == before.keys() and all(torch.equal(after[k], before[k]) for k in before)
    logp, _, mask = token_logprobs(policy.model, tensors)
    (-(logp * mask).sum()).backward()
    grads = [p.grad for p in policy.parameters()]
    assert grads and all(g is not None and bool(g.abs().sum() > 0) for g in grads)


@pytest.mark.parametrize("domain", ["tabletop", "alfworld"])
def test_batched_rollouts_decode_as_one_at_a_time_and_repeat_under_a_seed(
    domain: str,
    tiny_planner_dir: Path,
    tmp_path: Path,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Six episodes from three initial states (tabletop tasks; ALFWorld games) played four at a time (a
    thread and a world each, every round of decisions one generation over the prompts' shared prefix,
    finished episodes replaced mid-batch) decode greedily exactly what one-at-a-time play decodes, in the
    same order; sampled batches repeat under a seed and differ from greedy."""
    save_random_adapter(tiny_planner_dir, tmp_path / "start")
    settings: dict[str, object] = {"max_subgoals": 3}
    if domain == "alfworld":
        pytest.importorskip("alfworld", reason="ALFWorld tests need the venv built by `make setup`")
        from tests.alfworld_games import generated_game_set

        games = str(generated_game_set(tmp_path_factory))
        settings.update(games=games, eval_games=games)
    else:
        settings.update(tasks=["pick_place", "stack"], subgoal_timeout_s=4.0)
    one, four = (
        from_mapping(
            {
                "algo": "grpo",
                "domain": domain,
                "model": str(tiny_planner_dir),
                "adapter": str(tmp_path / "start"),
                "rollout": {**settings, "batch": batch},
            }
        )
        for batch in (1, 4)
    )
    policy = load_policy(four.model, four.adapter, four.lora)
    arena = make_arena(domain, four.rollout)
    states = ["pick_place:0", "stack:1", "pick_place:2"] if domain == "tabletop" else arena.train_states()[:3]
    single = rl.play(arena, policy, one, states, 2, False, seed=7)
    sizes: list[int] = []
    batch_call = TransformersModel.complete_batch
    monkeypatch.setattr(
        TransformersModel,
        "complete_batch",
        lambda model, requests: sizes.append(len(requests)) or batch_call(model, requests),
    )
    batched = rl.play(arena, policy, four, states, 2, False, seed=7)
    assert max(sizes) == 4 and sum(sizes) == sum(len(e.decisions) for e in batched), sizes
    assert [e.state for e in batched] == [s for s in states for _ in range(2)]
    assert model_outputs(batched) == model_outputs(single)
    assert [e.success for e in batched] == [e.success for e in single]

    sampled = [model_outputs(rl.play(arena, policy, four, states, 2, True, seed=3)) for _ in range(2)]
    assert sampled[0] == sampled[1]
    assert sampled[0] != model_outputs(batched)
