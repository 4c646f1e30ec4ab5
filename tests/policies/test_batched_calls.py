"""Batched planner calls: episodes in threads get their answers from one generation once all of them wait,
and a generation that fails reaches every waiting episode as a ModelError instead of leaving any hanging."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from policies.planning import LLMConfig
from policies.planning.backends import ModelError
from policies.planning.backends.batching import BatchedCalls
from policies.planning.backends.transformers_lm import TransformersModel

CHOICES = ["pick(red_block)", "pick(blue_block)", "done()"]


def ask_together(model: TransformersModel, choices: list[list[str]]) -> list[str | Exception]:
    """Every seat asks once from its own thread; the answers (or errors) in seat order."""
    calls = BatchedCalls(model)
    seats = [calls.seat(number) for number in range(len(choices))]

    def ask(number: int) -> str | Exception:
        messages = [{"role": "user", "content": f"Scene {number}: red_block, blue_block. Next subgoal:"}]
        try:
            return seats[number].complete(messages, choices[number]).text  # type: ignore[list-item]
        except ModelError as err:
            return err
        finally:
            seats[number].leave()

    with ThreadPoolExecutor(len(choices)) as pool:
        futures = [pool.submit(ask, number) for number in range(len(choices))]
        return [future.result(timeout=120) for future in futures]


def test_waiting_episodes_share_one_generation_or_one_clear_error(tiny_model_dir: Path) -> None:
    model = TransformersModel(LLMConfig(model=str(tiny_model_dir)))
    sizes: list[int] = []
    batch_call = model.complete_batch
    model.complete_batch = lambda requests: sizes.append(len(requests)) or batch_call(requests)  # type: ignore[method-assign]

    answers = ask_together(model, [CHOICES, CHOICES[:2], ["done()"]])
    assert sizes == [3]
    assert answers[0] in CHOICES and answers[1] in CHOICES[:2] and answers[2] == "done()"

    failed = ask_together(model, [CHOICES, [""], CHOICES])  # an empty answer cannot be decoded
    assert sizes == [3, 3]
    assert all(isinstance(answer, ModelError) for answer in failed), failed
    assert "cannot be empty" in str(failed[0])

    with pytest.raises(ModelError, match="constrained"):
        BatchedCalls(model).seat(0).complete([{"role": "user", "content": "hi"}], None)
