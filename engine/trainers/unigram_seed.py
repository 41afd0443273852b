"""The Unigram trainer's starting point: required characters and the seed vocabulary.

sentencepiece seeds EM with the most frequent substrings of the corpus, found with an enhanced
suffix array: every substring that occurs at least twice and is *right-branching* (not always
followed by the same character), scored by ``frequency × length``. Here the corpus is a table
of distinct words with counts, so the same set is counted directly: every substring of up to
``max_piece_length`` characters of every word, weighted by the word's count. A substring is
right-branching when its count exceeds that of its most frequent one-character extension.

Valid pieces follow sentencepiece's rules (``unigram_scripts``): ``▁`` only at the start, no
character outside the required set, and (with ``split_by_unicode_script``) no neighbouring
characters of different scripts; decimal digits are Common, so "1." is a piece and "F1" is not.
Ties in the ranking go to the smaller string (code point order),
so the seed is deterministic. EM and pruning live in ``unigram.py``/``unigram_em.py``.
"""

from __future__ import annotations

import heapq
import multiprocessing
import threading
from collections import Counter
from collections.abc import Mapping

from engine.trainers.unigram_scripts import char_class, segments

__all__ = ["char_class", "required_chars", "seed_pieces", "segments"]


def required_chars(word_counts: Mapping[str, int], coverage: float) -> dict[str, int]:
    """The most frequent characters that together cover ``coverage`` of all characters.

    Characters are taken by descending count (ties: smaller code point first) until the covered
    share exceeds ``coverage``; sentencepiece's rule.
    """
    # Words grouped by count, so that each group's characters are counted by one C-level call.
    groups: dict[int, list[str]] = {}
    for word, count in word_counts.items():
        groups.setdefault(count, []).append(word)
    chars: Counter[str] = Counter()
    for count, words in groups.items():
        for char, n in Counter("".join(words)).items():
            chars[char] += n * count
    total = sum(chars.values())
    threshold = total * coverage
    required: dict[str, int] = {}
    covered = 0
    for char, n in sorted(chars.items(), key=lambda kv: (-kv[1], kv[0])):
        if covered > threshold:
            break
        covered += n
        required[char] = n
    return required


def seed_pieces(
    word_counts: Mapping[str, int],
    required: Mapping[str, int],
    *,
    seed_size: int,
    max_piece_length: int,
    split_by_unicode_script: bool = True,
    split_by_number: bool = True,
    space: str = "\u2581",
    workers: int | None = None,
) -> list[tuple[str, float]]:
    """Required characters (scored by count) then the top substrings (scored by count × length).

    The substrings are counted in two length bands (2-5 and 6-max), in two forked workers when
    possible: a band's right-branching test only needs the counts of its own lengths plus one,
    so the bands never need each other's tables, and the two top lists merge exactly.
    """
    classes = {
        c: char_class(c, split_by_unicode_script=split_by_unicode_script, split_by_number=split_by_number)
        for c in required
    }
    want = max(0, seed_size - len(required))
    cut = min(5, max_piece_length)
    bands = [(2, cut)] + ([(cut + 1, max_piece_length)] if max_piece_length > cut else [])
    args = [(word_counts, classes, space, lo, hi, want) for lo, hi in bands]
    if workers is None:
        workers = 2 if len(word_counts) >= 20_000 else 1
    if workers > 1 and len(args) > 1 and "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        ctx = multiprocessing.get_context("fork")
        with ctx.Pool(len(args)) as pool:
            tops = pool.starmap(_top_substrings, args)
    else:
        tops = [_top_substrings(*a) for a in args]
    top = heapq.nsmallest(want, heapq.merge(*tops))
    pieces = [(c, float(n)) for c, n in sorted(required.items(), key=lambda kv: (-kv[1], kv[0]))]
    pieces.extend((s, float(-neg)) for neg, s in top)
    return pieces


def _top_substrings(
    word_counts: Mapping[str, int], classes: Mapping[str, str], space: str, lo: int, hi: int, want: int,
) -> list[tuple[int, str]]:
    """The best ``want`` right-branching substrings of length ``lo..hi``, as sorted (-count × length, s)."""
    longest = hi + 1  # counted only to test whether the length-hi pieces branch
    def cuts_for(m: int) -> list[slice]:
        return [slice(i, i + L) for L in range(lo, longest + 1) for i in range(m - L + 1)]
    slices = [cuts_for(m) for m in range(longest + 1)]
    long_slices: dict[int, list[slice]] = {}
    # 1. Count every substring of length lo..hi+1 inside a valid segment. Count-1 words go
    #    through Counter's C loop.
    once: Counter[str] = Counter()
    weighted: dict[str, int] = {}
    get = weighted.get
    for word, count in word_counts.items():
        for seg in segments(word, classes, space):
            m = len(seg)
            if m < lo:
                continue
            if m < len(slices):
                cuts = slices[m]
            else:
                cuts = long_slices.get(m) or long_slices.setdefault(m, cuts_for(m))
            subs = map(seg.__getitem__, cuts)
            if count == 1:
                once.update(subs)
            else:
                for s in subs:
                    weighted[s] = get(s, 0) + count
    for s, n in weighted.items():
        once[s] += n
    del weighted
    frequent = {s: n for s, n in once.items() if n >= 2}
    del once
    # 2. Right-branching: the count must exceed that of the most frequent extension.
    extension: dict[str, int] = {}
    for s, n in frequent.items():
        if len(s) > lo:
            parent = s[:-1]
            if n > extension.get(parent, 0):
                extension[parent] = n
    candidates = ((-n * len(s), s) for s, n in frequent.items() if len(s) <= hi and n > extension.get(s, 0))
    # 3. Rank by count × length; ties to the smaller string.
    return heapq.nsmallest(want, candidates)
