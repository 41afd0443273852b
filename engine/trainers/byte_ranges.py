"""Cut corpus files into byte ranges at document boundaries, and count one range: a cluster's unit of work.

A Dask cluster (``trainers/distributed.py``) cannot stream one reader's chunks to its workers the
way ``counting.py`` feeds its local processes: each worker reads its own part of the files from a
shared folder. :func:`plan_ranges` therefore finds the cuts by seeking, without reading the whole
corpus: near every ``step`` bytes it reads a small window and asks ``corpus._cut``, the very rule
the local reader uses, where a chunk may end (after a special token, or at a safe cut inside an
over-long document). :func:`count_range` then reads one range, cuts it the same way into chunks
of about ``max_chunk_chars`` bytes, and counts them with :class:`tally.Tally`. Every cut is
one where pre-tokenization restarts anyway, so the counts of the ranges add up to exactly the
local path's counts.

One subtlety: a special token found by scanning from the middle of a file is a token the
whole-file scan finds too only when no token can overlap another (no suffix of one is a prefix
of one, none lies inside another). For a set of special tokens that can overlap, and for a split
that allows no cut at all, every file is one range. Safe cuts are not used when a special token
contains whitespace, which a cut could otherwise fall inside.

Left out: Dask itself (``distributed.py``), and how the counts are added up.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

import codecs
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from engine.errors import FormatError, TrainingCancelled
from engine.trainers.corpus import _cut, special_pattern
from engine.trainers.tally import Tally, TallyArgs

MIN_RANGE_BYTES = 1 << 20
MAX_RANGE_BYTES = 64 << 20
"""~3 s of counting on one core: fewer, bigger ranges mean fewer tasks; the tail uses smaller ones."""
TAIL_SHARE = 2
"""A range is at most 1/TAIL_SHARE of the bytes left per counter (guided self-scheduling)."""
WINDOW_BYTES = 64 << 10
"""How much is read at a time after a wanted cut to find a document boundary near it."""

Step = int | Callable[[int], int]
"""A range size in bytes, or how big the next range is given the bytes still to plan."""


@dataclass(frozen=True)
class ByteRange:
    """Bytes ``[start, stop)`` of one corpus file; both ends lie at document boundaries."""

    path: str
    start: int
    stop: int

    @property
    def size(self) -> int:
        return self.stop - self.start


def overlap_free(special_tokens: Sequence[str]) -> bool:
    """Whether no special token can overlap another (or itself) in any text.

    Then the matches of the tokens in a text do not depend on where a scan starts, so a cut after
    a match found from the middle of a file is a cut the whole-file scan would make too. Two
    occurrences can overlap when a proper suffix of one token is a proper prefix of one, or when
    one token lies inside another.
    """
    tokens = set(special_tokens)
    prefixes = {token[:k] for token in tokens for k in range(1, len(token))}
    if tokens & prefixes or any(token[k:] in prefixes for token in tokens for k in range(1, len(token))):
        return False
    pattern = special_pattern(tokens)
    # A match that starts after a token's first character is another token inside it.
    return pattern is None or not any(match.start() > 0 for token in tokens
                                      for match in pattern.finditer(token, overlapped=True))


class _Boundaries:
    """Finds document boundaries in one open file, under one set of special tokens and split rule."""

    def __init__(self, stream: BinaryIO, path: str, special_tokens: Sequence[str], safe_cuts: bool) -> None:
        self.stream, self.path = stream, path
        self.specials = special_pattern(special_tokens)
        self.longest = max((len(t) for t in special_tokens), default=1)
        # A safe cut must not land inside a special token, which only one with whitespace could contain.
        self.safe_cuts = safe_cuts and not any(char.isspace() for token in special_tokens for char in token)
        self.possible = overlap_free(special_tokens) and (self.specials is not None or self.safe_cuts)

    def after(self, target: int, limit: int, window: int) -> int:
        """The byte offset of a boundary in ``(target, limit]`` within about ``window`` bytes of
        ``target`` if there is one there (else the next one, or ``limit`` if none)."""
        if not self.possible:
            return limit
        pos = target
        while pos < limit:
            self.stream.seek(pos)
            block = self.stream.read(min(window, limit - pos))
            skip = _continuation_bytes(block)  # the window may begin inside a character
            text = decode(block[skip:], self.path, pos + skip, final=pos + len(block) >= limit)
            end = _cut(text, 0, self.specials, self.longest, self.safe_cuts, len(text))
            if end:
                return pos + skip + len(text[:end].encode())
            if pos + len(block) >= limit:
                return limit
            # _cut searches the window's second half (safe cuts) and all but its end (special
            # tokens), so the next window starts halfway through this one.
            pos += skip + max(1, len(text[: len(text) // 2].encode()))
        return limit

    def ranges(self, start: int, stop: int, step: Step) -> Iterator[tuple[int, int]]:
        """``[start, stop)`` as consecutive ranges of about ``step`` bytes, cut at boundaries
        (a callable ``step`` is asked each range's size, given the bytes left before ``stop``)."""
        while start < stop:
            size = max(1, step(stop - start) if callable(step) else step)
            # The window holds a few of the longest special tokens even at a tiny step (tests use them).
            window = max(min(WINDOW_BYTES, size), 8 * self.longest, 64)
            end = self.after(start + size, stop, window) if start + size < stop else stop
            yield start, end
            start = end


def plan_ranges(files: Sequence[str | Path], special_tokens: Sequence[str], *, safe_cuts: bool,
                step: Step) -> list[ByteRange]:
    """The files as ranges of about ``step`` bytes each, cut where the local reader may cut a chunk.

    ``step`` is a size, or a callable given the bytes not yet planned (over all the files) that
    returns the next range's size: ``distributed.py`` shrinks the ranges towards the end. An
    empty file has no range; a file without boundaries is one range however long it is.
    Raises :class:`FormatError` if a window read to find a cut is not UTF-8.
    """
    if not callable(step) and step < 1:
        raise ValueError(f"step must be at least 1 byte, not {step}")
    sizes = [os.path.getsize(path) for path in files]
    later = sum(sizes)  # bytes of the files after the current one, then of the current one too
    ranges: list[ByteRange] = []
    for path, size in zip(files, sizes, strict=True):
        name = str(path)
        later -= size
        left = step if not callable(step) else functools.partial(_over_all, step, later)
        with open(name, "rb") as stream:
            bounds = _Boundaries(stream, name, special_tokens, safe_cuts)
            ranges += [ByteRange(name, a, b) for a, b in bounds.ranges(0, size, left)]
    return ranges


def guided_range_bytes(counters: int, left: int) -> int:
    """The next range's size when ``left`` bytes remain for ``counters`` processes or threads: at
    most a ``TAIL_SHARE``-th of what each has left, between ``MIN_RANGE_BYTES`` and
    ``MAX_RANGE_BYTES``, so the ranges shrink towards the end and every counter finishes within a
    small range of the others (with 16 equal ranges of 66 MB, one Dask thread idled for seconds
    while another ended)."""
    return min(MAX_RANGE_BYTES, max(MIN_RANGE_BYTES, left // (TAIL_SHARE * counters)))


def _over_all(step: Callable[[int], int], later: int, left_in_file: int) -> int:
    """``step`` asked with the bytes left in every file, not only the current one."""
    return step(left_in_file + later)


def count_range(part: ByteRange, tally_args: TallyArgs, *, safe_cuts: bool, max_chunk_chars: int,
                stopped: Callable[[], bool] | None = None) -> dict[str, int]:
    """Count the pre-tokens of one range: ``{pre_token: occurrences}`` (see :func:`tally_range`)."""
    tally = Tally(*tally_args)
    tally_range(tally, part, safe_cuts=safe_cuts, max_chunk_chars=max_chunk_chars, stopped=stopped)
    return tally.result()


def tally_range(tally: Tally, part: ByteRange, *, safe_cuts: bool, max_chunk_chars: int,
                stopped: Callable[[], bool] | None = None) -> None:
    """Add the pre-tokens of one range to ``tally`` (built with the special tokens it is cut at).

    The range is read in chunks of about ``max_chunk_chars`` bytes, cut as :func:`plan_ranges`
    cuts, so no more than one chunk (or one uncuttable document) is held at a time. ``stopped``
    is asked after each chunk; when it says so, :class:`TrainingCancelled` ends the count.
    """
    with open(part.path, "rb") as stream:
        bounds = _Boundaries(stream, part.path, tally.special_tokens, safe_cuts)
        for a, b in bounds.ranges(part.start, part.stop, max_chunk_chars):
            stream.seek(a)
            tally.add(decode(stream.read(b - a), part.path, a, final=True))
            if stopped is not None and stopped():
                raise TrainingCancelled("Training was cancelled.")


def decode(data: bytes, path: str, offset: int, *, final: bool) -> str:
    """UTF-8 text of ``data`` read at byte ``offset`` of ``path``; unless ``final``, an incomplete
    character at the end is left out. Raises :class:`FormatError` as the local reader does."""
    try:
        return codecs.getincrementaldecoder("utf-8")().decode(data, final=final)
    except UnicodeDecodeError as exc:
        raise FormatError(
            f"The corpus is not UTF-8 text (byte {offset + exc.start} cannot be decoded); convert it to UTF-8 first.",
            source=path,
        ) from None


def _continuation_bytes(block: bytes) -> int:
    """How many bytes at the start of ``block`` continue a character begun before it (0 to 3)."""
    skip = 0
    while skip < min(3, len(block)) and 0x80 <= block[skip] < 0xC0:
        skip += 1
    return skip

