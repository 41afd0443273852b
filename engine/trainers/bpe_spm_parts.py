"""sentencepiece-style BPE's counting: every counting process cuts its own words into segments.

``bpe_spm.py`` merges inside *segments*: words cut wherever sentencepiece would refuse a pair of
neighbours (``unigram/segments.py``). Cutting every distinct word of the corpus took the leader
0.10 s of an en_5M training's ~0.8 s, alone, after the counting processes had added up their
tables. But the segments of a sum of tables are the sum of each table's segments, so each
counting process cuts its own table (a ``tally.Summary``) while the others cut theirs, and the
leader adds segments instead of words.

What one process cannot know is the alphabet: the characters that cover ``character_coverage``
of the *whole* corpus. So each process cuts with every character it saw (:func:`piece_classes`
of them) and sends its character counts; the leader picks the alphabet from their sum and cuts
again the few segments that hold a character the alphabet leaves out. That gives what cutting
with the alphabet at once gives: in a word without wildcards or marks a segment is a ``▁`` and a
run of one script's characters, so a character left out only splits the segment it is in
(:func:`recut`). Words with wildcards or marks, whose rules reach across characters, come back
uncut and the leader cuts them with the alphabet (``segments.segment_counts``). The tests hold
the two ways equal (``tests/engine/test_bpe_spm_parts.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from engine.spm_normalizer import SPACE
from engine.trainers.bpe import corpus_size
from engine.trainers.counting import add_counts
from engine.trainers.packed import CountedWords, PackedStrings
from engine.trainers.unigram.scripts import char_class
from engine.trainers.unigram.seed import char_totals, covering
from engine.trainers.unigram.segments import outside, plain_segments, segment_counts

DIGITS = "0123456789" + "".join(map(chr, range(0xFF10, 0xFF1A)))  # sentencepiece's IsDecimalDigit
NEVER_IN_A_PIECE = "\u2047\x00"  # kUNKChar (what rare characters become) and NUL

__all__ = ["Part", "SpmCounts", "SpmSegmenting", "by_count", "piece_classes", "recut"]


def piece_classes(chars: Iterable[str], *, split_digits: bool) -> dict[str, str]:
    """The script class of each of ``chars`` that a piece may hold (``scripts.char_class``): a
    character outside the result cuts every segment it is in."""
    return {c: char_class(c, split_by_unicode_script=True, split_by_number=True) for c in chars
            if c not in NEVER_IN_A_PIECE and not (split_digits and c in DIGITS)}


@dataclass(frozen=True)
class Part:
    """One counting process's table, summarised: the segments of its plain words cut with every
    character it saw, its other words uncut, its characters' counts, and the size of its text."""

    segments: dict[str, int]
    rest: dict[str, int]  # words with wildcards or marks, without their ``▁``
    chars: np.ndarray  # code points, ascending
    char_counts: np.ndarray
    size: tuple[int, int]  # UTF-8 bytes and characters, every word read after its ``▁``


@dataclass(frozen=True)
class SpmCounts:
    """The corpus as the merge loop and the pieces need it."""

    alphabet: dict[str, int]  # the required characters with their counts, most frequent first
    segments: PackedStrings  # the distinct segments of two characters or more, most frequent first
    segment_counts: np.ndarray  # their summed counts
    size: tuple[int, int]  # UTF-8 bytes and characters of the text (``bpe.corpus_size``)


@dataclass(frozen=True)
class SpmSegmenting:
    """The ``tally.Summary`` of ``bpe_spm``'s counting: tables of :func:`bpe_spm.unmarked_words`
    in, :class:`SpmCounts` out."""

    coverage: float
    split_digits: bool

    def of(self, table: dict[str, int]) -> Part:
        words = CountedWords.of(table, prefix=SPACE)
        del table  # the packed words hold what is left to read
        chars, char_counts = char_totals(words)
        classes = piece_classes(map(chr, chars.tolist()), split_digits=self.split_digits)
        found, rest = plain_segments(words, classes, SPACE, outside(classes))
        return Part(found, dict(rest), chars, char_counts, corpus_size(words))  # found: a Counter, a dict

    def summed(self, parts: list[Part]) -> SpmCounts:
        chars = np.concatenate([part.chars for part in parts])
        counts = np.concatenate([part.char_counts for part in parts])
        every, at = np.unique(chars, return_inverse=True)
        alphabet = covering(every, np.bincount(at, weights=counts, minlength=len(every)).astype(np.int64),
                            self.coverage)
        classes = piece_classes(alphabet, split_digits=self.split_digits)
        segments = recut(add_counts(*(part.segments for part in parts)), set(map(chr, every.tolist())) - set(classes))
        rest = add_counts(*(part.rest for part in parts))
        if rest:
            segments = add_counts(segments, dict(segment_counts(CountedWords.of(rest, prefix=SPACE), classes, SPACE)))
        size = (sum(part.size[0] for part in parts), sum(part.size[1] for part in parts))
        return SpmCounts(alphabet, *by_count(segments), size)


def by_count(table: dict[str, int]) -> tuple[PackedStrings, np.ndarray]:
    """The keys of ``table`` most frequent first (ties in table order), packed, and their counts:
    the merge loop then finds the common pairs' positions side by side (en_5M: the loop 0.96x,
    for ~5 ms of sorting here). Packed, they are reordered by one gather of their code points
    (en_5M: 58,000 segments; a list of the strings in that order took ~18 ms, cache misses) and
    reach the merge loop as it reads them."""
    counts = np.fromiter(table.values(), np.int64, len(table))
    order = np.argsort(-counts, kind="stable")
    return PackedStrings.of(list(table)).take(order), counts[order]


def recut(segments: dict[str, int], left_out: set[str]) -> dict[str, int]:
    """``segments`` (of plain words) cut again at the characters ``left_out``: each part of two
    characters or more keeps the segment's count, added to an equal segment's. Only the segments
    that hold such a character are read in Python; numpy finds them among all the code points
    (en_5M: 121 of 58,373 segments hold one of its 385 left-out characters)."""
    if not left_out or not segments:
        return segments
    keys = list(segments)
    codes = np.frombuffer("".join(keys).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    hits = np.flatnonzero(np.isin(codes, np.fromiter(map(ord, left_out), np.uint32, len(left_out))))
    if not len(hits):
        return segments
    ends = np.cumsum(np.fromiter(map(len, keys), np.int64, len(keys)))
    again: Counter[str] = Counter()
    # the hits ascend, so their segments do: dict.fromkeys drops repeats (np.unique would import numpy.ma)
    for index in dict.fromkeys(np.searchsorted(ends, hits, side="right").tolist()):
        count = segments.pop(keys[index])
        for piece in "".join("\n" if c in left_out else c for c in keys[index]).split("\n"):
            if len(piece) >= 2:
                again[piece] += count
    return add_counts(segments, dict(again))
