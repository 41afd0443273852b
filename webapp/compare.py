"""Where two to four tokenizations of the same text differ.

Pure functions over display spans (``spans.py``), so every tokenization is compared on whole
graphemes. A span "differs" when some other tokenization has no span with exactly the same
start and end; :func:`regions` cuts the text at the boundaries every tokenization shares and
says which pieces are split differently. Gaps (text no token covers) are not compared.

Left out: rendering, and encoding itself (the view encodes each tokenizer and calls this).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from dataclasses import dataclass

from webapp.spans import DisplaySpan


def token_extents(spans: Sequence[DisplaySpan]) -> set[tuple[int, int]]:
    """The (start, end) of every token span that covers text."""
    return {(s.start, s.end) for s in spans if s.parts and s.end > s.start}


def mark_differences(tokenizations: Sequence[Sequence[DisplaySpan]]) -> list[set[int]]:
    """For each tokenization, the positions (in its span list) of the spans that differ."""
    extents = [token_extents(spans) for spans in tokenizations]
    shared = set.intersection(*extents) if extents else set()
    return [
        {i for i, s in enumerate(spans) if s.parts and s.end > s.start and (s.start, s.end) not in shared}
        for spans in tokenizations
    ]


@dataclass(frozen=True, slots=True)
class Region:
    """A stretch of text between boundaries all tokenizations share."""

    start: int
    end: int
    same: bool


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
    out = []
    for start, end in zip(shared, shared[1:]):
        # The next boundary of any tokenization after ``start``: inside the region means a split.
        following = union[bisect_right(union, start)]
        out.append(Region(start, end, following >= end))
    return out


def summary(tokenizations: Sequence[Sequence[DisplaySpan]], length: int) -> dict[str, int]:
    """How many regions exist and how many are split differently."""
    found = regions(tokenizations, length)
    differing = [r for r in found if not r.same]
    return {"regions": len(found), "differing": len(differing),
            "differing_chars": sum(r.end - r.start for r in differing)}
