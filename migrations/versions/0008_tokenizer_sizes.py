"""``tokenizers.size_bytes``: what each tokenizer row stores, for the team's tokenizer quota.

A team's imports and trainings are bounded by ``TOKENFORGE_TEAM_TOKENIZER_BYTES``; summing the
documents' lengths on every request would read every document, so each row keeps its size, set
when it is added (``models.stored_bytes``: the document, the statistics and the settings). The
existing rows get theirs from the stored text. On SQLite the column goes before the two large
columns (the order migration 0007 made); PostgreSQL appends it, which costs nothing there.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-27 03:20:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0008'
down_revision: str | Sequence[str] | None = '0007'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

LARGE = ("tokenizer_json", "stats")


def upgrade() -> None:
    bind = op.get_bind()
    column = sa.Column('size_bytes', sa.BigInteger(), nullable=False, server_default='0')
    if bind.dialect.name == "sqlite":
        columns = [row[1] for row in bind.exec_driver_sql("PRAGMA table_info(tokenizers)")]
        order = [name for name in columns if name not in LARGE] + ['size_bytes', *LARGE]
        with op.batch_alter_table('tokenizers', recreate="always", partial_reordering=[tuple(order)]) as batch:
            batch.add_column(column)
        op.execute("UPDATE tokenizers SET size_bytes = length(CAST(tokenizer_json AS BLOB)) "
                   "+ length(CAST(stats AS BLOB)) + length(CAST(config AS BLOB))")
    else:
        op.add_column('tokenizers', column)
        op.execute("UPDATE tokenizers SET size_bytes = octet_length(tokenizer_json) "
                   "+ octet_length(stats::text) + octet_length(config::text)")


def downgrade() -> None:
    with op.batch_alter_table('tokenizers') as batch:
        batch.drop_column('size_bytes')
