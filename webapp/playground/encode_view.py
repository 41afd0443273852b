"""Encode a text for display: every token counted, the first ``limit`` grouped into spans.

One function shared by the encode view, the compare view and the render benchmark, so all
three measure and show the same thing. Large inputs stay fast and safe: the whole text is
encoded and counted, but only the first ``limit`` tokens become display spans, and the result
says so.

The special-token rule, one for the page and the JSON API (:func:`encode_spans`): text that
spells a special token becomes that one token only where it is allowed; where it is not, it is
encoded as the ordinary text it is (tiktoken's ``disallowed_special=()``), never an error. So
what a user pastes cannot smuggle a control token into the ids, and no request fails because of
what its text happens to say. Both start with specials not allowed (the page's checkbox is off
at first, ``encode_page.ALLOW_SPECIAL_DEFAULT``; the API's ``allowed_special`` defaults to ``[]``),
so the same text gives the same ids in both unless the caller asks otherwise.

Left out: HTTP (``views.py``, ``api/views.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from engine import AllowedSpecial, SpanColumns, Tokenizer, TokenSpan
from webapp.playground.spans import Counts, DisplaySpan, SpanTable, counts, show_whitespace, span_table
from webapp.web.numbers import MAX_ID, parse_int

RENDER_TOKENS = 4000
MAX_CHARS = 200_000
# Decoding is the one place where a few ids make a lot of text: a stored tokenizer may hold a
# token of megabytes, and a thousand pasted copies of its id would build gigabytes. Ordinary
# text decodes to about 4 bytes per id, so a million ids fit easily.
MAX_DECODE_BYTES = 16 << 20


@dataclass(slots=True)
class Encoded:
    """What the result block shows."""

    text: str
    ids: list[int]
    table: SpanTable  # the display spans of the first ``shown_tokens`` tokens, as columns
    tokenizer: Tokenizer  # describes the shown tokens (their hover lines)
    counts: Counts
    shown_tokens: int
    shown: list[str] = field(default_factory=list)  # each span's text as displayed
    _spans: list[DisplaySpan] | None = None
    _id_strings: list[str] | None = None

    @property
    def spans(self) -> list[DisplaySpan]:
        """The display spans as objects (compare walks them), built on first use."""
        if self._spans is None:
            self._spans = self.table.display_spans(self.tokenizer)
        return self._spans

    @property
    def truncated(self) -> bool:
        return self.shown_tokens < len(self.ids)

    @property
    def id_strings(self) -> list[str]:
        """Each id in decimal, made once: the spans, the ids pane and the Copy text all write them."""
        if self._id_strings is None:
            self._id_strings = list(map(str, self.ids))
        return self._id_strings

    @property
    def ids_text(self) -> str:
        return ", ".join(self.id_strings)


def encode_spans(tokenizer: Tokenizer, text: str, allowed_special: AllowedSpecial) -> SpanColumns:
    """Encode under the special-token rule: allowed specials are one token, others plain text.

    The spans come as columns (``Tokenizer.encode_span_columns``): both callers read them field by
    field, and a tuple per token cost more than the encoding (GPT-2, 2 KB: 420 against 115 µs).

    Naming a string that is not one of the tokenizer's special tokens in ``allowed_special``
    still raises the engine's error (a typo should be told, not ignored).
    """
    return tokenizer.encode_span_columns(text, allowed_special=allowed_special, disallowed_special=())


def encode_for_display(tokenizer: Tokenizer, text: str, *, allowed_special: bool = False,
                       show_ws: bool = False, colour_by_id: bool = False,
                       limit: int = RENDER_TOKENS) -> Encoded:
    """Encode ``text`` and build the display spans of its first ``limit`` tokens."""
    token_spans = encode_spans(tokenizer, text, "all" if allowed_special else frozenset())
    return display(tokenizer, text, token_spans, show_ws=show_ws, colour_by_id=colour_by_id, limit=limit)


def display(tokenizer: Tokenizer, text: str, token_spans: SpanColumns | Sequence[TokenSpan], *,
            show_ws: bool = False, colour_by_id: bool = False, limit: int = RENDER_TOKENS) -> Encoded:
    """The display of ``text`` already encoded as ``token_spans`` (the chat page encodes it in segments)."""
    if not isinstance(token_spans, SpanColumns):
        token_spans = SpanColumns.of(token_spans)
    ids = token_spans.ids
    table = span_table(text, token_spans, tokenizer, limit=limit, colour_by_id=colour_by_id)
    shown_tokens = min(limit, len(ids))
    if show_ws:
        shown = [label if special else show_whitespace(label) for label, special in zip(table.labels, table.special)]
    else:
        shown = table.labels
    return Encoded(text, ids, table, tokenizer, counts(text, ids, tokenizer.model.unk_id), shown_tokens, shown)


def check_decode_size(tokenizer: Tokenizer, ids: Sequence[int], limit: int = MAX_DECODE_BYTES) -> None:
    """Raise ValueError if ``ids`` decode to more than ``limit`` bytes (unknown ids raise the engine's error)."""
    total = 0
    for token_id in ids:
        total += len(tokenizer.token_bytes(token_id))
        if total > limit:
            raise ValueError(f"These {len(ids):,} ids decode to more than {limit:,} bytes; "
                             "decode fewer ids at a time.")


def parse_ids(raw: str) -> list[int]:
    """Read ids pasted as ``1, 2, 3``, ``[1,2,3]`` or one per line; raise ValueError naming the bad one."""
    cleaned = raw.replace("[", " ").replace("]", " ").replace(",", " ").split()
    ids = []
    for position, item in enumerate(cleaned, start=1):
        value = parse_int(item)
        if value is None:
            raise ValueError(f"Item {position}, {item[:20]!r}, is not a token id; ids are whole numbers "
                             f"from 0 to {MAX_ID:,} written with the digits 0-9, separated by commas or spaces.")
        ids.append(value)
    if not ids:
        raise ValueError("Paste some token ids first, for example 15496, 995.")
    return ids
