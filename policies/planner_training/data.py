"""Training examples for the planner: (prompt, answer) pairs from demonstration files or decision logs,
tokenized exactly as the planner prompts the model (`chat_prompt`), with prompt tokens masked out of the
loss (label -100) so only the answer and its end-of-sequence token are learned.

Accepted JSONL records, one per line:
- demonstrations (`hgpo tabletop-demos`, `hgpo alfworld demos`): `messages` (the LLM planner's own chat
  messages for that decision) and `expert_subgoal`, or `expert_goal` for the goal a planner with
  `llm.goal_parse` writes first (`hgpo tabletop-demos --goals`);
- decision logs (`decisions.jsonl` of the planner node or `hgpo eval-planner`): `trace.attempts` and
  `subgoal`; only decisions whose subgoal was executed successfully (or `done()` that ended a task) count.
Each keeps the episode it came from (`game`, or `task` and `seed`, or the same in a log's `meta`) for a
validation split by episode.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import torch

from policies.planning.backends.prefix_cache import shared_prefix
from policies.planning.backends.transformers_lm import chat_prompt
from policies.planning.constraint import TokenTrie
from policies.planning.decisions import Message
from policies.planning.parsing import parse_subgoal

T = TypeVar("T")

IGNORE = -100
"""Label of tokens that are not learned (prompt, padding), as torch's cross-entropy ignores them."""


class DataError(ValueError):
    """A training file that cannot be used; the message names the file, the line and what to do."""


@dataclass(frozen=True)
class Example:
    prompt_ids: tuple[int, ...]
    answer_ids: tuple[int, ...]  # the answer's tokens and the end-of-sequence token
    allowed: tuple[tuple[int, ...], ...] | None = None
    """Per answer token, the token ids constrained decoding allowed there (None: the whole vocabulary), so
    RL scores an answer under the distribution it was sampled from."""


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    if not path.is_file():
        raise DataError(
            f"{path}: no such file; write demonstrations with `hgpo tabletop-demos` or `hgpo alfworld demos`"
        )
    records = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            raise DataError(
                f"{path}:{number}: not a JSON object ({err.msg}); each line must be one record"
            ) from err
        if not isinstance(record, dict):
            raise DataError(f"{path}:{number}: expected a JSON object, got {type(record).__name__}")
        records.append(record)
    if not records:
        raise DataError(f"{path} holds no records; it is empty (did the demonstration run solve nothing?)")
    return records


@dataclass(frozen=True)
class Demo:
    """One decision to imitate: the chat messages the planner saw and the subgoal it should answer."""

    messages: list[Message]
    answer: str
    episode: str | None = None
    """The episode it came from (an ALFWorld game; a tabletop task and seed); None where the record does
    not say (the planner node's own decision logs)."""
    goal: bool = False
    """The answer is a written goal (`llm.goal_parse`), not a subgoal."""

    @property
    def skill(self) -> str:
        """The answer's skill (`done` for done(), `goal` for a written goal), read by the planner's own
        parser."""
        if self.goal:
            return "goal"
        subgoal = parse_subgoal(self.answer)
        return subgoal.skill if subgoal else "done"


def episode_of(record: dict[str, Any]) -> str | None:
    """The game (alfworld) or task and seed (tabletop) of a record; decision logs keep them in `meta`."""
    for source in (record, record.get("meta") or {}):
        if "game" in source:
            return str(source["game"])
        if "task" in source and "seed" in source:
            return f"{source['task']}:{source['seed']}"
    return None


def demo_of(record: dict[str, Any], where: str) -> Demo | None:
    """The demonstration or successful logged decision a record holds; None for a logged decision that is
    not a positive example; DataError for a record of neither kind."""
    episode = episode_of(record)
    answer_key = next((key for key in ("expert_subgoal", "expert_goal") if key in record), None)
    if "messages" in record and answer_key is not None:
        messages = record["messages"]
        if not (
            isinstance(messages, list)
            and messages
            and all(isinstance(m, dict) and {"role", "content"} <= set(m) for m in messages)
        ):
            raise DataError(f"{where}: `messages` must be a non-empty list of {{role, content}} objects")
        chat = [Message(role=m["role"], content=m["content"]) for m in messages]
        return Demo(chat, str(record[answer_key]), episode, goal=answer_key == "expert_goal")
    trace = record.get("trace")
    if isinstance(trace, dict) and "attempts" in trace and "subgoal" in record:
        result, subgoal = record.get("result"), record["subgoal"]
        executed_ok = isinstance(result, dict) and result.get("success") is True
        ended_well = subgoal == "done()" and str(record.get("stop", "")).startswith("planner said done after")
        attempts = trace["attempts"]
        if subgoal is None or not attempts or not (executed_ok or ended_well):
            return None
        last = attempts[-1]
        chat = [Message(role=m["role"], content=m["content"]) for m in last["messages"]]
        return Demo(chat, str(subgoal), episode)
    raise DataError(
        f"{where}: neither a demonstration (messages, expert_subgoal or expert_goal) nor a planner decision "
        "(trace, subgoal)"
    )


def episodes_of(demos: Sequence[Demo]) -> list[str]:
    """Each demonstration's episode, for a split by episode; DataError when a record did not say."""
    unnamed = sum(d.episode is None for d in demos)
    if unnamed:
        raise DataError(
            f"bc.split: episode needs the game (alfworld) or task and seed (tabletop) of every record; "
            f"{unnamed} of {len(demos)} have neither (the planner node's decision logs): "
            "use bc.split: decision"
        )
    return [str(d.episode) for d in demos]


def repeated(demos: Sequence[Demo], examples: Sequence[T], times: dict[str, int]) -> list[T]:
    """The examples, each `times[skill]` times (once for unlisted skills), in their order."""
    return [e for d, e in zip(demos, examples, strict=True) for _ in range(times.get(d.skill, 1))]


def load_demos(paths: Sequence[Path]) -> list[Demo]:
    demos = []
    for path in paths:
        for number, record in enumerate(read_jsonl(path), start=1):
            demo = demo_of(record, f"{path}:{number}")
            if demo is not None:
                demos.append(demo)
    if not demos:
        raise DataError(f"no usable examples in {', '.join(map(str, paths))} (no successful decisions)")
    return demos


def encode_text(
    tokenizer: Any, prompt_text: str, answer: str, choices: Sequence[str] | None = None
) -> Example:
    """An example from the prompt text the model saw and the answer it should give; with the `choices`
    its decoding was constrained to, the tokens allowed at each answer position (the decoder's trie)."""
    prompt = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
    eos = int(tokenizer.eos_token_id)
    answer_ids = [*tokenizer.encode(answer, add_special_tokens=False), eos]
    allowed = None
    if choices:
        trie = TokenTrie((tokenizer.encode(c, add_special_tokens=False) for c in choices), end_token=eos)
        allowed = tuple(tuple(trie.allowed(answer_ids[:i])) for i in range(len(answer_ids)))
    return Example(tuple(prompt), tuple(answer_ids), allowed)


def encode(tokenizer: Any, messages: Sequence[Message], answer: str) -> Example:
    return encode_text(tokenizer, chat_prompt(tokenizer, messages), answer)


def encode_demos(tokenizer: Any, demos: Sequence[Demo]) -> list[Example]:
    """Each demonstration as the example BC trains on (and the RL runner's BC term draws from)."""
    return [encode(tokenizer, d.messages, d.answer) for d in demos]


def split(
    examples: Sequence[T], val_fraction: float, seed: int, episodes: Sequence[str] | None = None
) -> tuple[list[T], list[T]]:
    """A seeded shuffle into training and validation examples (at least one of each when there are two).
    With `episodes` (one per example), whole episodes are held out until the fraction is reached, so no
    validation decision comes from a game a training decision came from: validation then measures
    unseen episodes, as evaluation does."""
    if episodes is None:
        order = list(examples)
        random.Random(seed).shuffle(order)
        count = min(len(order) - 1, max(1, round(val_fraction * len(order)))) if len(order) > 1 else 0
        return order[count:], order[:count]
    by_episode: dict[str, list[T]] = {}
    for example, episode in zip(examples, episodes, strict=True):
        by_episode.setdefault(episode, []).append(example)
    names = sorted(by_episode)
    random.Random(seed).shuffle(names)
    wanted = max(1, round(val_fraction * len(examples))) if len(names) > 1 else 0
    held = count = 0
    while count < wanted and held < len(names) - 1:
        count += len(by_episode[names[held]])
        held += 1
    return [e for n in names[held:] for e in by_episode[n]], [e for n in names[:held] for e in by_episode[n]]


def collate(examples: Sequence[Example], pad_id: int, share_prefix: bool = True) -> dict[str, torch.Tensor]:
    """Left-padded input_ids, attention_mask and position_ids, so that every answer ends at the last
    position, and `labels` for the last `span` positions only (the longest answer; IGNORE elsewhere): the
    model then computes output logits for those positions alone, not for the whole prompt.

    With `share_prefix`, the leading prompt tokens every example shares (the system prompt: most of a
    planner prompt) come once as `prefix_ids` (1, P), run once and expanded to the batch by
    `model.answer_logits`; the rest is padded as above, its positions and attention mask counting the
    prefix (attention_mask (B, P + length))."""
    shared = shared_prefix([e.prompt_ids for e in examples]) if share_prefix and len(examples) > 1 else 0
    length = max(len(e.prompt_ids) + len(e.answer_ids) for e in examples) - shared
    span = max(len(e.answer_ids) for e in examples)
    ids = torch.full((len(examples), length), pad_id, dtype=torch.long)
    mask = torch.zeros((len(examples), length), dtype=torch.long)
    labels = torch.full((len(examples), span), IGNORE, dtype=torch.long)
    for row, example in enumerate(examples):
        tokens = (*example.prompt_ids[shared:], *example.answer_ids)
        ids[row, length - len(tokens) :] = torch.tensor(tokens)
        mask[row, length - len(tokens) :] = 1
        labels[row, span - len(example.answer_ids) :] = torch.tensor(example.answer_ids)
    positions = (mask.cumsum(-1) - 1).clamp(min=0) + shared
    batch = {"input_ids": ids, "attention_mask": mask, "position_ids": positions, "labels": labels}
    if any(e.allowed for e in examples):
        batch["allowed_ids"] = _allowed_ids(examples, span)
    if shared:
        batch["prefix_ids"] = torch.tensor([examples[0].prompt_ids[:shared]])
        batch["attention_mask"] = torch.cat([torch.ones((len(examples), shared), dtype=torch.long), mask], 1)
    return batch


def token_passes(examples: Sequence[Example], max_tokens: int) -> list[list[int]]:
    """`examples` (as indices, in order) cut into consecutive passes whose padded size, rows x the longest
    row, is at most `max_tokens` (an example longer than that is a pass alone; 0: one pass). A minibatch run
    pass by pass with its gradients accumulated is the same update, but the activations kept for the backward
    grow with a pass's tokens, not with how long the minibatch's prompts happen to be."""
    passes: list[list[int]] = []
    longest = 0
    for index, example in enumerate(examples):
        size = len(example.prompt_ids) + len(example.answer_ids)
        if passes and (not max_tokens or (len(passes[-1]) + 1) * max(longest, size) <= max_tokens):
            passes[-1].append(index)
            longest = max(longest, size)
        else:
            passes.append([index])
            longest = size
    return passes


def _allowed_ids(examples: Sequence[Example], span: int) -> torch.Tensor:
    """(batch, span, most allowed) token ids allowed at each label position, -1 padded; a position with
    none listed (padding, unconstrained examples) is unconstrained."""
    width = max(len(ids) for e in examples if e.allowed for ids in e.allowed)
    allowed = torch.full((len(examples), span, width), -1, dtype=torch.long)
    for row, example in enumerate(examples):
        for offset, ids in enumerate(example.allowed or ()):
            allowed[row, span - len(example.answer_ids) + offset, : len(ids)] = torch.tensor(ids)
    return allowed
