"""Turn a tokenizer's token spans into what the encode view displays.

Pure functions, no Flask. :func:`group_spans` groups tokens into display spans that each end
on a whole grapheme (``regex`` ``\\X``): a byte-level token that splits a multi-byte character
(or a character into its combining marks, or an emoji ZWJ sequence) is shown together with its
neighbours, as Tiktokenizer does, so the page never shows ``\uFFFD``. Text no token covers
(whitespace a WordPiece pre-tokenizer drops) becomes a gap. :func:`show_whitespace` adds the
``·`` ``→`` ``↵`` markers, :func:`counts` computes the numbers above the spans.

This is the encode view's hot path (a few thousand tokens per keystroke), so it is written for
the common case: a token that starts where the last one ended, on a grapheme boundary, and
whose description (vocabulary string, hex bytes, hover line) is already memoised for its
tokenizer. Only the rare positions inside a grapheme are computed (``graphemes.py``).

Left out: HTML (``spans_html.py`` escapes everything) and the comparison of tokenizations
(``compare.py``).
"""

from __future__ import annotations

import functools
import threading
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from engine import Tokenizer, TokenSpan
from webapp.playground.graphemes import inside_graphemes

PALETTE_SIZE = 12
_WHITESPACE = str.maketrans({" ": "·", "\t": "→", "\n": "↵\n", "\r": "␍"})
# Slack after the last shown token in which a truncated view still completes its last grapheme.
_TAIL = 256


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


# Builds a TokenPart from one tuple without the Python-level ``__new__`` (a frame per token).
_new_part = functools.partial(tuple.__new__, TokenPart)


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


# id -> (vocabulary string, hex bytes, hover line), one memo per tokenizer, dropped with it
# (``tokenizers/loaded.py`` keeps at most a few tokenizers). Real text repeats its tokens and a cached
# tokenizer serves many keystrokes, so after the first few requests nearly every id is found
# here. It fills only with the ids shown, about 400 bytes each: ~1 MB for a few thousand ids,
# 20 MB if every one of GPT-2's 50k ids were shown. Threads that race to fill an id compute the
# same tuple, and one dict assignment is atomic.
_Description = tuple[str, str, str]
_memos: weakref.WeakKeyDictionary[Tokenizer, dict[int, _Description]] = weakref.WeakKeyDictionary()
_memos_lock = threading.Lock()


def _memo_for(tokenizer: Tokenizer) -> dict[int, _Description]:
    memo = _memos.get(tokenizer)
    if memo is None:
        with _memos_lock:
            memo = _memos.setdefault(tokenizer, {})
    return memo


def _describe(tokenizer: Tokenizer, token_id: int, memo: dict[int, _Description]) -> _Description:
    """(vocabulary string, bytes in hex, hover line) of an id, stored in ``memo``."""
    try:
        data = tokenizer.token_bytes(token_id)
    except ValueError:
        data = b""
    token = tokenizer.id_to_token(token_id)
    token = token if token is not None else "?"
    hex_ = data.hex(" ")
    found = memo[token_id] = (token, hex_, f"{token_id}  {token}  [{hex_}]")
    return found


def group_spans(text: str, token_spans: Sequence[TokenSpan], tokenizer: Tokenizer, *,
                limit: int | None = None, colour_by_id: bool = False) -> list[DisplaySpan]:
    """Group the first ``limit`` tokens into display spans ending on whole graphemes.

    A token joins the current span while the span's end is inside a grapheme or the token starts
    before that end (tokens that share a character). Special tokens always stand alone; a
    special token the post-processor added (``[CLS]``) covers no text and shows its own name.
    """
    truncated = limit is not None and len(token_spans) > limit
    shown = token_spans[:limit] if truncated else token_spans
    # Graphemes are looked at only in the text that is shown (plus slack for the last cluster).
    stop = min(len(text), shown[-1].char_end + _TAIL) if truncated and shown else len(text)
    inside = inside_graphemes(text, stop)
    memo = _memo_for(tokenizer)
    out: list[DisplaySpan] = []
    append = out.append
    parts: list[TokenPart] | None = None  # the open span: its parts, start and (token) end
    open_start = open_end = 0
    position = 0  # end of what has been emitted so far
    colour = 0  # spans with tokens so far, for the palette

    for index, (token_id, _, _, char_start, char_end, special) in enumerate(shown):
        described = memo.get(token_id) or _describe(tokenizer, token_id, memo)
        part = _new_part((index, token_id, described[0], described[1], special, described[2]))
        if not special and char_start < char_end:
            if parts is not None:
                if char_start < open_end or open_end in inside:
                    parts.append(part)
                    if char_end > open_end:
                        open_end = char_end
                    continue
                # Close the open span (its end is a boundary: it was just checked).
                append(DisplaySpan(open_start, open_end, text[open_start:open_end], parts,
                                   False, (parts[0].id if colour_by_id else colour) % PALETTE_SIZE))
                colour += 1
                position = open_end
            if char_start > position:
                append(DisplaySpan(position, char_start, text[position:char_start]))
                position = char_start
            parts, open_start = [part], position
            open_end = char_end if char_end > position else position
            continue
        if parts is not None:
            position = _close(text, out, parts, open_start, open_end, inside, stop,
                              (parts[0].id if colour_by_id else colour) % PALETTE_SIZE)
            colour += 1
            parts = None
        if char_start > position:
            append(DisplaySpan(position, char_start, text[position:char_start]))
        label = text[char_start:char_end] or part.token
        append(DisplaySpan(char_start, char_end, label, [part], True,
                           (token_id if colour_by_id else colour) % PALETTE_SIZE))
        colour += 1
        position = max(position, char_end)
    if parts is not None:
        position = _close(text, out, parts, open_start, open_end, inside, stop,
                          (parts[0].id if colour_by_id else colour) % PALETTE_SIZE)
    if not truncated and position < len(text):
        append(DisplaySpan(position, len(text), text[position:]))
    return out


def _close(text: str, out: list[DisplaySpan], parts: list[TokenPart], start: int, end: int,
           inside: set[int], stop: int, colour: int) -> int:
    """Emit the open span, extended to the next grapheme boundary; return its end."""
    while end < stop and end in inside:
        end += 1
    out.append(DisplaySpan(start, end, text[start:end], parts, False, colour))
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
