"""A slow, obviously correct byte-level BPE trainer, kept as the yardstick for the fast one.

It recounts every pair before every merge, so it is only fit for the small corpora the tests
use; ``engine/trainers/bpe_merge.py`` must produce exactly the same merges. It lives in
``tests/`` because production never calls it. It covers the merge rule only (no corpus
reading, no special tokens, no ids).

Tie-break rule: the highest count wins; among equal counts, the greatest pair compared as
bytes ``(left, right)``. Stops after ``num_merges`` or when the best count < ``min_frequency``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping


def train_reference(
    word_counts: Mapping[str, int],
    num_merges: int,
    *,
    min_frequency: int = 0,
    max_token_length: int | None = None,
) -> list[tuple[bytes, bytes, int]]:
    """Return ``[(left, right, count), ...]`` in merge order for pre-token counts."""
    words = {tuple(bytes([b]) for b in w.encode("utf-8")): c for w, c in word_counts.items()}
    merges: list[tuple[bytes, bytes, int]] = []
    while len(merges) < num_merges:
        pairs: Counter[tuple[bytes, bytes]] = Counter()
        for word, count in words.items():
            for pair in zip(word, word[1:]):
                if max_token_length is None or len(pair[0] + pair[1]) <= max_token_length:
                    pairs[pair] += count
        if not pairs:
            break
        best = max(pairs, key=lambda pair: (pairs[pair], pair))
        if pairs[best] < max(min_frequency, 1):
            break
        merges.append((best[0], best[1], pairs[best]))
        merged: dict[tuple[bytes, ...], int] = {}
        for word, count in words.items():
            out: list[bytes] = []
            i = 0
            while i < len(word):
                if i + 1 < len(word) and (word[i], word[i + 1]) == best:
                    out.append(word[i] + word[i + 1])
                    i += 2
                else:
                    out.append(word[i])
                    i += 1
            key = tuple(out)
            merged[key] = merged.get(key, 0) + count
        words = merged
    return merges
