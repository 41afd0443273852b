"""Share links as rows: create one for a tokenizer or a leaderboard, revoke one.

Both kinds of link live in ``ShareLink`` and share tokens, expiry and revocation, so the
tokenizer's share page (``sharing/views.py``) and the leaderboard's (``leaderboards/views.py``) call
these two functions. A link's token is ``auth.new_token()``: 256 random bits.
Left out: checking that the row is the user's (the callers do, with ``auth.owned_or_404``),
opening a link (``sharing/views.py``) and what a visitor may then read (``visitors.py``).
"""

from __future__ import annotations

import datetime as dt

from flask_login import current_user

from webapp.access.auth import new_token
from webapp.store.db import get_session
from webapp.store.models import ShareLink, utcnow


def create_link(days: int | None, *, tokenizer_id: int | None = None, leaderboard_id: int | None = None) -> None:
    """Add a link to the tokenizer or the leaderboard, expiring after ``days`` days (None: never).

    The caller has checked that the row is the user's, and ``days`` (``forms.ShareLinkForm``).
    """
    expires = utcnow() + dt.timedelta(days=days) if days is not None else None
    get_session().add(ShareLink(tokenizer_id=tokenizer_id, leaderboard_id=leaderboard_id, token=new_token(),
                                created_by=current_user.id, expires_at=expires))
    get_session().commit()


def revoke_link(link: ShareLink) -> None:
    """Revoke ``link`` (the caller has checked it is the user's): it stops opening at once."""
    if link.revoked_at is None:
        link.revoked_at = utcnow()
        get_session().commit()
