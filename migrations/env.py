"""Alembic environment: runs migrations against ``sqlalchemy.url`` with Tokenforge's metadata.

``render_as_batch`` is on for SQLite, whose ALTER TABLE cannot change constraints, so every
migration works on both SQLite and PostgreSQL. The URL is set by ``webapp.store.db`` (or the
``DATABASE_URL`` / ``TOKENFORGE_DATA_DIR`` settings when run through the ``alembic`` command
with ``-c migrations/alembic.ini``).
"""

from __future__ import annotations

from typing import Literal

from alembic import context
from sqlalchemy import Connection

from webapp.store.db import make_engine
from webapp.store.models import Base, UTCDateTime
from webapp.web.config import finish_settings, load_settings

config = context.config
target_metadata = Base.metadata


def _url() -> str:
    url = config.get_main_option("sqlalchemy.url")
    if url:
        return url
    settings = finish_settings(load_settings())
    return str(settings["DATABASE_URL"])


def _render_item(type_: str, obj: object, autogen_context: object) -> str | Literal[False]:
    """Render our UTC timestamp type as a plain DateTime so migrations never import app code."""
    if type_ == "type" and isinstance(obj, UTCDateTime):
        return "sa.DateTime(timezone=True)"
    return False


def _configure(**kwargs: object) -> None:
    context.configure(
        target_metadata=target_metadata,
        render_as_batch=True,
        compare_type=True,
        render_item=_render_item,
        **kwargs,  # type: ignore[arg-type]
    )


def run_migrations_offline() -> None:
    """Emit SQL to stdout instead of connecting (``alembic upgrade --sql``)."""
    _configure(url=_url(), literal_binds=True, dialect_opts={"paramstyle": "named"})
    with context.begin_transaction():
        context.run_migrations()


def _run_with(connection: Connection) -> None:
    _configure(connection=connection)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    """Connect (with the app's SQLite pragmas) and migrate inside one transaction.

    On SQLite, foreign keys are off while migrating. Why: batch mode changes a table by copying it
    and dropping the old one, and with foreign keys on, that DROP first deletes every row, which
    fires ``ON DELETE`` on the tables pointing at it: recreating ``tokenizers`` deleted every share
    link and cleared their jobs. SQLite ignores the pragma inside a transaction, so it is set
    before one begins; ``PRAGMA foreign_key_check`` then proves no reference was left dangling.
    """
    engine = make_engine(_url())
    try:
        with engine.connect() as connection:
            sqlite = connection.dialect.name == "sqlite"
            if sqlite:
                connection.exec_driver_sql("PRAGMA foreign_keys=OFF")
                connection.commit()
            _run_with(connection)
            if sqlite:
                dangling = connection.exec_driver_sql("PRAGMA foreign_key_check").fetchall()
                if dangling:
                    raise RuntimeError(f"The migration left references to missing rows: {dangling[:5]}")
                connection.exec_driver_sql("PRAGMA foreign_keys=ON")
                connection.commit()
    finally:
        engine.dispose()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
