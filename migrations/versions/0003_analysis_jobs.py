"""Analysis jobs: ``jobs.kind`` ("train" or "analyse") and ``corpora.analysis_job_id``.

Uploads no longer compute the expensive corpus statistics; an "analyse" job in the same queue
does, and the corpus points at its latest one so its page can say "analysing…" or why it
failed. Existing jobs are training jobs (the server default) and existing corpora already have
their full statistics, so no data changes on the way up. The downgrade deletes the analysis
jobs (the older worker would take them for training jobs); a corpus whose analysis had not
finished keeps only its cheap statistics.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22 21:22:06
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0003'
down_revision: str | Sequence[str] | None = '0002'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.add_column(sa.Column('kind', sa.String(length=20), server_default='train', nullable=False))
        batch_op.create_check_constraint(op.f('ck_jobs_kind'), "kind IN ('train', 'analyse')")

    with op.batch_alter_table('corpora', schema=None) as batch_op:
        batch_op.add_column(sa.Column('analysis_job_id', sa.Integer(), nullable=True))
        batch_op.create_index(batch_op.f('ix_corpora_analysis_job_id'), ['analysis_job_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_corpora_analysis_job_id_jobs'), 'jobs', ['analysis_job_id'], ['id'],
                                    ondelete='SET NULL')


def downgrade() -> None:
    with op.batch_alter_table('corpora', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('fk_corpora_analysis_job_id_jobs'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_corpora_analysis_job_id'))
        batch_op.drop_column('analysis_job_id')

    op.execute("DELETE FROM jobs WHERE kind = 'analyse'")
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_jobs_kind'), type_='check')
        batch_op.drop_column('kind')
