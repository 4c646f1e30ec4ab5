"""Behaviour cloning on the tiny GPT-2: validation loss falls well below its measured start, the best
adapter is what is saved, and a saved adapter loads into the planner's backend with identical logits."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import torch

from policies.planner_training import bc
from policies.planner_training.config import BCSettings, LoraSettings, from_mapping
from policies.planner_training.data import Demo, Example, collate, encode, encode_demos, load_demos, split
from policies.planner_training.model import Policy, load_policy
from policies.planner_training.runner import train
from policies.planning import LLMConfig
from policies.planning.backends import ModelError
from policies.planning.backends.transformers_lm import MODEL_ALIASES, TransformersModel


def _tiny_bc(tiny_planner_dir: Path, tabletop_demos: Path) -> tuple[Policy, list[Demo], list[Example]]:
    """A fresh adapter on the tiny model, its training demonstrations and encoded validation examples."""
    torch.manual_seed(0)
    policy = load_policy(str(tiny_planner_dir), "", LoraSettings(r=16, alpha=32))
    train_demos, val_demos = split(load_demos([tabletop_demos]), 0.2, seed=0)
    return policy, train_demos, encode_demos(policy.tokenizer, val_demos)


def _fit(policy: Policy, train: list[Example], val: list[Example], **callbacks: Any) -> bc.BCState:
    settings = BCSettings(epochs=8, batch_size=8, validate_every=4, patience=3)
    optimizer = torch.optim.AdamW(policy.parameters(), lr=1e-2)
    hooks = {"log": lambda step, metrics: None, "on_best": lambda: None, "on_checkpoint": lambda: None}
    return bc.train_bc(
        policy, train, val, settings, optimizer, bc.BCState(), seed=0, **{**hooks, **callbacks}
    )


def test_bc_lowers_validation_loss_from_its_start(tiny_planner_dir: Path, tabletop_demos: Path) -> None:
    policy, train_demos, val = _tiny_bc(tiny_planner_dir, tabletop_demos)
    train_set = encode_demos(policy.tokenizer, train_demos)
    before = bc.validate(policy, val, 8)
    best: list[float] = []
    state = _fit(policy, train_set, val, on_best=lambda: best.append(bc.validate(policy, val, 8).loss))
    assert state.best_loss < 0.35 * before.loss, (before, state)
    assert best and best[-1] == pytest.approx(state.best_loss)


def test_bc_keeps_the_starting_adapter_when_no_step_beats_it(
    tiny_planner_dir: Path, tabletop_demos: Path
) -> None:
    """Continuing a trained adapter: a run that only makes validation worse must save what it started
    from, not the least bad of its later steps (validation at step 0 is the baseline)."""
    policy, train_demos, val = _tiny_bc(tiny_planner_dir, tabletop_demos)
    _fit(policy, encode_demos(policy.tokenizer, train_demos), val)
    start, before = policy.trainable_state(), bc.validate(policy, val, 8)
    wrong = [encode(policy.tokenizer, d.messages, "done()") for d in train_demos]  # unlearns the task
    saved: list[dict[str, torch.Tensor]] = []
    logged: list[tuple[int, float]] = []
    state = _fit(
        policy,
        wrong,
        val,
        log=lambda step, metrics: logged.extend(
            [(step, metrics["val/loss"])] if "val/loss" in metrics else []
        ),
        on_best=lambda: saved.append(policy.trainable_state()),
    )
    assert logged[0] == (0, pytest.approx(before.loss)) and len(logged) == 4  # step 0, then 3 worse ones
    assert all(loss > before.loss for _, loss in logged[1:]), logged
    assert state.best_loss == pytest.approx(before.loss) and len(saved) == 1
    assert all(torch.equal(saved[0][name], value) for name, value in start.items())


def test_saved_adapter_gives_the_planner_identical_logits(tiny_planner_dir: Path, tmp_path: Path) -> None:
    policy = load_policy(str(tiny_planner_dir), "", LoraSettings(r=4, alpha=8))
    with torch.no_grad():  # a non-trivial adapter: LoRA's B starts at zero
        for name, param in policy.model.named_parameters():
            if "lora_B" in name:
                param.normal_(0.0, 0.5)
    policy.save(tmp_path / "adapter")
    policy.model.eval()
    example = encode(
        policy.tokenizer, [{"role": "user", "content": "stack the red block"}], "pick(red_block)"
    )  # type: ignore[list-item]
    batch = collate([example], policy.pad_id)
    with torch.no_grad():
        trained = policy.model(input_ids=batch["input_ids"]).logits
        with policy.reference():
            base = policy.model(input_ids=batch["input_ids"]).logits
        served = TransformersModel(
            LLMConfig(model=str(tiny_planner_dir), adapter=str(tmp_path / "adapter"), dtype="float32")
        )  # the number format training ran in
        loaded = served.model(input_ids=batch["input_ids"]).logits
    assert (trained - base).abs().max() > 1e-2  # the adapter changes the model...
    # ...and loads back into the planner's backend (merged into the weights: float rounding only)
    torch.testing.assert_close(loaded, trained, atol=1e-4, rtol=1e-4)
    assert "+lora:" in served.description


def test_saved_adapter_names_the_base_model_as_given(
    tiny_planner_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """By its alias, not the folder the alias resolves to on this machine: a shipped adapter must not
    carry that folder."""
    monkeypatch.setitem(MODEL_ALIASES, "tiny-alias", tiny_planner_dir)
    policy = load_policy("tiny-alias", "", LoraSettings(r=4, alpha=8))
    policy.save(tmp_path / "adapter")
    config = json.loads((tmp_path / "adapter" / "adapter_config.json").read_text())
    assert config["base_model_name_or_path"] == "tiny-alias"


def test_missing_starting_adapter_is_a_clear_error(tiny_planner_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ModelError, match="has no adapter_config.json"):
        load_policy(str(tiny_planner_dir), str(tmp_path), LoraSettings())


def test_bc_run_folder_and_resume(tiny_planner_dir: Path, tabletop_demos: Path, tmp_path: Path) -> None:
    data = {
        "algo": "bc",
        "model": str(tiny_planner_dir),
        "lr": 0.01,
        "eval_episodes": 0,
        "bc": {"demos": [str(tabletop_demos)], "epochs": 1, "validate_every": 2},
    }
    run = tmp_path / "run"
    first = train(from_mapping(data), run, progress=False)
    for name in ("config.yaml", "metrics.jsonl", "metrics.csv", "curves.png", "summary.json"):
        assert (run / name).is_file(), name
    assert (run / "adapter" / "adapter_config.json").is_file()
    assert (run / "checkpoints" / "last" / "state.pt").is_file()
    assert any((run / "tensorboard").iterdir())
    data["bc"]["epochs"] = 2  # type: ignore[index]
    second = train(from_mapping(data), run, progress=False)
    assert second.steps == 2 * first.steps  # resumed at the checkpoint, not from scratch
    steps = [json.loads(line)["step"] for line in (run / "metrics.jsonl").read_text().splitlines()]
    assert steps == sorted(steps)


def test_last_layers_adapts_only_the_top_blocks(tiny_planner_dir: Path) -> None:
    policy = load_policy(str(tiny_planner_dir), "", LoraSettings(last_layers=1))
    names = [n for n, p in policy.model.named_parameters() if p.requires_grad]
    assert names and all(".h.1." in n for n in names)
    assert {n.split(".h.1.")[1].split(".lora")[0] for n in names} == {
        "attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj",
    }  # fmt: skip


def test_a_stop_request_ends_bc_after_the_step_with_a_checkpoint(
    tiny_planner_dir: Path, tabletop_demos: Path
) -> None:
    """Ctrl-C in `hgpo train-planner` asks BC to stop: it ends after the step it is in, saved to resume."""
    policy, train_demos, val = _tiny_bc(tiny_planner_dir, tabletop_demos)
    steps: list[int] = []
    saved: list[int] = []
    requests = iter([False, False, True])
    state = _fit(
        policy,
        encode_demos(policy.tokenizer, train_demos),
        val,
        log=lambda step, metrics: steps.append(step),
        on_checkpoint=lambda: saved.append(steps[-1]),
        stop=lambda: next(requests),
    )
    assert state.step == 3 and saved[-1] == 3  # the stop after step 3 saved it
