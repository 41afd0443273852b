"""Map tokens back to the caller's text: byte spans and character spans.

The playground highlights tokens on the text the user typed, so every token needs the span of
input it covers even when normalization or a Metaspace prefix changed the text on the way. This
module composes the three coordinate changes (token bytes within a pre-token → pre-token
characters → normalized text → original text) and leaves encoding itself to the tokenizer.

A byte-level token may end in the middle of a multi-byte character; its character span then
includes that whole character, so neighbouring tokens can share a character. Grouping such
tokens into whole graphemes for display is the web view's job.

Internal: not part of the engine's API (``engine.PUBLIC_MODULES``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Iterable, Sequence
from itertools import accumulate
from typing import NamedTuple


class TokenSpan(NamedTuple):
    """One token with the spans of the original text it covers (end-exclusive).

    A named tuple rather than a dataclass: the playground builds thousands per keystroke.
    """

    id: int
    byte_start: int
    byte_end: int
    char_start: int
    char_end: int
    special: bool = False


class SpanColumns(NamedTuple):
    """The spans of one encoding as columns: token ``k`` is ``ids[k]``, ``byte_starts[k]``, ...

    What ``Tokenizer.encode_span_columns`` returns, for callers that read the spans field by field
    (the playground groups them by their character columns, the JSON API sends ids and offsets):
    building a :class:`TokenSpan` per token only to take the tuples apart again cost them more
    than the encoding itself (GPT-2, 2 KB of English: 420 µs with the spans against 115 µs for
    ``encode``, 2026-11-28). :meth:`rows` gives the same spans as ``encode_with_offsets``.
    """

    ids: list[int]
    byte_starts: list[int]
    byte_ends: list[int]
    char_starts: list[int]
    char_ends: list[int]
    special: list[bool]

    @classmethod
    def empty(cls) -> SpanColumns:
        return cls([], [], [], [], [], [])

    @classmethod
    def of(cls, spans: Iterable[TokenSpan]) -> SpanColumns:
        """The columns of ``spans``."""
        columns = [list(column) for column in zip(*spans)]
        return cls(*columns) if columns else cls.empty()

    def append(self, span: TokenSpan) -> None:
        """Append one span (in place)."""
        for column, value in zip(self, span):
            column.append(value)

    def extend(self, other: SpanColumns) -> None:
        """Append ``other``'s spans to these (in place)."""
        for mine, theirs in zip(self, other):
            mine.extend(theirs)

    def rows(self) -> list[TokenSpan]:
        """One :class:`TokenSpan` per token.

        Each is made as a tuple of that class from its row (what ``TokenSpan._make`` does, without
        its length check), not by ``TokenSpan(...)``, whose named-tuple ``__new__`` is a Python call
        per token: that made the playground's ``encode_with_offsets`` 1.14-1.32x slower on 2 and
        20 KB of English and mixed-script text, against 1.03-1.08x for this (GPT-2, medians of 150
        calls, 2026-11-27, load 3.6).
        """
        return [tuple.__new__(TokenSpan, row) for row in zip(*self)]


def char_byte_offsets(text: str) -> Sequence[int]:
    """UTF-8 byte offset of every character boundary of ``text`` (``len(text) + 1`` entries).

    For ASCII text that is a ``range``, which indexes and bisects as the list would without being
    built (~27 µs for 2 KB, on every keystroke of the playground).
    """
    if text.isascii():
        return range(len(text) + 1)
    return [0, *accumulate(map(len, map(str.encode, text)))]


def token_char_bounds(piece: str, byte_lengths: list[int]) -> list[tuple[int, int]] | None:
    """Character bounds within ``piece`` of consecutive tokens of the given byte lengths.

    Returns None when the lengths do not add up to the piece (e.g. an ``[UNK]`` token), in
    which case the caller gives every token the whole piece. A token that starts or ends inside
    a character is widened to the whole character.
    """
    boundaries = char_byte_offsets(piece)
    if sum(byte_lengths) != boundaries[-1]:
        return None
    bounds = []
    position = 0
    for length in byte_lengths:
        start_char = bisect_right(boundaries, position) - 1
        end = position + length
        end_char = bisect_right(boundaries, end - 1) if length else start_char
        bounds.append((start_char, end_char))
        position = end
    return bounds


def unknown_lengths(piece: str, surfaces: Sequence[bytes], unknown: Sequence[bool]) -> list[int] | None:
    """Byte lengths of consecutive tokens of ``piece`` where some stand for unknown text.

    An unknown token (``<unk>``) stands for input its own bytes do not spell, so its length is
    found from its neighbours: it runs up to where the next token's bytes occur (at least one
    character on), or to the end of the piece. That is exact for models whose known tokens are
    made only of known characters, such as Unigram, which fuses a run of unknown characters into
    one ``<unk>`` between known pieces; before this, one ``<unk>`` made every token of the piece
    cover the whole piece. Returns None when the tokens do not fit the piece (two unknown tokens
    in a row, or a known token whose bytes are not where it stands), for the caller's fallback.
    """
    data = piece.encode("utf-8")
    boundaries = char_byte_offsets(piece)
    lengths: list[int] = []
    position = 0
    for index, (surface, is_unknown) in enumerate(zip(surfaces, unknown)):
        if not is_unknown:
            if not data.startswith(surface, position):
                return None
            lengths.append(len(surface))
            position += len(surface)
            continue
        if position >= len(data):
            return None
        if index + 1 == len(surfaces):
            end = len(data)
        elif unknown[index + 1]:
            return None
        else:
            end = data.find(surfaces[index + 1], boundaries[bisect_right(boundaries, position)])
            if end < 0:
                return None
        lengths.append(end - position)
        position = end
    return lengths if position == len(data) else None
