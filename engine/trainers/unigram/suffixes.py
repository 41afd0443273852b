"""The seed's right-branching substrings, counted on the sorted suffixes of the segments.

Every substring of a segment is the start of one of the segment's suffixes, so after sorting
all suffixes (cut to ``max_piece_length + 1`` characters), the occurrences of any substring of
length L are one run of neighbouring rows: the rows whose common prefix with the row before is
shorter than L start a new run. One sort then gives every length's counts, each a sum over
runs (differences of a cumulative sum), with no substring made until the winners are known;
this is sentencepiece's own method (a suffix array), here on a table of segments with their
counts as row weights (a segment listed twice simply adds its rows twice).

A substring is *right-branching* when no one-character extension occurs as often as it does.
Its rows all extend it unless the segment ends there, so the test is on its run: it branches
when some row ends at length L (the segment ends), or some row after the first differs from
the one before at position L (two different next characters).

Order: characters become ids in code point order with 0 for "past the end", so sorted rows are
in string order, and a substring's first row ranks it among all substrings: ``"ab"`` and
``"abc"`` share a first row and the shorter is the smaller string, as in Python. The ranking
(count × length, descending; ties to the smaller string) is therefore a sort of numbers.

Memory: one row per segment character, ``max_piece_length + 1`` ids wide (2 bytes each for up
to 65,535 distinct characters), a small fraction of what ``bounds.check_memory`` allows.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.trainers.packed import PackedStrings

__all__ = ["first_char_cuts", "top_substrings"]

BITS_PER_WORD = 64


def top_substrings(segments: PackedStrings, counts: Sequence[int] | np.ndarray, max_piece_length: int, want: int, *,
                   no_last: str | None = None, first: tuple[int, int] | None = None) -> tuple[list[str], list[int]]:
    """The best ``want`` right-branching substrings of 2 to ``max_piece_length`` characters that
    occur more than once (weighting each segment by its count), none ending with ``no_last``;
    with ``first``, only those whose first character's code point is in ``[first[0], first[1])``.

    Returns the pieces and their negated scores (``-count × length``), best first, ties in
    string order.
    """
    if want <= 0 or max_piece_length < 2 or not len(segments):
        return [], []
    width = max_piece_length + 1  # one more than the longest piece: its extensions decide branching
    rows = _suffix_rows(segments, counts, width, first)
    if rows is None:
        return [], []
    ids, lengths, weights, origin, alphabet = rows
    order = _sorted_order(ids)
    ids, lengths, weights, origin = ids[:, order], lengths[order], weights[order], origin[:, order]
    common = _common_prefix(ids)
    last_id = _char_id(no_last, alphabet) if no_last is not None else None
    scores, heads, sizes = [], [], []
    for size in range(2, max_piece_length + 1):
        bounds = np.flatnonzero(common < size)  # where each run of rows sharing ``size`` ids starts
        starts = bounds[lengths[bounds] >= size]  # a run of rows shorter than ``size`` is no substring
        if not len(starts):
            break
        ends = np.append(bounds, len(lengths))[np.searchsorted(bounds, starts) + 1]
        total = _run_sums(weights, starts, ends)
        branch = (lengths == size) | (common == size)  # a row that ends here, or a new next character
        branch[starts] = lengths[starts] == size  # a run's first row differs from the one before anyway
        branching = _run_sums(branch.astype(np.int64), starts, ends) > 0
        keep = (total > 1) & branching
        if last_id is not None:
            keep &= ids[size - 1, starts] != last_id
        scores.append(total[keep] * size)
        heads.append(starts[keep])  # each substring's first row
        sizes.append(np.full(int(keep.sum()), size, dtype=np.int64))
    if not scores:
        return [], []
    score, head, size = (np.concatenate(x) for x in (scores, heads, sizes))
    if len(score) > want:  # only the pieces that can make the cut are sorted
        floor = np.partition(score, len(score) - want)[len(score) - want]
        chosen = np.flatnonzero(score >= floor)
        score, head, size = score[chosen], head[chosen], size[chosen]
    best = np.lexsort((size, head, -score))[:want]  # score descending, then string order
    at = segments.starts()[origin[0, head[best]]] + origin[1, head[best]]  # where each piece starts in the text
    text = segments.text()
    pieces = [text[a:a + n] for a, n in zip(at.tolist(), size[best].tolist())]
    return pieces, (-score[best]).tolist()


def first_char_cuts(segments: PackedStrings, parts: int) -> list[tuple[int, int]]:
    """Up to ``parts`` ranges of code points, in order, with about as many suffixes starting in
    each: a substring's occurrences all start with its first character, so each range's
    substrings are counted and ranked on their own (in a worker each), and the rankings, taken
    in range order, are already in string order between ranges."""
    lens, codes = segments.lengths, segments.codes
    ends = np.cumsum(lens)
    starts = np.ones(len(codes), bool)  # a suffix starts at every character but a segment's last
    starts[ends[lens > 0] - 1] = False
    chars, per_char = np.unique(codes[starts], return_counts=True)
    if not len(chars):
        return [(0, 0x110000)]
    share = np.cumsum(per_char) / per_char.sum()
    cut_at = np.unique(np.searchsorted(share, np.arange(1, parts) / parts, side="right"))
    cut_at = cut_at[(cut_at > 0) & (cut_at < len(chars))]
    bounds = [0, *chars[cut_at].tolist(), 0x110000]
    return list(zip(bounds, bounds[1:]))


def _suffix_rows(segments: PackedStrings, counts: Sequence[int] | np.ndarray, width: int,
                 first: tuple[int, int] | None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Every suffix of every segment but its last character (starting in ``first``'s code points,
    if given): its first ``width`` character ids (one column per suffix, 0 past its end), its
    length (at most ``width``), its segment's count, where it comes from (segment number,
    start), and the characters (code points) by id - 1."""
    lens, codes = segments.lengths, segments.codes
    # The characters in code point order, and each one's id (its rank, from 1): a scatter and a
    # gather over the code points, where np.unique sorts them all (en_25M: 0.01 s, not 0.11 s,
    # in every worker, since each reads every segment).
    seen = np.zeros(0x110000, dtype=bool)
    seen[codes] = True
    alphabet = np.flatnonzero(seen)
    dtype = np.uint16 if len(alphabet) < (1 << 16) else np.uint32
    char_ids = np.cumsum(seen, dtype=np.uint32).astype(dtype)[codes]
    seg_start = np.concatenate(([0], np.cumsum(lens)[:-1]))
    segment = np.repeat(np.arange(len(segments)), lens)
    position = np.arange(len(codes)) - seg_start[segment]
    left = lens[segment] - position  # characters from here to the segment's end
    keep = left >= 2  # a suffix of one character holds no piece
    if first is not None:
        keep &= (codes >= first[0]) & (codes < first[1])
    rows = np.flatnonzero(keep)
    if not len(rows):
        return None
    left = left[rows]
    ids = np.zeros((width, len(rows)), dtype=dtype)
    for j in range(width):
        inside = left > j
        ids[j, inside] = char_ids[rows[inside] + j]
    weights = np.asarray(counts, dtype=np.int64)[segment[rows]]
    return ids, np.minimum(left, width), weights, np.stack((segment[rows], position[rows])), alphabet


def _sorted_order(ids: np.ndarray) -> np.ndarray:
    """The rows' order by their ids, first column first: the columns are packed into 64-bit words
    (as many ids per word as fit) and sorted with ``np.lexsort``, last key first."""
    bits = max(1, int(ids.max()).bit_length())
    per_word = max(1, BITS_PER_WORD // bits)
    keys = []
    for at in range(0, ids.shape[0], per_word):
        word = np.zeros(ids.shape[1], dtype=np.uint64)
        for j in range(at, min(at + per_word, ids.shape[0])):
            word |= ids[j].astype(np.uint64) << np.uint64(bits * (per_word - 1 - (j - at)))
        keys.append(word)
    return np.lexsort(keys[::-1])


def _common_prefix(ids: np.ndarray) -> np.ndarray:
    """For each sorted row, how many leading ids it shares with the row before (0 for the first)."""
    width, n = ids.shape
    common = np.zeros(n, dtype=np.int64)
    same = np.ones(n - 1, dtype=bool)
    for j in range(width):
        same &= ids[j, 1:] == ids[j, :-1]
        common[1:] += same
    return common


def _run_sums(values: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """The sum of ``values[a:b]`` for each run ``[a, b)``."""
    total = np.concatenate(([0], np.cumsum(values)))
    return total[ends] - total[starts]


def _char_id(char: str, alphabet: np.ndarray) -> int:
    """``char``'s id (0, matching no character, where the segments never have it)."""
    at = int(np.searchsorted(alphabet, ord(char)))
    return at + 1 if at < len(alphabet) and alphabet[at] == ord(char) else 0
