"""HTML of the token spans and the ids pane, built in Python because it is the hot path.

A 10 KB text is a few thousand spans; producing them through a Jinja loop with several
attributes each cost more than the rest of the request together, so this module writes them
with ``markupsafe.escape`` on every piece of text and every attribute value, and returns
``Markup``. Templates insert the result with ``{{ }}``; nothing here is marked safe without
being escaped first.

The spans' texts are escaped by one call to ``escape`` on all of them joined with a NUL, then
split again (:func:`escaped_all`); a text holding a NUL of its own sends them through
:func:`escaped` one by one, where short strings go through a small LRU cache (real text repeats
its tokens, `` the``, ``,``) and long ones (a big gap, a long special token's text) are escaped
directly and never cached, so the cache stays small. The ids' decimal strings are made once per
answer (``Encoded.id_strings``) for the spans, the ids pane and the Copy text.

What the browser must lay out on every keystroke is kept to one element per token. A span's
hover text (its ids, vocabulary strings and bytes) is not a ``title`` on each span but one line
per distinct id in the group's ``data-lines`` (:func:`hover_lines`), which the script turns into
the span's ``title`` when the pointer or focus reaches it; and the ids pane is plain text, which
the script splits into one element per id the first time an id or a span is hovered. Measured
in Chromium with 20 KB of text (4,000 tokens): the answer went from 654 to 349 KB and its
parse, layout and paint from 220 to 108 ms (docs/perf-notes.md, "Typing").

An answer to the page's script (htmx: a keystroke) draws only what fills the two scrolling
boxes: the spans of the first :data:`FIRST_CHARS` characters and the first :data:`FIRST_IDS` ids.
The rest come in the same answer as data blocks, ``<script type="text/html" data-rest>`` of
:data:`REST_CHUNK` spans or ids each, which the browser neither runs (not a script type, so the
CSP is not involved) nor parses as HTML (raw text up to ``</script>``, which escaped text cannot
contain: its every ``<`` is ``&lt;``). The script draws them when typing pauses, when a box is
scrolled near its end, or when something needs them all (an id hovered, the arrow keys past the
last drawn token). With 20 KB of text (4,000 spans) the browser's parse, layout and paint of an
answer went from 110-155 to ~25 ms; a ``<template>`` for the rest saved the layout but still
cost ~20 ms of parsing. A full page draws everything, since it may be read without script.

Keyboard: the spans are one tab stop, not thousands. Only the first token span has
``tabindex="0"``; ``static/js/playground.js`` moves that roving tab stop with the arrow keys
(Home/End for the ends) and inspects the focused token on Enter or Space. Leaving the other
spans without a ``tabindex`` also keeps the hot path's output small.
Left out: which spans there are (``spans.py``).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Collection

from flask import has_request_context
from markupsafe import Markup, escape

from webapp.playground.encode_view import RENDER_TOKENS, Encoded
from webapp.playground.spans import PALETTE_SIZE, hover_lines_json
from webapp.web.htmx import is_htmx

_CACHED_LENGTH = 200  # longer strings are escaped without the cache (bounds its memory)
# What an htmx answer draws at once. The spans box shows about 18 lines of up to 95 characters,
# so the spans holding the first FIRST_CHARS characters fill it, whatever the tokens' lengths (a
# newline ends a line, so it counts as LINE characters); the ids box shows ~150 ids. A box left
# short (a wider one) is topped up by the script after the paint.
FIRST_CHARS = 2000
LINE = 95
FIRST_IDS = 500
REST_CHUNK = 400  # spans (or ids) per data block: each takes the browser ~10-20 ms to draw
ALL = sys.maxsize  # drawn: every span and id
# The opening of a plain token span of each colour, up to its indices: made once, not per span.
_PLAIN_HEADS = [f'<span class="tok c{colour}" role="button" data-t="' for colour in range(PALETTE_SIZE)]
# The token indices a span names, as strings by index, made once: writing 600 ints cost ~25 µs a request.
_DECIMALS = [str(index) for index in range(RENDER_TOKENS + 1)]
_SEPARATOR = "\0"  # joins the spans' texts for one escape (escaped_all); escaping leaves it alone


@functools.lru_cache(maxsize=1 << 15)
def _escape_short(text: str) -> str:
    return str(escape(text))


def escaped(text: str) -> str:
    """``text`` with ``& < > " '`` escaped, exactly as ``markupsafe.escape`` does."""
    return _escape_short(text) if len(text) <= _CACHED_LENGTH else str(escape(text))


def escaped_all(texts: list[str]) -> list[str]:
    """Each of ``texts`` escaped as :func:`escaped` does, by one call to ``escape`` on them all.

    They are joined with a NUL, which escaping leaves alone, and split again; texts that hold a NUL
    themselves are escaped one by one. One C call instead of a Python call per span.
    """
    joined = _SEPARATOR.join(texts)
    if not texts or joined.count(_SEPARATOR) != len(texts) - 1:
        return [escaped(text) for text in texts]
    return str(escape(joined)).split(_SEPARATOR)


def lazy() -> bool:
    """Whether to leave the rest for the script: only when answering it (htmx). A full page
    draws everything, since it may be read without script."""
    return has_request_context() and is_htmx()


def first_spans(shown: list[str], chars: int = FIRST_CHARS) -> int:
    """How many of the spans (their ``shown`` texts) hold the first ``chars`` characters."""
    used = 0
    for count, text in enumerate(shown):
        if used >= chars:
            return count
        used += len(text) + LINE * text.count("\n")
    return len(shown)


def _drawn_then_rest(parts: list[str], drawn: int, sep: str = "") -> str:
    """``parts`` joined with ``sep``, those after the first ``drawn`` in data blocks of
    :data:`REST_CHUNK` (each block starts with ``sep``)."""
    out = [sep.join(parts[:drawn])]
    for start in range(drawn, len(parts), REST_CHUNK):
        out.append(f'<script type="text/html" data-rest>{sep}{sep.join(parts[start:start + REST_CHUNK])}</script>')
    return "".join(out)


def spans_markup(result: Encoded, differs: Collection[int] = (), *, drawn: int | None = None) -> Markup:
    """One ``<span>`` per display span; token spans carry their ids, indices and hover text.

    The first token span is the group's only tab stop (the roving focus described above). Spans
    after the first ``drawn`` go in the rest's data blocks; by default all are drawn except in an
    answer to htmx, which draws :func:`first_spans`.

    Nearly every span is one ordinary token, so every span is first written as one, by one list
    comprehension (a ready-made opening of its colour, its index from :data:`_DECIMALS`, its id,
    its text), and then the few that are not (gaps, spans of several tokens, special tokens, the
    tab stop, ``differs``) are written again by :func:`_span`. For 2 KB of English (600 spans)
    that took 90 µs where a loop deciding each span's shape took 200 µs (2026-11-28).
    """
    if drawn is None:
        drawn = first_spans(result.shown) if lazy() else ALL
    table = result.table
    texts = escaped_all(result.shown)
    firsts, sizes, special = table.firsts, table.sizes, table.special
    # The table's token ids are the first ids of the result, so their decimal strings are too; a
    # trailing gap's first token is one past the last, hence the padding (the gap is redone below).
    id_strings = result.id_strings
    padded = [*id_strings, ""] if firsts and firsts[-1] >= len(id_strings) else id_strings
    decimals = _decimals(firsts[-1] if firsts else 0)
    heads = _PLAIN_HEADS
    out = [f'{heads[colour]}{decimals[first]}" data-ids="{padded[first]}">{text}</span>'
           for colour, first, text in zip(table.colours, firsts, texts)]
    unusual = {position for position in differs if position < len(out)}
    if sizes.count(1) != len(sizes):
        unusual.update(position for position, size in enumerate(sizes) if size != 1)
    if True in special:
        unusual.update(position for position, alone in enumerate(special) if alone)
    stop = next((position for position, size in enumerate(sizes) if size), None)  # the first token span
    if stop is not None:
        unusual.add(stop)
    for position in unusual:
        out[position] = _span(texts[position], firsts[position], sizes[position], special[position],
                              table.colours[position], id_strings, stop=position == stop,
                              differs=position in differs)
    return Markup(_drawn_then_rest(out, drawn))


def _decimals(largest: int) -> list[str]:
    """Decimal strings of 0 to at least ``largest``, by index: the list made once, unless it is too short."""
    return _DECIMALS if largest < len(_DECIMALS) else list(map(str, range(largest + 1)))


def _span(text: str, first: int, size: int, special: bool, colour: int, id_strings: list[str], *,
          stop: bool, differs: bool) -> str:
    """One span written out in full: a gap, or a token span with its classes, tab stop and tokens."""
    if not size:
        return f'<span class="gap">{text}</span>'
    classes = f"tok c{colour}"
    if special:
        classes += " special"
    if differs:
        classes += " differs"
    tab = ' tabindex="0"' if stop else ""
    head = f'<span class="{classes}"{tab} role="button" data-t="'
    if size == 1:
        return f'{head}{first}" data-ids="{id_strings[first]}">{text}</span>'
    indices = " ".join(map(str, range(first, first + size)))
    return f'{head}{indices}" data-ids="{" ".join(id_strings[first:first + size])}">{text}</span>'


def hover_lines(result: Encoded) -> str:
    """``{id: hover line}`` of every id shown, as JSON for the spans' ``data-lines`` attribute
    (Jinja escapes it there); a span of several tokens shows their lines one under another."""
    return hover_lines_json(result.tokenizer, result.table.token_ids)


def ids_markup(result: Encoded, *, drawn: int | None = None) -> Markup:
    """The ids of the rendered tokens as plain text separated by spaces (the browser wraps them
    at the spaces, and a selection copies ``1 2 3``). The script gives each its own element,
    linked to its span by its index, the first time one is hovered. ``drawn`` as for the spans,
    :data:`FIRST_IDS` in an answer to htmx."""
    if drawn is None:
        drawn = FIRST_IDS if lazy() else ALL
    return Markup(_drawn_then_rest(result.id_strings[: result.shown_tokens], drawn, " "))
