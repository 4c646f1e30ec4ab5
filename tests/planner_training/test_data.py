"""Training examples: demonstrations rendered by the planner's own prompt code, prompt tokens masked,
left padding that changes nothing, and clear errors for bad files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from policies.planner_training.config import LoraSettings
from policies.planner_training.data import (
    IGNORE,
    DataError,
    Example,
    collate,
    encode,
    encode_text,
    episodes_of,
    load_demos,
    read_jsonl,
    repeated,
    split,
    token_passes,
)
from policies.planner_training.model import load_policy, token_logprobs
from policies.planning import LLMConfig, LLMPlanner, PlanningContext
from policies.planning.backends.transformers_lm import TransformersModel, chat_prompt
from policies.worlds import make_domain
from sim.tabletop import TabletopWorld, make_task
from tests.planner_training.live_lora import chat_examples, live_lora_policy


def test_demonstrations_are_the_prompts_the_planner_gives_its_model(
    tabletop_demos: Path, tiny_planner_dir: Path
) -> None:
    record = read_jsonl(tabletop_demos)[0]
    assert (record["task"], record["seed"]) == ("reach", 0)
    world = TabletopWorld()
    task = make_task("reach", 0)
    world.reset(task)
    config = LLMConfig(model=str(tiny_planner_dir))
    planner = LLMPlanner(make_domain("tabletop"), TransformersModel(config), config)
    planner.next_subgoal(PlanningContext(task.instruction, world.state(), (), task))
    assert planner.last_trace is not None
    tokenizer = planner.model.tokenizer  # type: ignore[attr-defined]
    assert chat_prompt(tokenizer, record["messages"]) == planner.last_trace.attempts[0].prompt_text
    assert record["expert_subgoal"] in record["admissible_subgoals"]


def test_only_answer_tokens_are_labelled(tiny_planner_dir: Path) -> None:
    policy = load_policy(str(tiny_planner_dir), "", LoraSettings())
    messages = [{"role": "user", "content": "Instruction: move above the red block"}]
    example = encode(policy.tokenizer, messages, "reach(red_block)")  # type: ignore[arg-type]
    answer = policy.tokenizer.encode("reach(red_block)", add_special_tokens=False)
    assert example.answer_ids == (*answer, policy.tokenizer.eos_token_id)
    short = encode(policy.tokenizer, messages, "done()")  # type: ignore[arg-type]
    batch = collate([example, short], policy.pad_id)
    labels = batch["labels"]
    assert labels.shape[1] == len(example.answer_ids)
    assert labels[0].tolist() == list(example.answer_ids)
    assert labels[1].tolist()[: len(example.answer_ids) - len(short.answer_ids)] == [IGNORE] * (
        len(example.answer_ids) - len(short.answer_ids)
    )
    # every labelled token is an answer token: the prompt never enters the loss
    ids = batch["input_ids"]
    assert ids[0, -len(example.answer_ids) :].tolist() == list(example.answer_ids)
    assert (labels != IGNORE).sum() == len(example.answer_ids) + len(short.answer_ids)


def test_left_padding_leaves_log_probabilities_unchanged(tiny_planner_dir: Path) -> None:
    policy = load_policy(str(tiny_planner_dir), "", LoraSettings())
    policy.model.eval()
    long_prompt = [{"role": "user", "content": "Scene: red_block on the table, left_plate. " * 6}]
    examples = [
        encode(policy.tokenizer, long_prompt, "pick(red_block)"),  # type: ignore[arg-type]
        encode(policy.tokenizer, [{"role": "user", "content": "hi"}], "done()"),  # type: ignore[list-item]
    ]
    with torch.no_grad():
        together, _, mask = token_logprobs(policy.model, collate(examples, policy.pad_id))
        for row, example in enumerate(examples):
            alone, _, _ = token_logprobs(policy.model, collate([example], policy.pad_id))
            width = len(example.answer_ids)
            torch.testing.assert_close(together[row, -width:], alone[0, -width:], atol=1e-5, rtol=1e-4)
    assert mask.sum() == sum(len(e.answer_ids) for e in examples)


def test_a_shared_prompt_prefix_runs_once_with_the_same_log_probabilities_and_gradients(
    tiny_planner_dir: Path,
) -> None:
    """Planner prompts share their system prompt: it runs once per batch and its keys and values serve
    every row; answers of different lengths after tails of different lengths score as in the plain
    left-padded batch, and the adapter gets the same gradients."""
    policy = live_lora_policy(tiny_planner_dir)
    examples = chat_examples(
        policy,
        "You plan subgoals for a robot arm at a table. " * 4,
        [
            ("Scene: red_block on the table. Instruction: pick it", "pick(red_block)"),
            ("Scene: the gripper holds red_block, left_plate", "place(red_block, left_plate)"),
            ("done?", "done()"),
        ],
    )
    shared, plain = collate(examples, policy.pad_id), collate(examples, policy.pad_id, share_prefix=False)
    assert shared["prefix_ids"].shape[1] >= 16 and shared["input_ids"].shape[1] < plain["input_ids"].shape[1]
    results = []
    for batch in (shared, plain):
        policy.model.zero_grad()
        logp, _, mask = token_logprobs(policy.model, batch)
        (-logp.sum()).backward()
        grads = {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.requires_grad}
        results.append((logp.detach(), mask, grads))
    (logp_a, mask_a, grads_a), (logp_b, mask_b, grads_b) = results
    assert torch.equal(mask_a, mask_b)
    torch.testing.assert_close(logp_a, logp_b, atol=1e-5, rtol=1e-4)
    assert grads_a.keys() == grads_b.keys() and any(bool(g.abs().sum() > 0) for g in grads_a.values())
    for name in grads_a:
        torch.testing.assert_close(grads_a[name], grads_b[name], atol=1e-5, rtol=1e-3)


def test_token_passes_bound_each_padded_pass_and_keep_the_order() -> None:
    def example(prompt: int, answer: int) -> Example:
        return Example(tuple(range(prompt)), tuple(range(answer)))

    examples = [example(90, 10), example(40, 10), example(290, 10), example(20, 5), example(10, 5)]
    assert token_passes(examples, 0) == [[0, 1, 2, 3, 4]]
    assert token_passes(examples, 200) == [[0, 1], [2], [3, 4]]  # 2 x 100; 300 alone; 2 x 25
    assert token_passes(examples, 1) == [[0], [1], [2], [3], [4]]
    for budget in (50, 120, 250, 400, 700):
        passes = token_passes(examples, budget)
        assert [i for piece in passes for i in piece] == list(range(len(examples)))
        for piece in passes:
            longest = max(len(examples[i].prompt_ids) + len(examples[i].answer_ids) for i in piece)
            assert len(piece) == 1 or len(piece) * longest <= budget


def test_constrained_answers_score_under_the_decoders_distribution(tiny_planner_dir: Path) -> None:
    """With the choices decoding was constrained to, an answer's log-probability is the constrained
    decoder's: over all choices the sequence probabilities sum to one, each at least its full-vocabulary
    probability, and the entropy is that of the allowed tokens."""
    policy = load_policy(str(tiny_planner_dir), "", LoraSettings())
    policy.model.eval()
    messages = [{"role": "user", "content": "Scene: red_block, blue_block, left_plate. Next subgoal:"}]
    choices = ["pick(red_block)", "pick(blue_block)", "push(red_block, left_plate)", "done()"]
    prompt = encode(policy.tokenizer, messages, choices[0]).prompt_ids  # type: ignore[arg-type]
    text = policy.tokenizer.decode(prompt)
    constrained = [encode_text(policy.tokenizer, text, c, choices) for c in choices]
    free = [encode_text(policy.tokenizer, text, c) for c in choices]
    assert constrained[0].allowed is not None and len(constrained[0].allowed) == len(
        constrained[0].answer_ids
    )
    with torch.no_grad():
        logp_c, entropy_c, mask = token_logprobs(policy.model, collate(constrained, policy.pad_id))
        logp_f, entropy_f, _ = token_logprobs(policy.model, collate(free, policy.pad_id))
    sequences_c, sequences_f = logp_c.sum(-1).exp(), logp_f.sum(-1).exp()
    assert float(sequences_c.sum()) == pytest.approx(1.0, abs=1e-5)
    assert bool((sequences_c >= sequences_f).all()) and float(sequences_f.sum()) < 0.5
    span = mask.shape[1]
    forced = [
        (row, span - len(e.answer_ids) + i)
        for row, e in enumerate(constrained)
        for i, ids in enumerate(e.allowed or ())
        if len(ids) == 1
    ]
    assert forced and all(float(entropy_c[row, col]) == 0.0 for row, col in forced)
    assert bool((entropy_c[mask] <= entropy_f[mask] + 1e-5).all())


def test_decision_logs_give_successful_decisions_only(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "scene"}]
    attempt = {"messages": messages, "prompt_text": "p", "output": "pick(red_block)", "valid": True}

    def decision(subgoal: str | None, result: dict | None, stop: str = "") -> dict:
        return {"subgoal": subgoal, "trace": {"attempts": [attempt]}, "result": result, "stop": stop}

    log = tmp_path / "decisions.jsonl"
    lines = [
        decision("pick(red_block)", {"success": True, "message": ""}),
        decision("pick(red_block)", {"success": False, "message": "dropped"}),
        decision(None, None, "planner failed"),
        decision("done()", None, "planner said done after 2 subgoals"),
    ]
    log.write_text("".join(json.dumps(line) + "\n" for line in lines))
    demos = load_demos([log])
    assert [d.answer for d in demos] == ["pick(red_block)", "done()"]
    assert demos[0].messages == messages


def test_bad_files_are_named_with_the_line(tmp_path: Path) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataError, match="empty.jsonl holds no records"):
        read_jsonl(empty)
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"messages": [], "expert_subgoal": "done()"}\n{"messages": [\n')
    with pytest.raises(DataError, match=r"broken.jsonl:2: not a JSON object"):
        read_jsonl(broken)
    other = tmp_path / "other.jsonl"
    other.write_text('{"observation": "x"}\n')
    with pytest.raises(DataError, match=r"other.jsonl:1: neither a demonstration"):
        load_demos([other])
    hollow = tmp_path / "hollow.jsonl"
    hollow.write_text('{"messages": [], "expert_subgoal": "done()"}\n')
    with pytest.raises(DataError, match=r"hollow.jsonl:1: `messages` must be a non-empty list"):
        load_demos([hollow])
    with pytest.raises(DataError, match="no such file"):
        read_jsonl(tmp_path / "missing.jsonl")


def test_split_by_episode_holds_out_whole_games(tmp_path: Path) -> None:
    """Decisions of one game are alike: with some of a game's decisions in training, validation would
    measure recall of that game, not play on an unseen one."""
    records = [
        {
            "game": f"game-{g}",
            "messages": [{"role": "user", "content": f"{g}.{i}"}],
            "expert_subgoal": "look()",
        }
        for g in range(10)
        for i in range(g % 3 + 2)
    ]
    path = tmp_path / "demos.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    demos = load_demos([path])
    train, val = split(demos, 0.2, seed=3, episodes=episodes_of(demos))
    assert sorted(map(id, train + val)) == sorted(map(id, demos))
    held = {d.episode for d in val}
    assert held and not held & {d.episode for d in train}
    assert 0.2 * len(demos) <= len(val) < 0.2 * len(demos) + 4  # whole games until the share is reached
    again = split(demos, 0.2, seed=3, episodes=episodes_of(demos))
    assert again == (train, val)
    assert {d.episode for d in split(demos, 0.2, seed=4, episodes=episodes_of(demos))[1]} != held


def test_episodes_are_games_or_task_seeds_and_must_be_recorded(tmp_path: Path) -> None:
    chat = [{"role": "user", "content": "scene"}]
    attempt = {"messages": chat, "prompt_text": "p", "output": "done()", "valid": True}
    lines = [
        {"game": "trial_1", "task": "put a candle in the bin", "messages": chat, "expert_subgoal": "look()"},
        {"task": "sort", "seed": 4, "messages": chat, "expert_subgoal": "done()"},
        {"subgoal": "pick(red_block)", "trace": {"attempts": [attempt]}, "result": {"success": True},
         "meta": {"task": "stack", "seed": 7}},
    ]  # fmt: skip
    path = tmp_path / "mixed.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert episodes_of(load_demos([path])) == ["trial_1", "sort:4", "stack:7"]
    del lines[2]["meta"]  # the planner node's own log names no episode
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    with pytest.raises(DataError, match="1 of 3 have neither.*use bc.split: decision"):
        episodes_of(load_demos([path]))


def test_repeat_shows_rare_skills_more_often(tmp_path: Path) -> None:
    chat = [{"role": "user", "content": "kitchen"}]
    answers = ["go_to(fridge 1)", "heat(apple 1, microwave 1)", "take(apple 1, fridge 1)", "open(fridge 1)"]
    path = tmp_path / "demos.jsonl"
    path.write_text("".join(json.dumps({"messages": chat, "expert_subgoal": a}) + "\n" for a in answers))
    demos = load_demos([path])
    assert [d.skill for d in demos] == ["go_to", "heat", "take", "open"]
    shown = repeated(demos, answers, {"heat": 3, "take": 2, "clean": 5})
    assert shown == [answers[0], *[answers[1]] * 3, *[answers[2]] * 2, answers[3]]
