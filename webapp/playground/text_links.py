"""Where the playground's text travels: short texts in the URL, and each visitor's own page URLs.

The text you type is kept across the encode page, the tokenizer picker, reloads and Compare.
A short text rides in the URL as ``?text=`` (a link that can be passed on: the permalink);
a long one stays in the browser's session storage (``static/js/continuity.js``), because a
URL of more than a few kilobytes is refused by servers and proxies (gunicorn's request line
stops at 4,094 bytes). :data:`URL_TEXT_LIMIT` is that cut, in URL-encoded characters, and the
script reads the same number from the page, so both sides agree.

A tokenizer's encode page is ``/tokenizers/<id>/play`` for its team, but ``/s/<token>`` for a
visitor who opened a share link: :func:`play_url` gives each the one they can pass on.
Left out: the views (``views.py``, ``sharing/views.py``) and the storage itself (the script).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from webapp.access.auth import team_ids
from webapp.access.visitors import share_token, shared_tokenizer_ids
from webapp.playground.compare import MIN_TOKENIZERS
from webapp.store.models import Tokenizer as TokenizerRow
from webapp.store.records import TokenizerRecord
from webapp.web.urls import url_for

Tokenizer = TokenizerRow | TokenizerRecord  # a list's ORM row, or a loaded tokenizer's record

# Longest ``?text=`` value, URL-encoded; a UTF-8 byte is at most 3 characters encoded, so this
# keeps the whole URL well under the 4,094-byte request line with room for the rest.
URL_TEXT_LIMIT = 2000


def url_text(text: str | None) -> str | None:
    """``text`` if it is short enough to travel in a URL, else None (it stays in the browser)."""
    if not text or len(text) > URL_TEXT_LIMIT:
        return None
    return text if len(quote(text, safe="")) <= URL_TEXT_LIMIT else None


def visitor_token(row: Tokenizer) -> str | None:
    """The share token through which this visitor reads ``row``; None for its team's members."""
    return None if row.team_id in team_ids() else share_token(row.id)


def offers_compare(row: Tokenizer) -> bool:
    """Whether Compare has something to offer next to ``row``: a member reads the presets and
    their teams' tokenizers, a visitor only what links shared with them, which may be just this."""
    return visitor_token(row) is None or len(shared_tokenizer_ids()) >= MIN_TOKENIZERS


def play_url(row: Tokenizer, text: str | None = None, *, external: bool = False) -> str:
    """The encode page of ``row`` for this visitor, with ``text`` in it when short."""
    token, carried = visitor_token(row), url_text(text)
    args: dict[str, Any] = {"text": carried} if carried is not None else {}
    if external:  # only then: a relative path is remembered (web/urls.py), an external URL is not
        args["_external"] = True
    if token is not None:
        return url_for("sharing.open_link", token=token, **args)
    return url_for("playground.play", tokenizer_id=row.id, **args)


def page_url(row: Tokenizer, page: str) -> str:
    """A read-only page (``chat``, ``vocab`` or ``downloads``) of ``row``, at its share URL for visitors."""
    token = visitor_token(row)
    if token is not None:
        return url_for(f"sharing.open_{page}", token=token)
    return url_for({"chat": "chat.page", "vocab": "vocab.browse", "downloads": "transfer.downloads"}[page],
                   tokenizer_id=row.id)


def compare_url(row: Tokenizer, text: str | None = None) -> str:
    """Compare, starting from ``row`` and the same text (when short; else the browser has it)."""
    carried = url_text(text)
    return url_for("compare.page", ids=row.id, **({"text": carried} if carried is not None else {}))
