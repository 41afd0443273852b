"""What a team's tokenizers may take in the database: ``TEAM_TOKENIZER_BYTES``.

Every tokenizer row keeps its size (``Tokenizer.size_bytes``: the document, the statistics and
the settings, where an import keeps its original file), so the team's total is one indexed sum.
An import is refused before its body is read when the team is already full, and again just
before it is stored if it would pass the quota; a training or an extension is refused when it is
queued while the team is full (a job queued with room left is kept when it ends, so a team may
pass its quota by at most the jobs it had waiting). Presets belong to no team and count for none.
"""

from __future__ import annotations

from flask import current_app
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from webapp.store.models import Tokenizer
from webapp.web.shown import human_size


def used_bytes(session: Session, team_id: int) -> int:
    """The bytes the team's tokenizers keep."""
    total = session.scalar(select(func.coalesce(func.sum(Tokenizer.size_bytes), 0))
                           .where(Tokenizer.team_id == team_id))
    return int(total or 0)


def usage(session: Session, team_id: int) -> tuple[int, int]:
    """``(used, quota)`` in bytes."""
    return used_bytes(session, team_id), int(current_app.config["TEAM_TOKENIZER_BYTES"])


def _sentence(used: int, total: int, what: str) -> str:
    return (f"Your team's tokenizers take {human_size(used)} of its quota of {human_size(total)}, so {what}. "
            "Delete tokenizers you no longer need, or ask the server's admin to raise "
            "TOKENFORGE_TEAM_TOKENIZER_BYTES.")


def full(session: Session, team_id: int, what: str) -> str | None:
    """The sentence refusing ``what`` (e.g. "no tokenizer can be imported") when the team's quota
    is spent, else None."""
    used, total = usage(session, team_id)
    return _sentence(used, total, what) if used >= total else None


def no_room_for(session: Session, team_id: int, size: int, name: str) -> str | None:
    """The sentence refusing a new tokenizer ``name`` of ``size`` bytes that would pass the quota, else None."""
    used, total = usage(session, team_id)
    return _sentence(used, total, f"{name} ({human_size(size)}) was not stored") if used + size > total else None
