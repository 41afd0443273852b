"""HTML of the token spans and the ids pane, built in Python because it is the hot path.

A 10 KB text is a few thousand spans; producing them through a Jinja loop with several
attributes each cost more than the rest of the request together, so this module writes them
with ``markupsafe.escape`` on every piece of text and every attribute value, and returns
``Markup``. Templates insert the result with ``{{ }}``; nothing here is marked safe without
being escaped first.

Real text repeats its tokens (`` the``, ``,``), and the hover line of an id is the same on every
keystroke, so short strings are escaped through a small LRU cache: a hit costs a fifth of a
call to ``escape``. Long strings (a big gap, a long special token's text) are escaped directly
and never cached, so the cache stays small.

Keyboard: the spans are one tab stop, not thousands. Only the first token span has
``tabindex="0"``; ``static/js/playground.js`` moves that roving tab stop with the arrow keys
(Home/End for the ends) and inspects the focused token on Enter or Space. Leaving the other
spans without a ``tabindex`` also keeps the hot path's output small.
Left out: which spans there are (``spans.py``).
"""

from __future__ import annotations

import functools
from collections.abc import Collection

from markupsafe import Markup, escape

from webapp.playground.encode_view import Encoded

_CACHED_LENGTH = 200  # longer strings are escaped without the cache (bounds its memory)


@functools.lru_cache(maxsize=1 << 15)
def _escape_short(text: str) -> str:
    return str(escape(text))


def escaped(text: str) -> str:
    """``text`` with ``& < > " '`` escaped, exactly as ``markupsafe.escape`` does."""
    return _escape_short(text) if len(text) <= _CACHED_LENGTH else str(escape(text))


def spans_markup(result: Encoded, differs: Collection[int] = ()) -> Markup:
    """One ``<span>`` per display span; token spans carry their ids, indices and hover text.

    The first token span is the group's only tab stop (the roving focus described above).
    """
    out = []
    append = out.append
    stop = ' tabindex="0"'  # the first token span's; empty once given out
    for position, (span, shown) in enumerate(zip(result.spans, result.shown)):
        text = escaped(shown)
        parts = span.parts
        if not parts:
            append(f'<span class="gap">{text}</span>')
            continue
        classes = f"tok c{span.colour}"
        if span.special:
            classes += " special"
        if differs and position in differs:
            classes += " differs"
        if len(parts) == 1:  # most spans: skip building lists for one token
            part = parts[0]
            indices, ids, title = part.index, part.id, part.title_line
        else:
            indices, ids, title = span.indices, span.ids, span.title
        append(f'<span class="{classes}"{stop} role="button" data-t="{indices}" '
               f'data-ids="{ids}" title="{escaped(title)}">{text}</span>')
        stop = ""
    return Markup("".join(out))


def ids_markup(result: Encoded) -> Markup:
    """The ids of the rendered tokens, each linked to its span by its index.

    Separated by spaces, as plain inline text: the browser wraps them at the spaces, which lays
    out thousands of ids far faster than a flex row of boxes (and a selection copies ``1 2 3``).
    """
    return Markup(" ".join(f'<span class="tid" data-t="{i}">{token_id}</span>'
                           for i, token_id in enumerate(result.ids[: result.shown_tokens])))
