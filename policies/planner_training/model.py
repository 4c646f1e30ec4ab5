"""The trained policy: a base causal LM with a peft LoRA adapter on top, its per-token log-probabilities,
and the frozen reference (the starting adapter, or the base model when training starts from none)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from peft import LoraConfig, PeftModel, get_peft_model
from transformers import DynamicCache

from policies.planner_training.config import LoraSettings
from policies.planner_training.data import IGNORE, Example, collate
from policies.planning.backends import ModelError
from policies.planning.backends.precision import resolve_dtype
from policies.planning.backends.transformers_lm import load_causal_lm, resolve_adapter

REFERENCE = "reference"


@dataclass
class Policy:
    tokenizer: Any
    model: PeftModel  # the trainable adapter is "default"; a "reference" adapter when one was given
    base_model: str  # as the user named it (an alias, a folder): what a saved adapter records

    @property
    def pad_id(self) -> int:
        return int(
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.tokenizer.eos_token_id
        )

    @property
    def device(self) -> torch.device:
        return self.model.device

    def collate(self, examples: Sequence[Example], share_prefix: bool = True) -> dict[str, torch.Tensor]:
        """`data.collate` on the model's device."""
        return {k: v.to(self.device) for k, v in collate(examples, self.pad_id, share_prefix).items()}

    def parameters(self) -> list[torch.nn.Parameter]:
        return [p for p in self.model.parameters() if p.requires_grad]

    def trainable_state(self) -> dict[str, torch.Tensor]:
        """A copy of the trainable (adapter) weights by name."""
        return {n: p.detach().clone() for n, p in self.model.named_parameters() if p.requires_grad}

    def load_trainable_state(self, weights: dict[str, torch.Tensor]) -> None:
        named = dict(self.model.named_parameters())
        with torch.no_grad():
            for name, value in weights.items():
                named[name].copy_(value)

    @contextmanager
    def reference(self) -> Iterator[None]:
        """Forward passes inside run the frozen reference policy."""
        if REFERENCE in self.model.peft_config:
            self.model.set_adapter(REFERENCE)
            try:
                yield
            finally:
                self.model.set_adapter("default")
        else:
            with self.model.disable_adapter():
                yield

    def save(self, folder: Path) -> None:
        """The trainable adapter as a peft folder that `llm.adapter` / `--adapter` load. It names the base
        model as it was given, not the folder an alias resolved to here, so it can ship as it is."""
        self.model.peft_config["default"].base_model_name_or_path = self.base_model
        self.model.save_pretrained(str(folder), selected_adapters=["default"], save_embedding_layers=False)
        self.tokenizer.save_pretrained(str(folder))


def _targets(model: torch.nn.Module, lora: LoraSettings) -> str | list[str]:
    """peft's target_modules: the configured names, or with `last_layers` the full names of the matching
    linear modules (nn.Linear, GPT-2's Conv1D) inside the last blocks."""
    targets = list(lora.target_modules)
    if not lora.last_layers:
        return targets[0] if targets == ["all-linear"] else targets
    depth = int(model.config.num_hidden_layers)  # type: ignore[union-attr, arg-type]
    kept = {str(i) for i in range(max(0, depth - lora.last_layers), depth)}
    names = []
    for name, module in model.named_modules():
        parts = name.split(".")
        in_block = any(part in kept and parts[i - 1] in ("layers", "h") for i, part in enumerate(parts) if i)
        linear = isinstance(module, torch.nn.Linear) or type(module).__name__ == "Conv1D"
        if in_block and linear and (targets == ["all-linear"] or parts[-1] in targets):
            names.append(name)
    if not names:
        raise ValueError(f"lora.last_layers={lora.last_layers}: no {targets} modules in the last blocks")
    return names


def load_policy(
    model: str, adapter: str, lora: LoraSettings, device: str = "cpu", dtype: str = "float32"
) -> Policy:
    """The base model on `device` in `dtype` with a trainable adapter: a copy of `adapter` (also kept frozen
    as the reference) or, without one, a fresh LoRA (the reference is then the base model). peft keeps the
    adapter's weights in float32 whatever the base's format (its `autocast_adapter_dtype`)."""
    tokenizer, base = load_causal_lm(model)
    base = base.to(device, resolve_dtype(dtype, device))
    if tokenizer.pad_token_id is None:
        tokenizer.pad_token = tokenizer.eos_token
    if adapter:
        folder = resolve_adapter(adapter)
        if not (folder / "adapter_config.json").is_file():
            raise ModelError(
                f"LoRA adapter folder {adapter} has no adapter_config.json: give a peft adapter "
                "(e.g. the `adapter/` of a `hgpo train-planner --algo bc` run, or a shipped one by name)"
            )
        peft_model = PeftModel.from_pretrained(base, str(folder), is_trainable=True)
        peft_model.load_adapter(str(folder), adapter_name=REFERENCE, is_trainable=False)
        peft_model.set_adapter("default")
    else:
        config = LoraConfig(
            r=lora.r,
            lora_alpha=lora.alpha,
            lora_dropout=lora.dropout,
            target_modules=_targets(base, lora),
            task_type="CAUSAL_LM",
        )
        peft_model = get_peft_model(base, config)
    return Policy(tokenizer, peft_model, model)


def answer_logits(model: torch.nn.Module, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """Logits predicting each label position of `batch` (see `data.collate`): (batch, span, vocab); the
    model computes the output head for those positions only. A shared `prefix_ids` runs once, its keys and
    values repeated for every row (gradients flow back through them)."""
    span = batch["labels"].shape[1]
    cache = None
    if "prefix_ids" in batch:
        cache = DynamicCache()
        model(input_ids=batch["prefix_ids"], past_key_values=cache, use_cache=True, logits_to_keep=1)
        cache.batch_repeat_interleave(batch["input_ids"].shape[0])
    return model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        past_key_values=cache,
        use_cache=cache is not None,
        logits_to_keep=span + 1,
    ).logits[:, :-1]


def token_logprobs(
    model: torch.nn.Module, batch: dict[str, torch.Tensor]
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Log-probability and entropy of each answer token under `model`, and the mask of answer tokens; all
    (batch, span), aligned with `batch["labels"]`; zero where the mask is False. With `allowed_ids`, the
    distribution is the constrained decoder's: renormalized over the tokens allowed at that position."""
    labels = batch["labels"]
    mask = labels != IGNORE
    logits = answer_logits(model, batch).float()
    if "allowed_ids" in batch:
        logits = logits.masked_fill(~allowed_mask(batch["allowed_ids"], logits.shape), float("-inf"))
    logp_all = torch.log_softmax(logits, dim=-1)
    chosen = logp_all.gather(-1, labels.clamp(min=0).unsqueeze(-1)).squeeze(-1)
    entropy = -torch.where(torch.isfinite(logp_all), logp_all.exp() * logp_all, 0.0).sum(-1)
    return chosen * mask, entropy * mask, mask


def allowed_mask(allowed_ids: torch.Tensor, shape: torch.Size) -> torch.Tensor:
    """Boolean (batch, span, vocab): the listed ids of each position, or every token where none are listed."""
    listed = allowed_ids >= 0
    counts = torch.zeros(shape, dtype=torch.int32, device=allowed_ids.device).scatter_add_(
        -1, allowed_ids.clamp(min=0), listed.to(torch.int32)
    )
    return (counts > 0) | ~listed.any(-1, keepdim=True)
