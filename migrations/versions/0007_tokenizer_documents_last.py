"""The tokenizers table with its two large columns last, on SQLite.

SQLite stores a row's columns in order, and a value larger than a page continues on a chain of
overflow pages. Reading a column stored after ``tokenizer_json`` (a few megabytes for an open
model) or ``stats`` (half a megabyte of per-merge figures) walks that chain, even when the
query never asks for the large column: 0.75 ms a row for a 2 MB document, against 0.02 ms with
the large columns last. Every encode reads its tokenizer's row and every page lists the team's
tokenizers, so this cost was on every request. The table is copied with ``tokenizer_json`` and
``stats`` moved to the end (batch mode keeps the constraints and indexes; foreign keys are off
while migrating, ``migrations/env.py``). PostgreSQL keeps large values out of line (TOAST), so
there the order costs nothing and nothing changes. The order has no meaning to the code, so the
downgrade leaves it.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-26 23:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import op

revision: str = '0007'
down_revision: str | Sequence[str] | None = '0006'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LARGE = ("tokenizer_json", "stats")


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "sqlite":
        return
    columns = [row[1] for row in bind.exec_driver_sql("PRAGMA table_info(tokenizers)")]
    order = [name for name in columns if name not in LARGE] + list(LARGE)
    with op.batch_alter_table('tokenizers', recreate="always", partial_reordering=[tuple(order)]):
        pass


def downgrade() -> None:
    pass  # the column order means nothing to the code; the upgrade only made reads cheaper
