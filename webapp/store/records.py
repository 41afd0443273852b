"""Immutable records of the rows every request reads, and the plain read that fills them.

A logged-in request reads its user with their teams, and an encode its tokenizer's row, before
it does anything else. Through the ORM those reads cost several times the statements themselves
(identity map, loading, a row object's state; ~0.35 ms of a 2.5 ms htmx encode), so they are
read as columns (:func:`read`) into frozen records. A record's fields are named as the model's
attributes, and :func:`columns` selects exactly those, so a record reads like the row it stands
for; nothing is cached, each request reads afresh.

Left out: writing. A view that changes a user or a tokenizer loads the ORM row (``auth.user_row``,
``auth.owned_or_404``); the large tokenizer columns (the document, the stats, the config) are
read by id where they are needed (``tokenizers/loaded.py``).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from typing import Any

from flask_login import UserMixin
from sqlalchemy import Row
from sqlalchemy.sql import Executable

from webapp.store.db import read_connection
from webapp.store.models_auth import login_id


@dataclasses.dataclass(frozen=True, eq=False)
class SignedIn(UserMixin):
    """The user of a request (``flask_login.current_user``), as :class:`~webapp.store.models_auth.User`
    without its password hash; equal to another user with the same login id (``UserMixin``)."""

    id: int
    email: str
    name: str
    is_admin: bool
    session_generation: int

    def get_id(self) -> str:
        """The login id the session keeps, as ``User.get_id`` makes it."""
        return login_id(self.id, self.session_generation)


@dataclasses.dataclass(frozen=True, slots=True)
class TeamRecord:
    """A team the user belongs to: what the scope of reads and the header need of it."""

    id: int
    name: str


@dataclasses.dataclass(frozen=True, slots=True)
class TokenizerRecord:
    """A stored tokenizer without its large columns (``tokenizer_json``, ``stats``, ``config``)."""

    id: int
    team_id: int | None
    preset: str | None
    name: str
    algorithm: str
    source: str
    vocab_size: int
    training_seconds: float | None
    job_id: int | None
    created_at: dt.datetime
    size_bytes: int


@functools.cache
def columns(record: type, model: type) -> tuple[Any, ...]:
    """The ``model`` attributes named as the fields of ``record``, in the fields' order."""
    return tuple(getattr(model, field.name) for field in dataclasses.fields(record))


def read(statement: Executable, params: Mapping[str, Any]) -> Sequence[Row[Any]]:
    """Run a Core ``select`` of columns on ``db.read_connection`` (the session's connection once the
    request has a session) and return its rows, with no ORM work."""
    return read_connection().execute(statement, params).all()
