"""Segments: the stretches of a word that a sentencepiece piece may lie in, with summed counts.

sentencepiece refuses a piece whose neighbouring characters break its rules (``scripts.py``:
two scripts, a ``▁`` after the first character, a character outside the required set). Each
rule forbids a *pair* of neighbours, so a word cuts at every forbidden pair into segments, and
a substring is a valid piece exactly when it lies inside one segment. Both trainers that follow
those rules start from the table of distinct segments: the Unigram seed counts substrings of
them (``seed.py``), and sentencepiece-style BPE merges inside them (``trainers/bpe_spm.py``).

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Collection, Mapping

import numpy as np

from engine.trainers.packed import CountedWords, PackedStrings
from engine.trainers.tally import add_weighted
from engine.trainers.unigram.scripts import ANY, INHERITED

__all__ = ["outside", "packed_segment_counts", "plain_segments", "segment_counts", "segment_pattern", "sharing_spaces"]


def segment_counts(words: CountedWords, classes: Mapping[str, str], space: str) -> Counter[str]:
    """The distinct segments of two characters or more, each with the summed count of its words
    ("▁the", "▁the," and "▁the." all add to "▁the"), every word read with its ``prefix`` before
    it (sentencepiece-style BPE counts its words without their ``▁``).

    ``classes`` maps each allowed character to its script class (``scripts.char_class``); a
    ``space`` classed ``INHERITED`` may sit inside a piece (``split_by_whitespace=False``).
    Words without wildcards or marks are cut in numpy, all at once (:func:`plain_segments`);
    the regex (:func:`segment_pattern`) reads only the rest, grouped by count and joined so that
    one C-level pass finds each group's segments (spm BPE, one fresh process, CPU at load ~1.5:
    en_5M 0.24 s against 0.37 s for the regex over every word, zh_5M 0.23 against 0.38 s).

    The segments come in order of their words' counts, most frequent first, which is nearly their
    own order by count: BPE's merge loop then finds the frequent pairs' positions side by side
    (spm BPE en_5M, the loop alone: 0.31 s, against 0.32 s shuffled; 0.42 against 0.46-0.50 s with
    the rarest first, before the loop's leaner step).
    """
    # The separator is a character outside the allowed set: it ends a segment and starts none,
    # as a word's end does.
    separator = outside(classes)
    summed, rest = plain_segments(words, classes, space, separator)
    if not rest:  # the regex is not compiled (zh_5M: 0.04 s for its 5,000 characters)
        return summed
    run = segment_pattern(classes, space)
    inside = classes.get(space) == INHERITED
    by_count: dict[int, list[str]] = {}
    for word, count in rest:
        by_count.setdefault(count, []).append(words.prefix + word)
    for count, group in sorted(by_count.items(), reverse=True):
        joined = separator.join(group)
        found = sharing_spaces(run, joined, space) if inside else run.findall(joined)
        add_weighted(summed, [s for s in found if len(s) >= 2], count)  # no single characters, no empty matches
    return summed


def packed_segment_counts(words: CountedWords, classes: Mapping[str, str], space: str
                          ) -> tuple[PackedStrings, np.ndarray]:
    """:func:`segment_counts` as the seed's ranking reads it (``suffixes.top_substrings``): the
    segments packed, and their counts."""
    found = segment_counts(words, classes, space)
    return PackedStrings.of(list(found)), np.fromiter(found.values(), np.int64, len(found))


def outside(chars: Collection[str]) -> str:
    """The first character from U+000A up that is not one of ``chars``: a separator no segment holds."""
    return next(c for c in map(chr, range(10, sys.maxunicode + 1)) if c not in chars)


# Character kinds in a plain word, beside the script classes (numbered from 0).
_OUTSIDE, _SPACE, _NOT_PLAIN = -1, -2, -3


def plain_segments(words: CountedWords, classes: Mapping[str, str], space: str, separator: str
                    ) -> tuple[Counter[str], list[tuple[str, int]]]:
    """The segments of the *plain* words (no wildcard, no mark; each read after its prefix) with
    summed counts, and the other words (without the prefix) with their counts, which only the
    regex can cut.

    In a plain word a segment is a run of characters of one script class, or ``space`` and the
    run right after it (``space`` starts a segment, and nothing else may follow it); characters
    outside ``classes`` are in none. So every character of every word gets its kind in one
    lookup, and a character continues the segment of the one before it when both are in one
    word and that one is ``space`` or of the same class. The segments are then cut out of the
    text by one ``split`` at ``separator`` (a character outside ``classes``), the words taken in
    order of count so that each count's segments are added up by one C-level Counter call
    (numbering equal segments with one dict and adding with ``bincount`` took as long). With
    ``space`` inside pieces (``INHERITED``) no word is plain.
    """
    if classes.get(space) == INHERITED or not len(words):
        return Counter(), list(zip(words.words, words.counts.tolist()))
    order = np.argsort(-words.counts, kind="stable")  # most frequent first, ties in table order
    packed, counts = words.packed.take(order), words.counts[order]
    # 1. Every character's kind, and which words are plain.
    scripts = sorted({cls for cls in classes.values() if cls not in (ANY, INHERITED)})
    kinds = {c: (_NOT_PLAIN if cls in (ANY, INHERITED) else scripts.index(cls)) for c, cls in classes.items()
             if len(c) == 1}
    if len(space) == 1 and space in kinds:
        kinds[space] = _SPACE
    codes, lengths = packed.codes, packed.lengths
    lookup = np.full(max([int(codes.max(initial=0)), *map(ord, kinds)]) + 1, _OUTSIDE, np.int32)  # kinds may be empty
    lookup[np.fromiter(map(ord, kinds), np.int64, len(kinds))] = list(kinds.values())
    kind = lookup[codes]
    word_of = np.repeat(np.arange(len(lengths), dtype=np.int32), lengths)  # the word each character is in
    plain = np.ones(len(lengths), bool)
    plain[word_of[kind == _NOT_PLAIN]] = False
    rest_at = order[~plain].tolist()
    rest = list(zip(map(words.words.__getitem__, rest_at), words.counts[rest_at].tolist()))
    # 2. Where segments start and end (at the next character that does not continue one), and
    #    which are kept: two characters or more, in a plain word.
    continues = np.zeros(len(kind), bool)
    continues[1:] = (kind[1:] >= 0) & ((kind[:-1] == _SPACE) | (kind[1:] == kind[:-1])) & (word_of[1:] == word_of[:-1])
    breaks = np.flatnonzero(~continues)  # every start, and every character outside a segment
    at_start = kind[breaks] != _OUTSIDE
    first = breaks[at_start]
    size = np.append(breaks, len(kind))[np.flatnonzero(at_start) + 1] - first
    kept = (size >= 2) & plain[word_of[first]]
    first, size = first[kept], size[kept]
    if not len(first):
        return Counter(), rest
    found_counts = counts[word_of[first]]
    del kind, word_of, continues, breaks  # the per-character arrays, before the strings are made
    # 3. Cut them out: each kept segment's characters after a ``separator``, one split.
    ends = np.cumsum(size + 1)  # where each segment ends in the marked text
    before = ends - size  # where its characters start there
    source = np.repeat(first - (before - np.arange(1, len(first) + 1)), size) + np.arange(int(size.sum()))
    marked = np.full(int(ends[-1]), ord(separator), np.uint32)
    marked[source + np.repeat(before - first, size)] = codes[source]
    found = marked.tobytes().decode("utf-32-le", "surrogatepass").split(separator)[1:]
    # 4. Added up, one C-level Counter call per count, the most frequent words first.
    summed: Counter[str] = Counter()
    edges = np.flatnonzero(np.diff(found_counts, prepend=-1, append=-1)).tolist()  # where the count changes
    for lo, hi in zip(edges, edges[1:]):
        add_weighted(summed, found[lo:hi], int(found_counts[lo]))
    return summed, rest


def sharing_spaces(run: re.Pattern[str], text: str, space: str) -> list[str]:
    """The segments of ``text`` when ``space`` sits inside them: where one ends with spaces and the
    next follows at once (the script changed after the spaces), the next starts with those spaces
    too, since "▁a" is a valid piece after ".▁" (sentencepiece skips ``▁`` in its script rule)."""
    found: list[str] = []
    end = -1
    for match in run.finditer(text):
        seg = match.group()
        if not seg:
            continue
        if match.start() == end and found[-1][-1] == space:
            last = found[-1]
            seg = last[len(last.rstrip(space)):] + seg
        found.append(seg)
        end = match.end()
    return found


def segment_pattern(classes: Mapping[str, str], space: str) -> re.Pattern[str]:
    """A regex whose matches are exactly the segments of a text (and empty strings): the maximal
    runs a valid piece may lie in (``tests/engine/unigram_reference.segments``).

    A segment is an optional ``space`` (unless ``space`` is classed ``INHERITED``: then it is a mark
    like any other, ``split_by_whitespace=False``), then wildcards (``ANY``, and marks, which copy the wildcard before
    them), then *blocks* of one script's characters and marks, every two blocks parted by a
    wildcard. Possessive quantifiers and atomic groups keep the regex from backtracking into a
    shorter block: in "a\u0301β", "a" then the mark as a wildcard then "β" is not a segment.
    """
    chars_of: dict[str, list[str]] = {}
    for char, cls in classes.items():
        if len(char) == 1 and (char != space or cls == INHERITED):
            chars_of.setdefault(cls, []).append(char)
    wild = chars_of.pop(ANY, [])
    marks = chars_of.pop(INHERITED, [])
    prefix = len(space) == 1 and classes.get(space) not in (None, INHERITED)
    parts = [re.escape(space) + "?" if prefix else ""]
    if wild or marks:
        parts.append(_charset(wild + marks) + "*+")
    if chars_of:
        block = "(?>" + "|".join(_charset(c) + _charset(c + marks) + "*+" for _, c in sorted(chars_of.items())) + ")"
        if wild:
            parts.append(f"(?:{block}{_charset(wild)}{_charset(wild + marks)}*+)*+")
        parts.append(block + "?")
    return re.compile("".join(parts))


def _charset(chars: list[str]) -> str:
    return "[" + "".join(map(re.escape, sorted(chars))) + "]"
