"""Sessions that end and a shared rate limiter: ``users.session_generation`` and ``rate_limits``.

Every login session now carries its user's session generation; logging out, changing the
password or signing out everywhere raises it, which ends every session issued before. Existing
users start at 0, which is what sessions from before this migration are read as, so nobody is
logged out by the upgrade. ``rate_limits`` holds the counters every web process shares (see
``webapp/web/ratelimit.py``); they are transient, so the downgrade simply drops them, and the older
code goes back to counting in each process's memory.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-23 17:05:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0004'
down_revision: str | Sequence[str] | None = '0003'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.add_column(sa.Column('session_generation', sa.Integer(), server_default='0', nullable=False))

    op.create_table('rate_limits',
    sa.Column('key', sa.String(length=64), nullable=False),
    sa.Column('window_start_ms', sa.BigInteger(), nullable=False),
    sa.Column('hits', sa.Integer(), nullable=False),
    sa.Column('previous', sa.Integer(), nullable=False),
    sa.Column('expires_ms', sa.BigInteger(), nullable=False),
    sa.PrimaryKeyConstraint('key', name=op.f('pk_rate_limits'))
    )
    with op.batch_alter_table('rate_limits', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_rate_limits_expires_ms'), ['expires_ms'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('rate_limits', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_rate_limits_expires_ms'))
    op.drop_table('rate_limits')

    with op.batch_alter_table('users', schema=None) as batch_op:
        batch_op.drop_column('session_generation')
