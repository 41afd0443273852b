"""HTML of the token spans and the ids pane, built in Python because it is the hot path.

A 10 KB text is a few thousand spans; producing them through a Jinja loop with several
attributes each cost more than the rest of the request together, so this module writes them
with ``markupsafe.escape`` on every piece of text and every attribute value, and returns
``Markup``. Templates insert the result with ``{{ }}``; nothing here is marked safe without
being escaped first. Left out: which spans there are (``spans.py``).
"""

from __future__ import annotations

from collections.abc import Collection

from markupsafe import Markup, escape

from webapp.encode_view import Encoded


def spans_markup(result: Encoded, differs: Collection[int] = ()) -> Markup:
    """One ``<span>`` per display span; token spans carry their ids, indices and hover text."""
    out = []
    for position, (span, shown) in enumerate(zip(result.spans, result.shown)):
        text = escape(shown)
        if not span.parts:
            out.append(f'<span class="gap">{text}</span>')
            continue
        classes = f"tok c{span.colour}"
        if span.special:
            classes += " special"
        if position in differs:
            classes += " differs"
        ids = " ".join(str(p.id) for p in span.parts)
        out.append(f'<span class="{classes}" tabindex="0" role="button" data-t="{span.indices}" '
                   f'data-ids="{ids}" title="{escape(span.title)}">{text}</span>')
    return Markup("".join(out))


def ids_markup(result: Encoded) -> Markup:
    """The ids of the rendered tokens, each linked to its span by its index."""
    return Markup("".join(f'<span class="tid" data-t="{i}">{token_id}</span>'
                          for i, token_id in enumerate(result.ids[: result.shown_tokens])))
