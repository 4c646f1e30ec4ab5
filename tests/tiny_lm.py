"""A tiny from-scratch GPT-2 with a byte-level BPE tokenizer trained on our own prompt text, shared by the
planner tests (random answers, which constraints and validation must survive) and the planner training
tests (which train it). Real transformers and peft code paths, seconds to build."""

from __future__ import annotations

from pathlib import Path

from policies.planning.prompting import PROMPTS_DIR

POLICIES = Path(__file__).parents[1] / "policies"
WORLD_PROMPTS = (POLICIES / "tabletop" / "prompts", POLICIES / "alfworld" / "prompts")

CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def _corpus() -> list[str]:
    from sim.tabletop import SKILLS
    from sim.tabletop.model import BLOCKS, PLATES

    # each world's system and user templates and the re-ask, not the optional ones (`<stem>.parse.*.txt`,
    # `<stem>.goal.user.txt` of llm.goal_parse): a new optional template must not redraw the tokenizer, and
    # with it the tiny model's answers that tests replay
    files = [
        path
        for folder in (PROMPTS_DIR, *WORLD_PROMPTS)
        for path in folder.glob("*.txt")
        if path.name.count(".") <= 2
    ]
    texts = [path.read_text() for path in sorted(files, key=lambda path: path.name)]
    names = [*BLOCKS, *PLATES, *SKILLS, "done()", "(", ")", ", "]
    return texts + [" ".join(names)] * 20


def build_tiny_gpt2(folder: Path, initializer_range: float = 0.02, dropout: float = 0.1) -> Path:
    """Save the tokenizer and a 2-layer, 64-wide GPT-2 drawn with seed 0 into `folder`."""
    import torch
    from tokenizers import ByteLevelBPETokenizer
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

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
        initializer_range=initializer_range,
        resid_pdrop=dropout,
        embd_pdrop=dropout,
        attn_pdrop=dropout,
    )
    GPT2LMHeadModel(config).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
