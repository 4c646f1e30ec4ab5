"""Jump-forward decoding and prompt-prefix reuse answer what the plain decoder (transformers' generate, one
forward pass per token, a fresh cache) answers, on recorded prompts of both domains, one at a time and
batched; a prompt whose earlier part changed never reads keys and values computed before the change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

import pytest
import torch

from policies.planning import LLMConfig
from policies.planning.backends import ConstrainedRequest
from policies.planning.backends.prefix_cache import MIN_PREFIX_REUSE, PrefixCache
from policies.planning.backends.transformers_lm import TransformersModel, load_causal_lm
from policies.planning.domain import valid_now
from policies.planning.parsing import DONE, format_subgoal
from policies.planning.prompting import PromptBuilder
from policies.worlds import make_domain


def alfworld_requests() -> list[ConstrainedRequest]:
    """The planner's prompts and valid answers along a recorded walk through an ALFWorld room."""
    from policies.alfworld.domain import AlfworldView
    from tests.alfworld_history import AT_SHELF, ROOM, WALKED, history_of

    domain = make_domain("alfworld")
    prompts = PromptBuilder.for_domain(domain)
    requests: list[ConstrainedRequest] = []
    for steps in range(len(WALKED) + 1):
        view = AlfworldView(ROOM, WALKED[steps - 1][1] if steps else ROOM, AT_SHELF)
        history = history_of(*WALKED[:steps])
        choices = [format_subgoal(s) for s in valid_now(domain, view, "put a candle in desk.", history)]
        messages = prompts.messages(domain, "put a candle in desk.", view, history)
        requests.append((messages, [*choices, DONE]))
    return requests


@pytest.fixture(scope="module")
def recorded() -> dict[str, list[ConstrainedRequest]]:
    """Tabletop: the messages and admissible subgoals of the expert's decisions in three tasks (the BC
    demonstrations' records); ALFWorld: a recorded walk."""
    from policies.planner_training.demos import tabletop_demonstrations

    tabletop = [
        (record["messages"], [*record["admissible_subgoals"], DONE])
        for _, records in tabletop_demonstrations(["pick_place", "stack", "sort"], [0])
        for record in records
    ]
    return {"tabletop": tabletop, "alfworld": alfworld_requests()}


def answers(model: TransformersModel, requests: Sequence[ConstrainedRequest]) -> list[str]:
    return [model.complete(messages, choices).text for messages, choices in requests]


@pytest.mark.parametrize("domain", ["tabletop", "alfworld"])
def test_jump_forward_with_cached_prefixes_answers_as_the_plain_decoder(
    tiny_model_dir: Path, recorded: dict[str, list[ConstrainedRequest]], domain: str
) -> None:
    requests = recorded[domain]
    assert len(requests) >= 5
    loaded = load_causal_lm(str(tiny_model_dir))
    config = LLMConfig(model=str(tiny_model_dir))
    plain = TransformersModel(replace(config, decoding="plain", prefix_cache=0), loaded)
    expected = answers(plain, requests)
    assert len(set(expected)) > 1  # prompts that the model answers differently
    fast = TransformersModel(config, loaded)
    assert answers(fast, requests) == expected
    assert [c.text for c in fast.complete_batch(requests)] == expected
    assert answers(fast, requests[-3:]) == expected[-3:]  # now cached whole, but for the last token
    assert fast.last_stats.reused_tokens == fast.last_stats.prompt_tokens - 1


@pytest.mark.parametrize("domain", ["tabletop", "alfworld"])
def test_shipped_adapters_decode_the_same_answers_with_jump_forward(
    smollm2_dir: Path, recorded: dict[str, list[ConstrainedRequest]], domain: str
) -> None:
    """The real planners: the shipped adapter of each domain, greedy, on its domain's recorded prompts."""
    config = LLMConfig(domain=domain, adapter=domain)
    fast = TransformersModel(config)
    plain = TransformersModel(replace(config, decoding="plain", prefix_cache=0), (fast.tokenizer, fast.model))
    requests = recorded[domain][:6]
    assert answers(fast, requests) == answers(plain, requests)


def test_a_bfloat16_model_answers_validly_and_jump_forward_stays_exact(
    tiny_model_dir: Path,
    recorded: dict[str, list[ConstrainedRequest]],
) -> None:
    config = LLMConfig(model=str(tiny_model_dir), dtype="bfloat16")
    fast = TransformersModel(config)
    assert fast.model.dtype is torch.bfloat16
    plain = TransformersModel(replace(config, decoding="plain", prefix_cache=0), (fast.tokenizer, fast.model))
    requests = recorded["tabletop"]
    said = answers(fast, requests)
    assert said == answers(plain, requests)
    assert all(answer in choices for answer, (_, choices) in zip(said, requests, strict=True))


def test_a_forced_continuation_costs_no_forward_pass(tiny_model_dir: Path) -> None:
    loaded = load_causal_lm(str(tiny_model_dir))
    config = LLMConfig(model=str(tiny_model_dir), prefix_cache=0)
    messages = [{"role": "user", "content": "Scene: red_block on left_plate. Next subgoal:"}]
    fast, plain = (
        TransformersModel(config, loaded),
        TransformersModel(replace(config, decoding="plain"), loaded),
    )
    assert fast.complete(messages, ["place(red_block, left_plate)"]).text == "place(red_block, left_plate)"
    assert fast.last_stats.prefill_s == 0 and fast.last_stats.forwards == 0
    choices = ["place(red_block, left_plate)", "place(red_block, right_plate)", "done()"]
    assert fast.complete(messages, choices).text == plain.complete(messages, choices).text
    # one pass over the prompt, one at the plate; plain runs one per token of the answer
    assert fast.last_stats.forwards <= 1 < plain.last_stats.forwards


def test_sampled_jump_forward_repeats_under_a_seed(
    tiny_model_dir: Path, recorded: dict[str, list[ConstrainedRequest]]
) -> None:
    requests = recorded["tabletop"]
    loaded = load_causal_lm(str(tiny_model_dir))
    runs = [
        answers(
            TransformersModel(LLMConfig(model=str(tiny_model_dir), do_sample=True, seed=5), loaded), requests
        )
        for _ in range(2)
    ]
    other = answers(
        TransformersModel(LLMConfig(model=str(tiny_model_dir), do_sample=True, seed=6), loaded), requests
    )
    assert runs[0] == runs[1] != other
    assert all(answer in choices for answer, (_, choices) in zip(runs[0], requests, strict=True))


def test_a_changed_earlier_part_of_the_prompt_is_recomputed(tiny_model_dir: Path) -> None:
    """Two prompts alike but for one token early on: the second reuses exactly the tokens before it, and its
    next-token logits are those of a fresh forward pass (a cache reused past the change would differ)."""
    tokenizer, model = load_causal_lm(str(tiny_model_dir))
    model.eval()
    text = (
        "You are the task planner of a robot arm. Skills: pick, place, push, reach.\n"
        "Scene: the {} block is on the left plate.\nInstruction: stack the blocks.\nNext subgoal:"
    )
    first = tokenizer.encode(text.format("red"), add_special_tokens=False)
    second = tokenizer.encode(text.format("blue"), add_special_tokens=False)
    change = next(i for i, (a, b) in enumerate(zip(first, second, strict=False)) if a != b)
    assert MIN_PREFIX_REUSE <= change < len(second) - 4

    def next_logits(ids: list[int], store: PrefixCache) -> torch.Tensor:
        reused, cache = store.lookup(ids, len(ids) - 1)
        with torch.inference_mode():
            output = model(input_ids=torch.tensor([ids[reused:]]), past_key_values=cache, use_cache=True)
        store.store(ids, cache)
        return output.logits[0, -1]

    store = PrefixCache(entries=2)
    next_logits(first, store)
    assert store.lookup(second, len(second) - 1)[0] == change
    torch.testing.assert_close(next_logits(second, store), next_logits(second, PrefixCache(entries=0)))
    # the first prompt's keys survive the second's use of their shared part
    torch.testing.assert_close(next_logits(first, store), next_logits(first, PrefixCache(entries=0)))
    assert store.lookup(first, len(first) - 1)[0] == len(first) - 1
