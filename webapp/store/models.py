"""The typed SQLAlchemy 2 models: corpora, jobs (the queue: training, analysis, leaderboards),
tokenizers and leaderboards.

Column shapes that repeat are ``Annotated`` aliases; every constraint has a name from the
metadata's naming convention, so Alembic migrations can alter them on SQLite (batch mode) and
PostgreSQL alike. Timestamps are stored UTC-aware. Every corpus, job and tokenizer belongs to a
team (``team_id``), except the preset tokenizers, which belong to none; the accounts, teams and
sharing tables are in ``models_auth.py``. Queue operations live in ``jobs/queue.py``; this
module only declares the tables.
"""

from __future__ import annotations

import json

from sqlalchemy import BigInteger, CheckConstraint, ForeignKey, Index, Integer, String, Text
from sqlalchemy.engine.default import DefaultExecutionContext
from sqlalchemy.orm import Mapped, mapped_column

from webapp.store.job_states import FINISHED_STATUSES, JOB_KINDS, JOB_STATUSES, one_of
from webapp.store.model_base import (
    Base,
    Count,
    Created,
    IntPK,
    JSONDict,
    JSONList,
    Name,
    TeamFK,
    Timestamp,
    UTCDateTime,
    utcnow,
)
from webapp.store.models_auth import ApiKey, Invite, Membership, SharedText, ShareLink, Team, User

TOKENIZER_SOURCES = ("trained", "imported", "preset")


def stored_bytes(tokenizer_json: str, stats: object, config: object) -> int:
    """The bytes a tokenizer row keeps: its document, its statistics and its settings (where an
    import's original file is kept), as stored. A team's tokenizers count against its quota."""
    return len(tokenizer_json.encode("utf-8")) + len(json.dumps(stats)) + len(json.dumps(config))


def _stored_bytes_default(context: DefaultExecutionContext) -> int:
    values = context.get_current_parameters()
    return stored_bytes(values["tokenizer_json"], values.get("stats") or {}, values.get("config") or {})


class Corpus(Base):
    """An uploaded text corpus; its bytes live in the content-addressed store under ``sha256``."""

    __tablename__ = "corpora"

    id: Mapped[IntPK]
    team_id: Mapped[TeamFK]
    name: Mapped[Name]
    sha256: Mapped[str] = mapped_column(String(64), index=True)
    format: Mapped[str] = mapped_column(String(20))  # "txt" | "jsonl", after any gzip
    original_filename: Mapped[str] = mapped_column(String(255), default="")
    upload_bytes: Mapped[Count]  # as sent (compressed for .gz)
    size_bytes: Mapped[Count]  # as stored: UTF-8 text, documents joined by the separator
    stats: Mapped[JSONDict]  # see webapp/corpora/stats.py; the analysis job completes them
    analysis_job_id: Mapped[int | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), index=True
    )  # the latest "analyse" job for this corpus (its status is the page's "analysing…")
    created_at: Mapped[Created]


class Job(Base):
    """A job in the queue (see ``jobs/queue.py``): a training run, the analysis of a new corpus, or a leaderboard."""

    __tablename__ = "jobs"
    __table_args__ = (
        CheckConstraint(one_of("status", JOB_STATUSES), name="status"),
        CheckConstraint(one_of("kind", JOB_KINDS), name="kind"),
        Index("ix_jobs_status_id", "status", "id"),
    )

    id: Mapped[IntPK]
    team_id: Mapped[TeamFK]
    name: Mapped[Name]
    kind: Mapped[str] = mapped_column(String(20), default="train", server_default="train")
    status: Mapped[str] = mapped_column(String(20), default="queued")
    algorithm: Mapped[str] = mapped_column(String(40))  # "" for analysis and leaderboard jobs
    options: Mapped[JSONDict]
    corpus_ids: Mapped[JSONList]  # an analysis job has exactly one; a leaderboard's are in its row
    attempts: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[Timestamp]
    progress_stage: Mapped[str | None] = mapped_column(String(200))
    progress_current: Mapped[Count]
    progress_total: Mapped[Count]
    eta_seconds: Mapped[float | None]
    cancel_requested: Mapped[bool] = mapped_column(default=False)
    error: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[Created]
    started_at: Mapped[Timestamp]
    finished_at: Mapped[Timestamp]

    @property
    def finished(self) -> bool:
        """Whether the job will never change again (so the page stops polling)."""
        return self.status in FINISHED_STATUSES


class Tokenizer(Base):
    """A trained, imported or preset tokenizer; ``tokenizer_json`` is the engine's HF-compatible document.

    A preset (``tokenforge presets install``, see ``tokenizers/presets.py``) belongs to no team: every team
    may read it and none may change it. The check constraint keeps "no team" and "preset" the
    same thing, so a team's row can never lose its team and become readable by all.
    """

    __tablename__ = "tokenizers"
    __table_args__ = (
        CheckConstraint(one_of("source", TOKENIZER_SOURCES), name="source"),
        CheckConstraint("(team_id IS NULL AND preset IS NOT NULL AND source = 'preset') OR "
                        "(team_id IS NOT NULL AND preset IS NULL AND source != 'preset')", name="preset_has_no_team"),
    )

    id: Mapped[IntPK]
    team_id: Mapped[int | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    preset: Mapped[str | None] = mapped_column(String(40), unique=True)  # the encoding's name, e.g. "cl100k_base"
    name: Mapped[Name]
    algorithm: Mapped[str] = mapped_column(String(40))
    source: Mapped[str] = mapped_column(String(20), default="trained")
    config: Mapped[JSONDict]  # the training options, or import settings
    vocab_size: Mapped[int] = mapped_column(Integer)
    training_seconds: Mapped[float | None]
    job_id: Mapped[int | None] = mapped_column(
        ForeignKey("jobs.id", ondelete="SET NULL"), index=True
    )
    created_at: Mapped[Created]
    size_bytes: Mapped[int] = mapped_column(BigInteger, default=_stored_bytes_default)  # stored_bytes()
    # The large columns last: SQLite reads a column stored after them by walking their overflow
    # pages (migration 0007).
    tokenizer_json: Mapped[str] = mapped_column(Text)
    stats: Mapped[JSONDict]  # the engine's TrainResult.stats, per-merge stats included


class Leaderboard(Base):
    """A team's table of tokenizers × held-out corpora, filled in by its "leaderboard" job.

    The choices are kept with the names they had (``tokenizers``: ``[{"id", "name"}]``,
    ``corpora``: ``[{"id", "name"}]``), so the board still reads after a tokenizer or corpus is
    deleted. ``results`` maps ``"<corpus id>:<tokenizer id>"`` to the engine's figures for that
    pair, or ``{"error": sentence}``; the worker adds each pair as it finishes (``leaderboards/leaderboard.py``).
    """

    __tablename__ = "leaderboards"

    id: Mapped[IntPK]
    team_id: Mapped[TeamFK]
    name: Mapped[Name]
    tokenizers: Mapped[JSONList]
    corpora: Mapped[JSONList]
    max_bytes: Mapped[int] = mapped_column(BigInteger)  # the slice: the first bytes of each corpus
    results: Mapped[JSONDict]
    job_id: Mapped[int | None] = mapped_column(ForeignKey("jobs.id", ondelete="SET NULL"), index=True)
    created_at: Mapped[Created]


__all__ = ["ApiKey", "Base", "Corpus", "Invite", "Job", "Leaderboard", "Membership", "SharedText", "ShareLink",
           "Team", "Tokenizer", "UTCDateTime", "User", "utcnow"]
