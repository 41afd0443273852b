"""Where two to four tokenizations of the same text differ.

Pure functions over display spans (``spans.py``), so every tokenization is compared on whole
graphemes. A span "differs" when some other tokenization has no span with exactly the same
start and end; :func:`regions` cuts the text at the boundaries every tokenization shares and
says which pieces are split differently, and how many tokens each tokenization spends on each.
Gaps (text no token covers) are not compared.

Two marks answer two questions (:data:`MARKS`). "all" marks every span cut differently; on
ordinary text most stretches are, since vocabularies rarely agree on every word. "counts" marks
only the stretches where the tokenizations spend a different number of tokens, the differences
that change a count or a bill. :func:`column_figures` gives each tokenization its own numbers:
how many of its tokens are marked, and how many tokens more than the leanest it spends.

Left out: rendering, and encoding itself (the view encodes each tokenizer and calls this).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from webapp.playground.spans import DisplaySpan


@dataclass(frozen=True, slots=True)
class Region:
    """A stretch of text between boundaries all tokenizations share."""

    start: int
    end: int
    same: bool  # every tokenization cuts it the same way, with the same number of tokens
    counts: tuple[int, ...] = ()  # tokens each tokenization spends on this stretch, in order

    @property
    def counts_differ(self) -> bool:
        return len(set(self.counts)) > 1

    def marked(self, mark: str) -> bool:
        """Whether this stretch is marked under ``mark`` ("all" or "counts")."""
        return self.counts_differ if mark == "counts" else not self.same


#: How many tokenizers one comparison takes.
MIN_TOKENIZERS, MAX_TOKENIZERS = 2, 4
MARKS = {"all": "all differing spans", "counts": "only where token counts differ"}


def regions(tokenizations: Sequence[Sequence[DisplaySpan]], length: int) -> list[Region]:
    """Cut ``[0, length)`` at the shared token boundaries; ``same`` if every tokenization agrees there."""
    if not tokenizations:
        return [Region(0, length, True)] if length else []
    boundary_sets = []
    for spans in tokenizations:
        cuts = {0, length}
        for s in spans:
            if s.end > s.start:
                cuts.add(s.start)
                cuts.add(s.end)
        boundary_sets.append(cuts)
    shared = sorted(set.intersection(*boundary_sets))
    union = sorted(set.union(*boundary_sets))
    # Tokens per region: a span lies inside one region (shared cuts are every tokenization's cuts).
    counts = [[0] * max(0, len(shared) - 1) for _ in tokenizations]
    for column, spans in zip(counts, tokenizations):
        for s in spans:
            if s.parts and s.end > s.start:
                column[bisect_right(shared, s.start) - 1] += len(s.parts)
    out = []
    for i, (start, end) in enumerate(zip(shared, shared[1:])):
        # The next boundary of any tokenization after ``start``: inside the region means a split.
        following = union[bisect_right(union, start)]
        spent = tuple(column[i] for column in counts)
        # Same cuts can still hold different tokens: a display span is a whole grapheme, and "é"
        # may be one token in one vocabulary and two bytes in another.
        out.append(Region(start, end, following >= end and len(set(spent)) <= 1, spent))
    return out


def mark_spans(tokenizations: Sequence[Sequence[DisplaySpan]], found: Sequence[Region], mark: str) -> list[set[int]]:
    """For each tokenization, the positions of its spans that lie in a stretch marked under ``mark``."""
    starts = [r.start for r in found]
    out = []
    for spans in tokenizations:
        chosen = set()
        for i, s in enumerate(spans):
            if s.parts and s.end > s.start:
                at = bisect_right(starts, s.start) - 1
                if 0 <= at < len(found) and found[at].marked(mark):
                    chosen.add(i)
        out.append(chosen)
    return out


@dataclass(frozen=True, slots=True)
class ColumnFigures:
    """One tokenization's share of the differences."""

    marked_tokens: int  # its tokens in marked stretches (what is underlined in its column)
    extra_tokens: int  # tokens beyond the leanest tokenization, summed over stretches whose counts differ
    leanest_in: int  # stretches with different counts where it spends the fewest tokens (ties included)


def column_figures(found: Sequence[Region], mark: str, columns: int) -> list[ColumnFigures]:
    """Each tokenization's figures over ``found`` (:func:`regions`), ``columns`` of them."""
    marked, extra, leanest = [0] * columns, [0] * columns, [0] * columns
    for r in found:
        if len(r.counts) != columns:
            continue
        if r.marked(mark):
            for i, n in enumerate(r.counts):
                marked[i] += n
        if r.counts_differ:
            low = min(r.counts)
            for i, n in enumerate(r.counts):
                extra[i] += n - low
                leanest[i] += n == low
    return [ColumnFigures(*figures) for figures in zip(marked, extra, leanest)]


def summary(tokenizations: Sequence[Sequence[DisplaySpan]], length: int,
            found: Sequence[Region] | None = None) -> dict[str, int]:
    """How many regions exist, how many are split differently, and how many spend different counts."""
    found = regions(tokenizations, length) if found is None else found
    differing = [r for r in found if not r.same]
    return {"regions": len(found), "differing": len(differing),
            "differing_chars": sum(r.end - r.start for r in differing),
            "counts_differ": sum(r.counts_differ for r in found)}
