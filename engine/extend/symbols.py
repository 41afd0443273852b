"""Two steps every extension shares: choosing new symbols by coverage, and numbering a
segmentation's tokens as the characters the trainer's merge loop works on.

``trainers/bpe_merge.merge_words`` merges words written as strings, one character per symbol, so
an extension writes each token id of the base's segmentation as one character. Surrogate code
points cannot be characters of a ``str`` that encodes, so the numbering skips them
(:func:`internal_alphabet`). Left out: what a symbol is for each model (``bpe.py``,
``char_bpe.py``, ``wordpiece.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

_SURROGATES = range(0xD800, 0xE000)


def by_coverage(counts: Mapping[str, int], coverage: float, limit: int) -> list[str]:
    """The symbols of ``counts`` most frequent first (ties: the smaller string), taken while those
    taken cover less than ``coverage`` of all their occurrences, at most ``limit`` of them
    (sentencepiece's ``character_coverage``)."""
    total = sum(counts.values())
    chosen: list[str] = []
    covered = 0
    for symbol in sorted(counts, key=lambda s: (-counts[s], s)):
        if len(chosen) == limit or covered >= coverage * total:
            break
        chosen.append(symbol)
        covered += counts[symbol]
    return chosen


def internal_alphabet(token_ids: Iterable[int]) -> tuple[list[int | None], dict[int, int]]:
    """``(alphabet, internal)``: the sorted ``token_ids`` by internal number (None for the numbers
    skipped as surrogates, which no word holds), and each token id's internal number."""
    alphabet: list[int | None] = []
    for token_id in sorted(set(token_ids)):
        while len(alphabet) in _SURROGATES:
            alphabet.append(None)
        alphabet.append(token_id)
    return alphabet, {token_id: i for i, token_id in enumerate(alphabet) if token_id is not None}
