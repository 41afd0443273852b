"""The tables of accounts, teams, API keys and sharing.

- ``users``: one row per account; the password is a werkzeug scrypt hash, never the password.
- ``teams`` and ``memberships``: a user belongs to teams as ``owner`` or ``member``; every
  corpus, job and tokenizer has a ``team_id`` (see ``models.py``).
- ``invites``: a link that lets its holder join a team until it expires or is revoked.
- ``api_keys``: per-user keys for the JSON API; only their SHA-256 is stored, so a leaked
  database does not leak working keys.
- ``share_links`` and ``shared_texts``: capability URLs for one tokenizer (and one text with it)
  or one leaderboard.
  Share and invite tokens are kept as they are, because their owners must be able to copy the
  link again; anyone who can read the database can read the shared data anyway.
- ``rate_limits``: the shared rate limiter's counters (``web/ratelimit.py``), one row per limited
  key, so every web process counts together and a restart forgets nothing. They are transient,
  so backups leave them out (``info={"backup": False}``).

Left out: what the tables mean for a request (``access/auth.py``, ``access/teams.py``, ``sharing/views.py``).
"""

from __future__ import annotations

import datetime as dt

from flask_login import UserMixin
from sqlalchemy import BigInteger, Boolean, CheckConstraint, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from webapp.store.model_base import Base, Created, IntPK, Name, Timestamp, UTCDateTime, utcnow

ROLES = ("owner", "member")
TOKEN = String(64)  # secrets.token_urlsafe(32) is 43 characters; a SHA-256 hex digest is 64


class User(UserMixin, Base):
    """An account. The first one created is the admin."""

    __tablename__ = "users"

    id: Mapped[IntPK]
    email: Mapped[str] = mapped_column(String(254), unique=True)  # stored lower-cased
    name: Mapped[Name]
    password_hash: Mapped[str] = mapped_column(String(255))
    is_admin: Mapped[bool] = mapped_column(Boolean, default=False)
    # Part of every session's login id (``get_id``): raising it (logout, password change, "sign
    # out everywhere") makes every session cookie issued before worthless, copies included.
    session_generation: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    created_at: Mapped[Created]

    def get_id(self) -> str:
        """The id flask-login keeps in the session: ``"<user id>:<session generation>"``."""
        return login_id(self.id, self.session_generation)


def login_id(user_id: int, session_generation: int) -> str:
    """A session's login id: the user and the generation it was issued under (``access/auth.py``)."""
    return f"{user_id}:{session_generation}"


class Team(Base):
    """A group whose members share corpora, jobs and tokenizers."""

    __tablename__ = "teams"

    id: Mapped[IntPK]
    name: Mapped[Name]
    created_at: Mapped[Created]


class Membership(Base):
    """A user's place in a team: ``owner`` (manages members and invites) or ``member``."""

    __tablename__ = "memberships"
    __table_args__ = (
        UniqueConstraint("team_id", "user_id", name="uq_memberships_team_id_user_id"),
        CheckConstraint("role IN ('owner', 'member')", name="role"),
    )

    id: Mapped[IntPK]
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    role: Mapped[str] = mapped_column(String(20), default="member")
    created_at: Mapped[Created]


class Invite(Base):
    """A link to join ``team_id``, usable by anyone who has it until ``expires_at``."""

    __tablename__ = "invites"

    id: Mapped[IntPK]
    team_id: Mapped[int] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    token: Mapped[str] = mapped_column(TOKEN, unique=True)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    expires_at: Mapped[dt.datetime] = mapped_column(UTCDateTime)
    uses: Mapped[int] = mapped_column(default=0)
    created_at: Mapped[Created]

    def usable(self, now: dt.datetime | None = None) -> bool:
        """Whether the invite has not expired."""
        return (now or utcnow()) < self.expires_at


class ApiKey(Base):
    """A key for ``Authorization: Bearer …``; ``prefix`` lets the owner tell keys apart."""

    __tablename__ = "api_keys"

    id: Mapped[IntPK]
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id", ondelete="CASCADE"), index=True)
    name: Mapped[Name]
    prefix: Mapped[str] = mapped_column(String(16))
    key_hash: Mapped[str] = mapped_column(String(64), unique=True)
    last_used_at: Mapped[Timestamp]
    created_at: Mapped[Created]


class ShareLink(Base):
    """Read-only access to one tokenizer or one leaderboard for whoever holds ``token``; revocable, may expire.

    Exactly one of ``tokenizer_id`` and ``leaderboard_id`` is set (the check constraint): one
    token, expiry and revocation mechanism serves both kinds of page.
    """

    __tablename__ = "share_links"
    __table_args__ = (
        CheckConstraint("(tokenizer_id IS NULL) <> (leaderboard_id IS NULL)", name="one_target"),
    )

    id: Mapped[IntPK]
    tokenizer_id: Mapped[int | None] = mapped_column(ForeignKey("tokenizers.id", ondelete="CASCADE"), index=True)
    leaderboard_id: Mapped[int | None] = mapped_column(ForeignKey("leaderboards.id", ondelete="CASCADE"),
                                                       index=True)
    token: Mapped[str] = mapped_column(TOKEN, unique=True)
    created_by: Mapped[int | None] = mapped_column(ForeignKey("users.id", ondelete="SET NULL"))
    expires_at: Mapped[Timestamp]
    revoked_at: Mapped[Timestamp]
    created_at: Mapped[Created]

    def active(self, now: dt.datetime | None = None) -> bool:
        """Whether the link still opens its tokenizer or leaderboard."""
        now = now or utcnow()
        return self.revoked_at is None and (self.expires_at is None or now < self.expires_at)


class SharedText(Base):
    """A (tokenizer, text) permalink that lives as long as its share link."""

    __tablename__ = "shared_texts"

    id: Mapped[IntPK]
    share_link_id: Mapped[int] = mapped_column(ForeignKey("share_links.id", ondelete="CASCADE"), index=True)
    token: Mapped[str] = mapped_column(TOKEN, unique=True)
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[Created]


class RateLimit(Base):
    """One key's sliding-window counter: this window's hits and the previous window's.

    Times are integer milliseconds since the epoch rather than timestamps, so the limiter can
    compare and do arithmetic on them in SQL that SQLite and PostgreSQL read alike.
    """

    __tablename__ = "rate_limits"
    __table_args__ = {"info": {"backup": False}}

    key: Mapped[str] = mapped_column(String(64), primary_key=True)  # SHA-256 hex of the limit's key
    window_start_ms: Mapped[int] = mapped_column(BigInteger)  # a multiple of the limit's window
    hits: Mapped[int] = mapped_column(Integer, default=0)  # allowed events in this window
    previous: Mapped[int] = mapped_column(Integer, default=0)  # allowed events in the window before
    expires_ms: Mapped[int] = mapped_column(BigInteger, index=True)  # two windows on: counts for nothing
