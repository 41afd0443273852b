"""What one member and one team may spend on uploads: disk, uploads an hour, uploads at once.

- **Disk.** A team keeps at most ``TEAM_CORPUS_BYTES`` of stored corpora (the decompressed
  text, as ``Corpus.size_bytes`` counts it). A team already at its quota is answered 413 before
  the body is read; otherwise ``storage.ingest`` stops a file where it would pass what is left
  (:func:`team_quota`), and :func:`over_quota` checks again just before a corpus is committed,
  so two uploads running at once cannot both take the last gigabytes.
- **Uploads an hour.** Each file counts against the member's ``UPLOAD_RATE_LIMIT``: the
  request's first before its body is read, the others once the form is parsed. An upload
  refused for another budget is not counted.
- **Uploads at once.** A member may have ``UPLOADS_PER_MEMBER`` uploads in progress, an IP address
  ``UPLOADS_PER_IP`` (``web/slots.py``), taken before the body is read and held until the
  request ends, so a member cannot hold every request thread with slow uploads.

:func:`admit` is the upload's gate (``web/requests.add_gate``): it runs before CSRF's form
parsing would spool the body. Left out: how fast a body must arrive (``web/server.py``) and
storing (``storage.py``).
"""

from __future__ import annotations

from flask import current_app
from flask_login import current_user
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from werkzeug.wrappers import Response

from webapp.access.auth import current_team
from webapp.corpora.storage import Quota
from webapp.store.db import get_session
from webapp.store.models import Corpus
from webapp.web import ratelimit, slots
from webapp.web.shown import human_size


def used_bytes(session: Session, team_id: int) -> int:
    """The bytes of stored text the team's corpora hold."""
    total = session.scalar(select(func.coalesce(func.sum(Corpus.size_bytes), 0)).where(Corpus.team_id == team_id))
    return int(total or 0)


def team_quota(session: Session, team_id: int) -> Quota:
    """The team's quota and what it uses now."""
    return Quota(int(current_app.config["TEAM_CORPUS_BYTES"]), used_bytes(session, team_id))


def full_answer(quota: Quota) -> Response:
    """The 413 for a team whose corpora already fill its quota."""
    return ratelimit.refused(
        f"Your team's corpora use {human_size(quota.used)} of its quota of {human_size(quota.total)}, so "
        "nothing more can be uploaded. Delete corpora you no longer need, or ask the server's admin to "
        "raise TOKENFORGE_TEAM_CORPUS_BYTES.", retry_after=0, status=413)


def admit() -> Response | None:
    """Before an upload's body is read: the team's quota, the member's hourly uploads, and the
    uploads running at once for the member and the address. None lets it in."""
    if not current_user.is_authenticated:
        return None  # the login gate answers; the body limit is already a login form's
    # The slots first: lock files, where the quota and the hourly count ask the database (and a
    # refused upload is not counted against the hour).
    refused = slots.hold("UPLOADS_PER_MEMBER", f"upload-member:{current_user.id}",
                         "You already have uploads in progress.")
    if refused is None:
        refused = slots.hold("UPLOADS_PER_IP", f"upload-ip:{ratelimit.client_ip()}",
                             "Your address already has uploads in progress.")
    if refused is not None:
        return refused
    quota = team_quota(get_session(), current_team().id)
    if quota.left <= 0:
        return full_answer(quota)
    return ratelimit.refuse("UPLOAD_RATE_LIMIT", f"upload:{current_user.id}", "corpus uploads")


def count_more_files(files: int) -> Response | None:
    """Count the request's files after its first against the hourly budget; the 429 if it is spent."""
    for _ in range(files - 1):
        refused = ratelimit.refuse("UPLOAD_RATE_LIMIT", f"upload:{current_user.id}", "corpus uploads")
        if refused is not None:
            return refused
    return None


def over_quota(session: Session, team_id: int, size: int) -> Quota | None:
    """Just before committing a corpus of ``size`` bytes: None if the team still has room, else
    its quota as it is now (uploads that finished meanwhile count)."""
    quota = team_quota(session, team_id)
    return None if size <= quota.left else quota
