"""Turn a tokenizer's token spans into what the encode view displays.

Pure functions, no Flask. :func:`span_table` groups tokens into display spans that each end
on a whole grapheme (``regex`` ``\\X``): a byte-level token that splits a multi-byte character
(or a character into its combining marks, or an emoji ZWJ sequence) is shown together with its
neighbours, as Tiktokenizer does, so the page never shows ``\uFFFD``. Text no token covers
(whitespace a WordPiece pre-tokenizer drops) becomes a gap. :func:`show_whitespace` adds the
``·`` ``→`` ``↵`` markers, :func:`counts` computes the numbers above the spans.

This is the encode view's hot path (a few thousand tokens per keystroke), so the spans are
columns of numbers (:class:`SpanTable`), grouped in numpy when no token is special
(:func:`grouped_plain`, checked against the step-by-step :func:`grouped`), and a token's
description (vocabulary string, hex bytes, hover line) is memoised per tokenizer. Only the rare
positions inside a grapheme are computed (``graphemes.py``). :func:`group_spans` gives the same
spans as objects, for the views that walk them one by one.

Left out: HTML (``spans_html.py`` escapes everything) and the comparison of tokenizations
(``compare.py``).
"""

from __future__ import annotations

import json
import threading
import weakref
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from itertools import cycle, islice
from operator import lt
from typing import NamedTuple

import numpy as np

from engine import SpanColumns, Tokenizer, TokenSpan
from webapp.playground.graphemes import inside_graphemes

PALETTE_SIZE = 12
_WHITESPACE = str.maketrans({" ": "·", "\t": "→", "\n": "↵\n", "\r": "␍"})
# Slack after the last shown token in which a truncated view still completes its last grapheme.
_TAIL = 256
# Tokens from which grouped_plain's numpy passes beat the step-by-step grouping: their fixed cost
# made 50 tokens take 45 against 9 µs, 400 tokens 82 against 67 µs; they win from ~800 (2026-11-28).
NUMPY_FROM = 800


class TokenPart(NamedTuple):
    """One token inside a display span: its index in the encoding, id, vocabulary string, bytes.

    A named tuple, not a dataclass: one is built per token on every keystroke. ``line`` is the
    token's hover line, memoised with its description; empty means "build it from the fields".
    """

    index: int
    id: int
    token: str
    hex: str
    special: bool
    line: str = ""

    @property
    def title_line(self) -> str:
        return self.line or f"{self.id}  {self.token}  [{self.hex}]"


@dataclass(slots=True)
class DisplaySpan:
    """A run of text shown as one coloured box (or a gap no token covers, when ``parts`` is empty)."""

    start: int
    end: int
    text: str
    parts: list[TokenPart] = field(default_factory=list)
    special: bool = False
    colour: int = 0

    @property
    def is_gap(self) -> bool:
        return not self.parts

    @property
    def indices(self) -> str:
        """The token indices as a space-separated list (what the hover linking matches)."""
        parts = self.parts
        if len(parts) == 1:
            return str(parts[0].index)
        return " ".join(str(p.index) for p in parts)

    @property
    def ids(self) -> str:
        """The token ids as a space-separated list."""
        parts = self.parts
        if len(parts) == 1:
            return str(parts[0].id)
        return " ".join(str(p.id) for p in parts)


# id -> (vocabulary string, hex bytes, hover line, the line as a JSON member), one memo per tokenizer, dropped with it
# (``tokenizers/loaded.py`` keeps at most a few tokenizers). Real text repeats its tokens and a cached
# tokenizer serves many keystrokes, so after the first few requests nearly every id is found
# here. It fills only with the ids shown, about 500 bytes each: ~1 MB for a few thousand ids,
# 20 MB if every one of GPT-2's 50k ids were shown. Threads that race to fill an id compute the
# same tuple, and one dict assignment is atomic.
_Description = tuple[str, str, str, str]
_memos: weakref.WeakKeyDictionary[Tokenizer, dict[int, _Description]] = weakref.WeakKeyDictionary()
_memos_lock = threading.Lock()


def _memo_for(tokenizer: Tokenizer) -> dict[int, _Description]:
    memo = _memos.get(tokenizer)
    if memo is None:
        with _memos_lock:
            memo = _memos.setdefault(tokenizer, {})
    return memo


def _described(tokenizer: Tokenizer, token_id: int, memo: dict[int, _Description]) -> _Description:
    """(vocabulary string, bytes in hex, hover line, ``"<id>":<hover line>`` as JSON) of an id, from
    ``memo`` or made and kept there."""
    found = memo.get(token_id)
    if found is not None:
        return found
    try:
        data = tokenizer.token_bytes(token_id)
    except ValueError:
        data = b""
    token = tokenizer.id_to_token(token_id)
    token = token if token is not None else "?"
    hex_ = data.hex(" ")
    line = f"{token_id}  {token}  [{hex_}]"
    found = memo[token_id] = (token, hex_, line, f'"{token_id}":{json.dumps(line, ensure_ascii=False)}')
    return found


@dataclass(slots=True)
class SpanTable:
    """The display spans of one encoding as columns: what the encode view's hot path reads.

    Span ``k`` covers ``text[starts[k]:ends[k]]`` and shows ``sizes[k]`` tokens from token index
    ``firsts[k]`` on (a gap no token covers has size 0). Columns of plain ints rather than a
    :class:`DisplaySpan` per span: the page's markup needs only these, and building two objects
    per token cost more than the rest of the grouping. :meth:`display_spans` builds the objects
    for the views that walk spans one by one (compare, tests).
    """

    text: str
    starts: list[int]
    ends: list[int]
    firsts: list[int]
    sizes: list[int]
    special: list[bool]  # the span stands alone: a special token, or a token that covers no text
    token_ids: list[int]  # the ids of the shown tokens, by token index
    token_special: list[bool]  # each shown token's own special flag
    colours: list[int]  # the palette's colour of each span (0 for a gap)
    labels: list[str]  # each span's text (a special's name where it covers none)

    def display_spans(self, tokenizer: Tokenizer) -> list[DisplaySpan]:
        """One :class:`DisplaySpan` per span, its tokens described (vocabulary string, bytes, hover line)."""
        memo = _memo_for(tokenizer)
        out = []
        for start, end, first, size, special, colour, label in zip(
                self.starts, self.ends, self.firsts, self.sizes, self.special, self.colours, self.labels):
            parts = []
            for index in range(first, first + size):
                token_id = self.token_ids[index]
                token, hex_, line, _ = _described(tokenizer, token_id, memo)
                parts.append(TokenPart(index, token_id, token, hex_, self.token_special[index], line))
            out.append(DisplaySpan(start, end, label, parts, special, colour))
        return out


def hover_lines_json(tokenizer: Tokenizer, ids: Iterable[int]) -> str:
    """``{"<id>": "<id>  <vocabulary string>  [<bytes in hex>]"}`` for each distinct id, in order of
    first appearance, as compact JSON (``json.dumps(..., ensure_ascii=False, separators=(",", ":"))``).

    Each id's member is memoised already encoded, so an answer joins strings instead of building a
    dict and encoding it again: encoding was half of this on every keystroke.
    """
    memo = _memo_for(tokenizer)
    get = memo.get
    members = []
    for token_id in dict.fromkeys(ids):
        found = get(token_id)
        members.append((found if found is not None else _described(tokenizer, token_id, memo))[3])
    return "{" + ",".join(members) + "}"


_Columns = tuple[list[int], list[int], list[int], list[int], list[bool]]  # starts, ends, firsts, sizes, alone


def span_table(text: str, token_spans: SpanColumns | Sequence[TokenSpan], tokenizer: Tokenizer, *,
               limit: int | None = None, colour_by_id: bool = False) -> SpanTable:
    """Group the first ``limit`` tokens into display spans ending on whole graphemes.

    A token joins the current span while the span's end is inside a grapheme or the token starts
    before that end (tokens that share a character). Special tokens always stand alone; a
    special token the post-processor added (``[CLS]``) covers no text and shows its own name.
    The tokens come as the engine's columns (``Tokenizer.encode_span_columns``) or as spans.
    """
    columns = token_spans if isinstance(token_spans, SpanColumns) else SpanColumns.of(token_spans)
    token_ids, char_starts, char_ends, specials = columns.ids, columns.char_starts, columns.char_ends, columns.special
    truncated = limit is not None and len(token_ids) > limit
    if truncated:
        token_ids, char_starts, char_ends, specials = (
            column[:limit] for column in (token_ids, char_starts, char_ends, specials))
    # Graphemes are looked at only in the text that is shown (plus slack for the last cluster).
    stop = min(len(text), char_ends[-1] + _TAIL) if truncated and token_ids else len(text)
    inside = inside_graphemes(text, stop)
    text_end = stop if truncated else len(text)  # where a trailing gap would end (none when truncated)
    if token_ids and True not in specials and all(map(lt, char_starts, char_ends)):
        found = grouped_plain(char_starts, char_ends, inside, stop, trailing=not truncated, text_end=text_end)
    else:
        found = grouped(char_starts, char_ends, specials, inside, stop, trailing=not truncated, text_end=text_end)
    starts, ends, firsts, sizes, alone = found
    labels = [text[start:end] for start, end in zip(starts, ends)]
    if True in alone:
        memo = _memo_for(tokenizer)
        for k, (special, start, end) in enumerate(zip(alone, starts, ends)):
            if special and start == end:  # a token that covers no text shows its own name
                labels[k] = _described(tokenizer, token_ids[firsts[k]], memo)[0]
    # Token spans take the palette's colours in turn (or by their first id); gaps have none.
    if not colour_by_id and 0 not in sizes:  # no gaps (most texts): the palette in turn, no numpy
        colours = list(islice(cycle(range(PALETTE_SIZE)), len(sizes)))
    else:
        has_tokens = np.array(sizes, dtype=np.int64) > 0
        if colour_by_id:
            palette = np.array(token_ids + [0], dtype=np.int64)[firsts] if firsts else np.zeros(0, dtype=np.int64)
        else:
            palette = np.cumsum(has_tokens) - 1
        colours = np.where(has_tokens, palette % PALETTE_SIZE, 0).tolist()
    return SpanTable(text, starts, ends, firsts, sizes, alone, token_ids, specials, colours, labels)


def grouped(char_starts: Sequence[int], char_ends: Sequence[int], specials: Sequence[bool], inside: set[int],
            stop: int, *, trailing: bool, text_end: int) -> _Columns:
    """The spans' columns, token by token: any tokens (special ones, tokens that cover no text)."""
    rows: list[tuple[int, int, int, int, bool]] = []  # (start, end, first token, tokens, alone) per span
    emit = rows.append
    open_first = -1  # the first token of the open span; -1 when no span is open
    open_start = open_end = 0  # the open span's start and (token) end
    position = 0  # end of what has been emitted so far
    for index, (char_start, char_end, special) in enumerate(zip(char_starts, char_ends, specials)):
        if not special and char_start < char_end:
            if open_first >= 0:
                if char_start < open_end or open_end in inside:
                    if char_end > open_end:
                        open_end = char_end
                    continue
                # Close the open span (its end is a boundary: it was just checked).
                emit((open_start, open_end, open_first, index - open_first, False))
                position = open_end
            if char_start > position:
                emit((position, char_start, index, 0, False))  # a gap no token covers
                position = char_start
            open_first, open_start = index, position
            open_end = char_end if char_end > position else position
            continue
        if open_first >= 0:
            position = _boundary_after(open_end, inside, stop)
            emit((open_start, position, open_first, index - open_first, False))
            open_first = -1
        if char_start > position:
            emit((position, char_start, index, 0, False))
        emit((char_start, char_end, index, 1, True))
        position = max(position, char_end)
    if open_first >= 0:
        position = _boundary_after(open_end, inside, stop)
        emit((open_start, position, open_first, len(char_starts) - open_first, False))
    if trailing and position < text_end:
        emit((position, text_end, len(char_starts), 0, False))
    return tuple(list(column) for column in zip(*rows)) if rows else ([], [], [], [], [])  # type: ignore[return-value]


def grouped_plain(char_starts: list[int], char_ends: list[int], inside: set[int], stop: int, *,
                  trailing: bool, text_end: int) -> _Columns:
    """:func:`grouped` for what nearly every text is, ordinary tokens that each cover some text,
    in a few numpy passes instead of a Python step per token.

    With no special token, the open span's end before token ``i`` is the furthest end of the
    tokens before it (a running maximum), so token ``i`` joins the span before it exactly when it
    starts before that end or that end is inside a grapheme. A span starts at its first token; the
    text between one span's end and the next one's start is a gap; the last span is carried to the
    next grapheme boundary.

    When each token starts where the one before ends and none of those ends is inside a grapheme
    (byte-level BPE on text without multi-character graphemes: most of what is typed), no token
    joins another, and the spans are the tokens themselves: two list comparisons find that, and
    the numpy passes, ~90 µs for 600 tokens, are skipped (2026-11-28). Otherwise fewer than
    :data:`NUMPY_FROM` tokens go step by step (:func:`grouped`), which is faster below that.
    """
    count = len(char_starts)
    if char_starts[1:] == char_ends[:-1] and (not inside or inside.isdisjoint(char_ends[:-1])):
        out_starts, out_ends = list(char_starts), list(char_ends)
        out_firsts, out_sizes = list(range(count)), [1] * count
        out_ends[-1] = last = _boundary_after(out_ends[-1], inside, stop)
        if out_starts[0] > 0:  # text before the first token
            out_starts.insert(0, 0)
            out_ends.insert(0, char_starts[0])
            out_firsts.insert(0, 0)
            out_sizes.insert(0, 0)
    elif count < NUMPY_FROM:
        return grouped(char_starts, char_ends, [False] * count, inside, stop, trailing=trailing, text_end=text_end)
    else:
        out_starts, out_ends, out_firsts, out_sizes, last = _grouped_numpy(char_starts, char_ends, inside, stop)
    if trailing and last < text_end:
        out_starts.append(last)
        out_ends.append(text_end)
        out_firsts.append(count)
        out_sizes.append(0)
    return out_starts, out_ends, out_firsts, out_sizes, [False] * len(out_starts)


def _grouped_numpy(char_starts: list[int], char_ends: list[int], inside: set[int], stop: int
                   ) -> tuple[list[int], list[int], list[int], list[int], int]:
    """:func:`grouped_plain`'s spans and the gaps before them, in numpy, and the last span's end."""
    count = len(char_starts)
    starts, ends = np.array(char_starts, dtype=np.int64), np.array(char_ends, dtype=np.int64)
    reach = np.maximum.accumulate(ends)  # the open span's end after each token
    joins = starts[1:] < reach[:-1]
    if inside:
        joins |= np.isin(reach[:-1], np.fromiter(inside, np.int64, len(inside)))
    firsts = np.flatnonzero(np.concatenate(([True], ~joins)))
    sizes = np.diff(np.append(firsts, count))
    span_starts = starts[firsts]
    span_ends = reach[np.append(firsts[1:] - 1, count - 1)]
    span_ends[-1] = _boundary_after(int(span_ends[-1]), inside, stop)
    gap_starts = np.concatenate(([0], span_ends[:-1]))
    # Each span, preceded by its gap where there is one: two rows per span, the empty gaps dropped.
    keep = np.column_stack([span_starts > gap_starts, np.ones(len(firsts), dtype=bool)]).ravel()
    out_starts = np.column_stack([gap_starts, span_starts]).ravel()[keep].tolist()
    out_ends = np.column_stack([span_starts, span_ends]).ravel()[keep].tolist()
    out_firsts = np.column_stack([firsts, firsts]).ravel()[keep].tolist()
    out_sizes = np.column_stack([np.zeros_like(sizes), sizes]).ravel()[keep].tolist()
    return out_starts, out_ends, out_firsts, out_sizes, int(span_ends[-1])


def group_spans(text: str, token_spans: SpanColumns | Sequence[TokenSpan], tokenizer: Tokenizer, *,
                limit: int | None = None, colour_by_id: bool = False) -> list[DisplaySpan]:
    """:func:`span_table` as one :class:`DisplaySpan` per span."""
    return span_table(text, token_spans, tokenizer, limit=limit, colour_by_id=colour_by_id).display_spans(tokenizer)


def _boundary_after(end: int, inside: set[int], stop: int) -> int:
    """``end`` moved forward to the next grapheme boundary (no further than ``stop``)."""
    while end < stop and end in inside:
        end += 1
    return end


def show_whitespace(text: str) -> str:
    """``text`` with spaces as ``·``, tabs as ``→`` and newlines as ``↵`` (still followed by a newline)."""
    return text.replace("\r\n", "\n").translate(_WHITESPACE)


@dataclass(frozen=True, slots=True)
class Counts:
    """The numbers shown above the spans."""

    tokens: int
    chars: int
    bytes: int
    unk: int

    @property
    def chars_per_token(self) -> float:
        return self.chars / self.tokens if self.tokens else 0.0

    @property
    def bytes_per_token(self) -> float:
        return self.bytes / self.tokens if self.tokens else 0.0

    def as_dict(self) -> dict[str, float | int]:
        return {"tokens": self.tokens, "chars": self.chars, "bytes": self.bytes, "unk": self.unk,
                "chars_per_token": round(self.chars_per_token, 3),
                "bytes_per_token": round(self.bytes_per_token, 3)}


def counts(text: str, ids: Sequence[int], unk_id: int | None) -> Counts:
    """Tokens, characters, UTF-8 bytes and unknown tokens of one encoding."""
    unk = sum(1 for i in ids if i == unk_id) if unk_id is not None else 0
    return Counts(len(ids), len(text), len(text.encode("utf-8", "surrogatepass")), unk)
