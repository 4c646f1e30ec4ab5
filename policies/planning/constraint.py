"""The trie of valid continuations for constrained decoding: the token sequences of every valid subgoal's
text (and `done()`), each ending in the end-of-sequence token. A decoder that only ever picks a token the
trie allows after what it has generated so far can only produce one of those texts."""

from __future__ import annotations

from collections.abc import Iterable, Sequence


class TokenTrie:
    """A prefix tree of token-id sequences; `allowed(prefix)` gives the tokens that may follow `prefix`."""

    def __init__(self, sequences: Iterable[Sequence[int]], end_token: int) -> None:
        self.end_token = end_token
        self._root: dict[int, dict] = {}
        self.depth = 0
        for sequence in sequences:
            if not sequence:
                raise ValueError("a valid continuation cannot be empty")
            node = self._root
            for token in (*sequence, end_token):
                node = node.setdefault(int(token), {})
            self.depth = max(self.depth, len(sequence) + 1)
        if not self._root:
            raise ValueError("no valid continuations: the trie would allow nothing")

    def allowed(self, prefix: Sequence[int]) -> list[int]:
        """Token ids that may follow `prefix`; empty once the end token has been generated.

        Raises ValueError for a prefix the trie does not contain (a decoder that ignored the constraint).
        """
        node = self._root
        for token in prefix:
            child = node.get(int(token))
            if child is None:
                raise ValueError(f"token {token} after {list(prefix)} leaves the trie of valid subgoals")
            node = child
        return list(node)
