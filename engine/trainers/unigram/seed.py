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
share "▁the"), and the substrings are counted by ``Counter.update`` over slices, one
call per (count, segment length, piece length). The slow, obviously-correct version is
``reference_seed`` in ``tests/engine/test_unigram_seed.py``.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from heapq import merge
from itertools import islice
from operator import itemgetter

import numpy as np

from engine.trainers.base import Reporter
from engine.trainers.counting import add_scaled
from engine.trainers.unigram.parallel import run_in_processes
from engine.trainers.unigram.scripts import INHERITED, char_class
from engine.trainers.unigram.segments import segment_counts

__all__ = ["required_chars", "seed_pieces"]

# count -> segment length -> the distinct segments of that length whose words sum to that count
SegmentTable = dict[int, dict[int, list[str]]]
# Ranked pieces: the pieces and their negated scores (-count × length), by ascending negated
# score then ascending piece.
Ranked = tuple[list[str], list[int]]


def required_chars(word_counts: Mapping[str, int], coverage: float) -> dict[str, int]:
    """The most frequent characters that together cover ``coverage`` of all characters.

    Characters are taken by descending count (ties: smaller code point first) until the covered
    share exceeds ``coverage``; sentencepiece's rule. The characters of every word are counted
    at once as code points, each weighted by its word's count (en_5M: 0.15 s with a Counter per
    group of words of one count, 0.06 s here; zh_5M: 0.25 and 0.05 s).
    """
    words = list(word_counts)
    codes = np.frombuffer("".join(words).encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    if not len(codes):
        return {}
    weights = np.repeat(np.fromiter(word_counts.values(), np.int64, len(words)),
                        np.fromiter(map(len, words), np.int64, len(words)))
    totals = np.zeros(int(codes.max()) + 1, dtype=np.int64)
    np.add.at(totals, codes, weights)
    seen = np.zeros(len(totals), dtype=bool)
    seen[codes] = True
    chars = np.flatnonzero(seen)
    counts = totals[chars]
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
    workers: int = 1,
    reporter: Reporter | None = None,
) -> list[tuple[str, float]]:
    """Required characters (scored by count) then the top substrings (scored by count × length),
    the substrings counted in up to ``workers`` processes (the same seed for any number)."""
    classes = {
        c: char_class(c, split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number)
        for c in required
    }
    if not split_by_whitespace and space in classes:
        classes[space] = INHERITED  # inside a piece, and it keeps the script of what came before
    want = max(0, seed_size - len(required))
    table = _segment_table(word_counts, classes, space)
    top, negated = _top_substrings(table, max_piece_length, want, no_last=None if split_by_whitespace else space,
                                   workers=workers, reporter=reporter)
    pieces = [(c, float(n)) for c, n in sorted(required.items(), key=lambda kv: (-kv[1], kv[0]))]
    pieces.extend((piece, float(-score)) for piece, score in zip(top, negated))
    return pieces


def _segment_table(word_counts: Mapping[str, int], classes: Mapping[str, str], space: str) -> SegmentTable:
    """The distinct segments of two characters or more, grouped by summed count and by length."""
    table: SegmentTable = {}
    for seg, count in segment_counts(word_counts, classes, space).items():
        table.setdefault(count, {}).setdefault(len(seg), []).append(seg)
    return table


def _top_substrings(table: SegmentTable, max_piece_length: int, want: int, *, no_last: str | None = None,
                    workers: int = 1, reporter: Reporter | None = None) -> Ranked:
    """The best ``want`` right-branching substrings, ranked; none ends with ``no_last``.

    Each piece length is counted and tested on its own (with the next length's counts), so the
    lengths are shared out between ``workers`` processes in ranges of about equal work, each
    returning its best ``want``; merged, they are exactly the ranking of one process.
    """
    lengths = range(2, max_piece_length + 1)
    # The work of length L: its substrings, and those of L + 1 (counted to test branching).
    size = [sum(len(segs) * max(0, m - L + 1) for by_length in table.values() for m, segs in by_length.items())
            for L in range(max_piece_length + 2)]
    cost = [(size[L] + size[L + 1]) * min(L, 10) for L in lengths]  # mid lengths have the most distinct substrings
    parts, share, spent = [], sum(cost) / max(1, workers), 0.0
    first = 2
    for L, c in zip(lengths, cost):
        spent += c
        if spent >= share * (len(parts) + 1) and len(parts) < workers - 1:
            parts.append(range(first, L + 1))
            first = L + 1
    if first <= max_piece_length:
        parts.append(range(first, max_piece_length + 1))
    ranked = run_in_processes(_ranked_lengths, [(table, part, want, no_last) for part in parts], reporter or Reporter())
    best = list(islice(merge(*(zip(scores, pieces) for pieces, scores in ranked)), want))
    return [piece for _, piece in best], [score for score, _ in best]


def _ranked_lengths(table: SegmentTable, lengths: range, want: int, no_last: str | None) -> Ranked:
    """The best ``want`` right-branching substrings of the given lengths.

    (sentencepiece counts and tests branching on every substring first and drops invalid pieces
    after, so a piece ending in ``no_last`` still counts as another's extension.)
    """
    # 1. counts[L]: every substring of length L inside a segment, weighted by its count (the next
    #    length's too, to test branching). Each count's segments are counted once, then added
    #    count times over.
    counted = range(lengths.start, lengths.stop + 1)
    counts: dict[int, Counter[str]] = {L: Counter() for L in counted}
    for count, by_length in table.items():
        into = counts if count == 1 else {L: Counter() for L in counted}
        for m, segs in by_length.items():
            for L in range(counted.start, min(m, counted.stop - 1) + 1):
                for start in range(m - L + 1):  # every segment's substring at [start:start + L]
                    into[L].update(map(itemgetter(slice(start, start + L)), segs))
        if count != 1:
            for L in counted:
                add_scaled(counts[L], into[L], count)
    # 2. Right-branching: a substring that occurs at least twice, and not always followed by the
    #    same character. An extension never counts more than its prefix, so the test is that no
    #    extension counts as much.
    pieces: list[str] = []
    scores: list[int] = []
    for L in lengths:
        n_of, ext = counts[L], counts[L + 1]
        closed = {longer[:-1] for longer, n in ext.items() if n > 1 and n == n_of[longer[:-1]]}
        kept = [piece for piece, n in n_of.items()
                if n > 1 and piece not in closed and (no_last is None or piece[-1] != no_last)]
        pieces += kept
        scores += [-L * n_of[piece] for piece in kept]
        del counts[L]
    # 3. Rank by count × length (negated, so ascending); ties to the smaller string.
    ranked = sorted(zip(scores, pieces))[:want]
    return [piece for _, piece in ranked], [score for score, _ in ranked]
