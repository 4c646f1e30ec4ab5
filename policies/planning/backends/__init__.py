"""Language-model backends behind one interface, selected by exact name.

A backend turns chat messages into one answer. Those that can constrain decoding (`constrains = True`)
take the finite set of valid answers and can only produce one of them; the others are validated by the
planner, which re-asks. Backend modules import their heavy libraries lazily, so choosing `openai` never
loads torch.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from policies.planning.decisions import Message
from policies.planning.llm_config import LLMConfig


class ModelError(RuntimeError):
    """The model could not answer (missing folder, endpoint down, timeout, garbage response); says why."""


@dataclass(frozen=True)
class Completion:
    text: str  # the answer, special tokens removed
    prompt_text: str  # the exact text the model was given (chat template applied), or the messages as JSON


ConstrainedRequest = tuple[Sequence[Message], Sequence[str]]
"""Chat messages and the answers allowed to them (one row of a batched generation)."""


class LanguageModel(Protocol):
    """A loaded model: answers chat messages, optionally only with one of `choices`."""

    description: str  # for records: backend, model, adapter
    constrains: bool  # whether `choices` is honoured during decoding

    def complete(
        self,
        messages: Sequence[Message],
        choices: Sequence[str] | None = None,
        max_new_tokens: int | None = None,
    ) -> Completion:
        """The answer to `messages`: one of `choices` where given (and the backend constrains), else free
        text of at most `max_new_tokens` (default: the config's) ending at its first line."""
        ...

    def prefill(self, messages: Sequence[Message], upto: str | None = None) -> None:
        """Compute and keep what a later `complete` of a prompt that begins as `messages` (with `upto`: as
        their rendered text before the first `upto`) would otherwise compute itself (a KV cache), without
        answering; a backend without such a cache does nothing."""
        ...


BACKENDS: Mapping[str, str] = {
    "transformers": "policies.planning.backends.transformers_lm:TransformersModel",
    "openai": "policies.planning.backends.openai_http:OpenAIChatModel",
}
"""Backend name -> "module:class" whose constructor takes an LLMConfig and loads or checks the model."""


def load_model(config: LLMConfig) -> LanguageModel:
    """Load the configured backend's model once (raises ModelError saying what to do when it cannot)."""
    if config.backend not in BACKENDS:
        raise ValueError(f"unknown LLM backend {config.backend!r}; known: {', '.join(sorted(BACKENDS))}")
    module, cls = BACKENDS[config.backend].split(":")
    model: LanguageModel = getattr(importlib.import_module(module), cls)(config)
    return model
