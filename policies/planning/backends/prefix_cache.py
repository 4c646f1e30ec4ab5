"""Keys and values of the last few prompts a model was given, found again by the longest prefix of token ids a
new prompt shares with any of them: whatever did not change since (the system prompt and skills, the scene
up to its first changed line, a whole earlier prompt that an episode of the same group asks again) is not
recomputed. Nothing after the first differing token is ever reused: its keys depend on what came before."""

from __future__ import annotations

import copy
from collections.abc import Sequence

from transformers import DynamicCache

MIN_PREFIX_REUSE = 16
"""Reuse a KV cache (an earlier prompt's, a batch's shared prefix) for at least this many leading tokens."""


def fork(cache: DynamicCache, length: int) -> DynamicCache:
    """A new cache over the first `length` positions of `cache`, sharing its tensors: appending to either
    concatenates into new tensors and never writes into the other's."""
    forked = copy.copy(cache)
    forked.layers = [copy.copy(layer) for layer in cache.layers]
    surplus = forked.get_seq_length() - length
    if surplus:
        forked.crop(-surplus)
    return forked


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    shared = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        shared += 1
    return shared


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


class PrefixCache:
    """Up to `entries` (token ids, KV cache) pairs of one row each, the least recently used dropped first."""

    def __init__(self, entries: int) -> None:
        if entries < 0:
            raise ValueError(f"a prefix cache holds >= 0 entries, got {entries}")
        self.entries = entries
        self._stored: list[tuple[list[int], DynamicCache]] = []

    def lookup(self, ids: Sequence[int], limit: int) -> tuple[int, DynamicCache]:
        """The most of `ids[:limit]` that a stored entry holds (0 below MIN_PREFIX_REUSE) and a fresh cache
        over it, to be extended by the rest."""
        best, found = 0, -1
        for index, (stored, _) in enumerate(self._stored):
            shared = min(common_prefix(stored, ids), limit)
            if shared > best:
                best, found = shared, index
        if best < MIN_PREFIX_REUSE:
            return 0, DynamicCache()
        entry = self._stored.pop(found)
        self._stored.append(entry)  # most recently used last
        return best, fork(entry[1], best)

    def store(self, ids: Sequence[int], cache: DynamicCache) -> None:
        """Keep `cache` (its positions are `ids`; a snapshot, so later appends to `cache` do not leak in),
        replacing an entry it extends."""
        if not self.entries or len(ids) < MIN_PREFIX_REUSE:
            return
        ids = list(ids)
        self._stored = [
            (stored, kept) for stored, kept in self._stored if common_prefix(stored, ids) < len(stored)
        ]
        self._stored.append((ids, fork(cache, len(ids))))
        del self._stored[: -self.entries]

    def clear(self) -> None:
        self._stored.clear()
