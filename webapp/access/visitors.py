"""Share-link visitors: which tokenizers the share links kept in this session let its holder read.

Opening a share link (``sharing/views.py``) records its token in the session; from then on the
tokenizer's read-only pages at the team's URLs accept that visitor. Every request re-reads the
links behind the kept tokens, so a revoked or expired link stops granting access at once.

This is the one piece of sharing that scoping needs: ``auth.gate`` and ``loaded.rows_query``
ask here, and ``sharing/views.py`` (the link pages) records tokens here, so access control never
depends on the sharing views. Left out: creating and revoking links (``share_links.py``) and
the pages (``sharing/views.py``).
"""

from __future__ import annotations

from flask import g, session
from sqlalchemy import select

from webapp.store.db import get_session
from webapp.store.models import ShareLink, utcnow

MAX_SHARES_IN_SESSION = 20  # tokens a session keeps; the oldest is forgotten first


def _active_shares() -> dict[int, str]:
    """Tokenizer id -> the token of the active link in this session that opens it (newest first)."""
    if "shares_by_tokenizer" not in g:
        tokens = [t for t in session.get("shares", []) if isinstance(t, str)][:MAX_SHARES_IN_SESSION]
        found: dict[int, str] = {}
        if tokens:
            now = utcnow()
            links = {link.token: link for link in
                     get_session().scalars(select(ShareLink).where(ShareLink.token.in_(tokens)))}
            for token in tokens:  # session order: the link opened last wins
                link = links.get(token)
                if link is not None and link.tokenizer_id is not None and link.active(now):
                    found.setdefault(link.tokenizer_id, token)
        g.shares_by_tokenizer = found
    return dict(g.shares_by_tokenizer)


def shared_tokenizer_ids() -> list[int]:
    """Ids of tokenizers this visitor may read through active share links in their session."""
    return list(_active_shares())


def share_token(tokenizer_id: int) -> str | None:
    """The token of an active link in this session that opens ``tokenizer_id``, if any."""
    return _active_shares().get(tokenizer_id)


def remember(token: str) -> None:
    """Keep ``token`` in the session, newest first, so the link's tokenizer stays readable."""
    tokens = [t for t in session.get("shares", []) if isinstance(t, str) and t != token]
    session["shares"] = ([token] + tokens)[:MAX_SHARES_IN_SESSION]
    g.pop("shares_by_tokenizer", None)
