"""Where a text may not be cut: the character positions inside a multi-character grapheme.

The encode view must end every span on a whole grapheme (``regex`` ``\\X``, extended grapheme
clusters). Running ``\\X`` over a whole 10 KB input and collecting ten thousand boundaries cost
more than the rest of the span grouping, yet on real text almost every position is a boundary.
So :func:`inside_graphemes` returns the few positions that are *not* boundaries, and looks at
the text with ``\\X`` only around the characters that can form a multi-character cluster.

Why that is enough: every rule that joins two characters into one cluster (UAX #29, GB3 to
GB13) involves a non-ASCII character on one side of the join, except ``CR × LF``. So a position
between two ASCII characters that are not ``\\r\\n`` is always a boundary, and so is every
position just after ``\\n`` (GB4). Segmenting forward from any boundary gives the same clusters
as segmenting from the start of the text, so each uncertain stretch is segmented alone,
starting from the nearest position known to be a boundary.

:func:`inside_graphemes_reference` is the slow, obviously correct version (``\\X`` over the
whole text); ``tests/webapp/playground/test_graphemes.py`` checks the two agree. Left out: what the
boundaries are used for (``spans.py``).
"""

from __future__ import annotations

import regex

_GRAPHEME = regex.compile(r"\X")
# What can be part of a multi-character cluster: a run of non-ASCII characters, or CR LF.
_UNSURE = regex.compile(r"[^\x00-\x7f]+|\r\n")


def _surely_boundary(text: str, position: int) -> bool:
    """Whether ``position`` is a grapheme boundary for a reason that needs no segmentation."""
    if position <= 0 or position >= len(text):
        return True
    before, after = text[position - 1], text[position]
    if before == "\n":
        return True
    return before < "\x80" and after < "\x80" and not (before == "\r" and after == "\n")


def inside_graphemes(text: str, endpos: int | None = None) -> set[int]:
    """Positions in ``text`` that fall inside a grapheme cluster (are not boundaries).

    Only clusters that start before ``endpos`` are guaranteed to be looked at (the encode
    view passes the end of what it shows, so a 200 KB input costs no more than its first part).
    """
    inside: set[int] = set()
    if text.isascii() and "\r\n" not in text:  # nothing to segment: saves ~45 µs of scanning 2 KB
        return inside
    limit = len(text) if endpos is None else min(endpos, len(text))
    scanned = 0  # a known boundary: the end of the last cluster segmented
    for run in _UNSURE.finditer(text, 0, limit):
        run_start, run_end = run.span()
        if run_end <= scanned:
            continue
        start = max(run_start, scanned)
        while start > scanned and not _surely_boundary(text, start):
            start -= 1
        for cluster in _GRAPHEME.finditer(text, start):
            first, last = cluster.span()
            if last - first > 1:
                inside.update(range(first + 1, last))
            scanned = last
            if last >= run_end:
                break
    return inside


def inside_graphemes_reference(text: str) -> set[int]:
    """The same positions found the obvious way: segment the whole text with ``\\X``."""
    inside: set[int] = set()
    for cluster in _GRAPHEME.finditer(text):
        inside.update(range(cluster.start() + 1, cluster.end()))
    return inside
