"""Turn a tokenizer's token spans into what the encode view displays.

Pure functions, no Flask. :func:`group_spans` groups tokens into display spans that each end
on a whole grapheme (``regex`` ``\\X``): a byte-level token that splits a multi-byte character
(or a character into its combining marks, or an emoji ZWJ sequence) is shown together with its
neighbours, as Tiktokenizer does, so the page never shows ``\uFFFD``. Text no token covers
(whitespace a WordPiece pre-tokenizer drops) becomes a gap. :func:`show_whitespace` adds the
``·`` ``→`` ``↵`` markers, :func:`counts` computes the numbers above the spans.

Left out: HTML (the templates escape everything) and the comparison of tokenizations
(``compare.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import regex

from engine import TokenSpan, Tokenizer

PALETTE_SIZE = 12
_GRAPHEME = regex.compile(r"\X")
_WHITESPACE = str.maketrans({" ": "·", "\t": "→", "\n": "↵\n", "\r": "␍"})


@dataclass(frozen=True, slots=True)
class TokenPart:
    """One token inside a display span: its index in the encoding, id, vocabulary string, bytes."""

    index: int
    id: int
    token: str
    hex: str
    special: bool


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
        return " ".join(str(p.index) for p in self.parts)

    @property
    def title(self) -> str:
        """The hover text: each token's id, vocabulary string and bytes in hex."""
        return "\n".join(f"{p.id}  {p.token}  [{p.hex}]" for p in self.parts)


def grapheme_boundaries(text: str) -> set[int]:
    """Every character index where a grapheme cluster starts or the text ends."""
    if text.isascii() and "\r\n" not in text:
        return set(range(len(text) + 1))
    bounds = {m.start() for m in _GRAPHEME.finditer(text)}
    bounds.add(len(text))
    return bounds


def _describe(tokenizer: Tokenizer, token_id: int, memo: dict[int, tuple[str, str]]) -> tuple[str, str]:
    """(vocabulary string, bytes in hex) of an id, memoised: real text repeats its tokens."""
    found = memo.get(token_id)
    if found is None:
        try:
            data = tokenizer.token_bytes(token_id)
        except ValueError:
            data = b""
        token = tokenizer.id_to_token(token_id)
        found = memo[token_id] = (token if token is not None else "?", data.hex(" "))
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
    # Graphemes are found only in the text that is shown (plus slack for the last cluster).
    window = text[: shown[-1].char_end + 256] if truncated and shown else text
    bounds = grapheme_boundaries(window)
    stop = len(window)
    out: list[DisplaySpan] = []
    current: DisplaySpan | None = None
    position = 0  # end of what has been emitted so far

    def flush() -> None:
        nonlocal current, position
        if current is not None:
            end = current.end
            while end < stop and end not in bounds:
                end += 1
            current.end = end
            current.text = text[current.start:end]
            out.append(current)
            position = end
            current = None

    memo: dict[int, tuple[str, str]] = {}
    for index, span in enumerate(shown):
        token, hex_ = _describe(tokenizer, span.id, memo)
        part = TokenPart(index, span.id, token, hex_, span.special)
        if span.special or span.char_start >= span.char_end:
            flush()
            if span.char_start > position:
                out.append(DisplaySpan(position, span.char_start, text[position:span.char_start]))
            label = text[span.char_start:span.char_end] or part.token
            out.append(DisplaySpan(span.char_start, span.char_end, label, [part], special=True))
            position = max(position, span.char_end)
            continue
        if current is not None and (span.char_start < current.end or current.end not in bounds):
            current.parts.append(part)
            current.end = max(current.end, span.char_end)
            continue
        flush()
        start = max(span.char_start, position)
        if start > position:
            out.append(DisplaySpan(position, start, text[position:start]))
        current = DisplaySpan(start, max(span.char_end, start), "", [part])
    flush()
    if not truncated:
        if position < len(text):
            out.append(DisplaySpan(position, len(text), text[position:]))
    n = 0
    for item in out:
        if item.parts:
            item.colour = (item.parts[0].id if colour_by_id else n) % PALETTE_SIZE
            n += 1
    return out


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
