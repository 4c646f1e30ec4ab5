"""Fixtures for planner tests: a tiny from-scratch GPT-2 with a byte-level BPE tokenizer trained on our own
prompt text (fast, real transformers code paths; its answers are random, which is what constraints and
validation must survive) and the real SmolLM2 folder that `make setup` converts."""

from __future__ import annotations

from pathlib import Path

import pytest

from policies.planning.prompting import PROMPTS_DIR

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus() -> list[str]:
    from sim.tabletop import SKILLS
    from sim.tabletop.model import BLOCKS, PLATES

    texts = [path.read_text() for path in sorted(PROMPTS_DIR.glob("*.txt"))]
    names = [*BLOCKS, *PLATES, *SKILLS, "done()", "(", ")", ", "]
    return texts + [" ".join(names)] * 20


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    folder = tmp_path_factory.mktemp("tiny_gpt2")
    bpe = ByteLevelBPETokenizer()
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe.train_from_iterator(_corpus(), vocab_size=600, min_frequency=1, special_tokens=specials)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe._tokenizer,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|im_end|>",
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tokenizer),
        n_layer=2,
        n_embd=64,
        n_head=2,
        n_positions=2048,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="session")
def smollm2_dir() -> Path:
    from policies.planning.backends.transformers_lm import MODEL_ALIASES
    from policies.planning.llm_config import DEFAULT_MODEL

    folder = MODEL_ALIASES[DEFAULT_MODEL]
    assert (folder / "config.json").is_file(), f"{folder} is missing: run `make setup`"
    return folder
