"""The Unigram trainer's starting point: required characters and the seed vocabulary.

sentencepiece seeds EM with the most frequent substrings of the corpus, found with an enhanced
suffix array: every substring that occurs at least twice and is *right-branching* (not always
followed by the same character), scored by ``frequency × length``. Here the corpus is a table
of distinct words with counts, so the same set is counted directly: every substring of up to
``max_piece_length`` characters of every word, weighted by the word's count. A substring is
right-branching when its count exceeds that of its most frequent one-character extension.

Valid pieces follow sentencepiece's rules (``scripts.py``): ``▁`` only at the start (without
``split_by_whitespace``: anywhere but at the end of a longer piece, and transparent to the script
rule, as a combining mark is, so "▁of▁the" is a piece), no character outside the required set,
and (with ``split_by_unicode_script``) no neighbouring characters of different scripts; decimal
digits are Common, so "1." is a piece and "F1" is not.
Ties in the ranking go to the smaller string (code point order), so the seed is deterministic.

Speed: valid pieces lie inside a word's *segments*, so the words are first reduced to a table
of distinct segments with summed counts (``segments.py``: "▁the", "▁the," and "▁the."
share "▁the"), and the substrings are counted on the segments' sorted suffixes
(``suffixes.py``; en_25M: 1.4 s, against 4.3 s for a ``Counter`` per substring length in one
process). Both steps run in the lattice workers during training (:class:`SeedWork`). The slow,
obviously-correct version is ``reference_seed`` in ``tests/engine/test_unigram_seed.py``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np

from engine.trainers.packed import CountedWords, PackedStrings
from engine.trainers.unigram.scripts import INHERITED, char_class
from engine.trainers.unigram.segments import packed_segment_counts
from engine.trainers.unigram.suffixes import top_substrings

__all__ = ["InProcess", "SeedWork", "char_totals", "covering", "required_chars", "seed_pieces"]


class SeedWork(Protocol):
    """Where the seed's two heavy steps run: here (:class:`InProcess`) or in the lattice workers
    (``parallel.Shards``, each on its own words, then on its own first characters)."""

    def segments(self, classes: Mapping[str, str], space: str) -> tuple[PackedStrings, np.ndarray]:
        """The words' segments and their counts (``segments.segment_counts``; a segment may come
        more than once, from different workers: the ranking adds its counts up)."""
        ...

    def top_substrings(self, segments: PackedStrings, counts: np.ndarray, max_piece_length: int, want: int, *,
                       no_last: str | None = None) -> tuple[list[str], list[int]]:
        """``suffixes.top_substrings``."""
        ...


class InProcess:
    """The seed's steps in this process, on the whole word table."""

    def __init__(self, word_counts: Mapping[str, int]) -> None:
        self.word_counts = word_counts

    def segments(self, classes: Mapping[str, str], space: str) -> tuple[PackedStrings, np.ndarray]:
        return packed_segment_counts(CountedWords.of(self.word_counts), classes, space)

    @staticmethod
    def top_substrings(segments: PackedStrings, counts: np.ndarray, max_piece_length: int, want: int, *,
                       no_last: str | None = None) -> tuple[list[str], list[int]]:
        return top_substrings(segments, counts, max_piece_length, want, no_last=no_last)


def required_chars(words: CountedWords, coverage: float) -> dict[str, int]:
    """The most frequent characters that together cover ``coverage`` of all characters (of every
    word read with its ``prefix`` before it, as ``segments.segment_counts`` reads them): see
    :func:`covering`. The characters of every word are counted at once as code points, each
    weighted by its word's count (en_5M: 0.15 s with a Counter per group of words of one count,
    0.06 s here; zh_5M: 0.25 and 0.05 s)."""
    return covering(*char_totals(words), coverage)


def char_totals(words: CountedWords) -> tuple[np.ndarray, np.ndarray]:
    """Each character the words hold (read with their ``prefix``), as ascending code points, and
    how often it occurs in the text they spell (int64)."""
    codes = words.packed.codes
    if not len(codes):
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    weights = np.repeat(words.counts, words.packed.lengths)
    # Float sums of integers stay exact below 2**53 characters; bincount is ~10x np.add.at.
    totals = np.bincount(codes, weights=weights).astype(np.int64)
    seen = np.zeros(len(totals), dtype=bool)
    seen[codes] = True
    chars = np.flatnonzero(seen)
    return chars, totals[chars]


def covering(chars: np.ndarray, counts: np.ndarray, coverage: float) -> dict[str, int]:
    """The characters (code points ``chars``, each seen ``counts`` times) taken by descending
    count (ties: smaller code point first) until the covered share exceeds ``coverage``:
    sentencepiece's rule. Each with its count, in that order. NUL is neither taken nor counted:
    sentencepiece makes no piece of it, and its ``.model`` loader refuses one (or, with byte
    fallback, reads it as UNUSED), so a NUL is spelled ``<0x00>`` or unknown."""
    if len(chars) and chars[0] == 0:  # ascending code points: NUL comes first
        chars, counts = chars[1:], counts[1:]
    order = np.lexsort((chars, -counts))  # by descending count, then by code point
    threshold = int(counts.sum()) * coverage
    required: dict[str, int] = {}
    covered = 0
    for char, n in zip(chars[order].tolist(), counts[order].tolist()):
        if covered > threshold:
            break
        covered += n
        required[chr(char)] = n
    return required


def seed_pieces(
    word_counts: Mapping[str, int],
    required: Mapping[str, int],
    *,
    seed_size: int,
    max_piece_length: int,
    split_by_unicode_script: bool = True,
    split_by_number: bool = True,
    split_by_whitespace: bool = True,
    space: str = "\u2581",
    work: SeedWork | None = None,
) -> list[tuple[str, float]]:
    """Required characters (scored by count) then the top substrings (scored by count × length),
    the segments cut and the substrings ranked by ``work`` (default: in this process)."""
    classes = {
        c: char_class(c, split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number)
        for c in required
    }
    if not split_by_whitespace and space in classes:
        classes[space] = INHERITED  # inside a piece, and it keeps the script of what came before
    want = max(0, seed_size - len(required))
    work = work or InProcess(word_counts)
    segments, counts = work.segments(classes, space)
    top, negated = work.top_substrings(segments, counts, max_piece_length, want,
                                       no_last=None if split_by_whitespace else space)
    pieces = [(c, float(n)) for c, n in sorted(required.items(), key=lambda kv: (-kv[1], kv[0]))]
    pieces.extend((piece, float(-score)) for piece, score in zip(top, negated))
    return pieces
