"""Create the corpora, jobs (the training queue) and tokenizers tables.

Revision ID: 0001
Revises:
Create Date: 2026-11-22 18:49:45
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0001'
down_revision: str | Sequence[str] | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('corpora',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('sha256', sa.String(length=64), nullable=False),
    sa.Column('format', sa.String(length=20), nullable=False),
    sa.Column('original_filename', sa.String(length=255), nullable=False),
    sa.Column('upload_bytes', sa.BigInteger(), nullable=False),
    sa.Column('size_bytes', sa.BigInteger(), nullable=False),
    sa.Column('stats', sa.JSON(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_corpora'))
    )
    with op.batch_alter_table('corpora', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_corpora_sha256'), ['sha256'], unique=False)

    op.create_table('jobs',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('status', sa.String(length=20), nullable=False),
    sa.Column('algorithm', sa.String(length=40), nullable=False),
    sa.Column('options', sa.JSON(), nullable=False),
    sa.Column('corpus_ids', sa.JSON(), nullable=False),
    sa.Column('attempts', sa.Integer(), nullable=False),
    sa.Column('worker_id', sa.String(length=200), nullable=True),
    sa.Column('heartbeat_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('progress_stage', sa.String(length=200), nullable=True),
    sa.Column('progress_current', sa.BigInteger(), nullable=False),
    sa.Column('progress_total', sa.BigInteger(), nullable=False),
    sa.Column('eta_seconds', sa.Double(), nullable=True),
    sa.Column('cancel_requested', sa.Boolean(), nullable=False),
    sa.Column('error', sa.Text(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('started_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('finished_at', sa.DateTime(timezone=True), nullable=True),
    sa.CheckConstraint("status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')",
                       name=op.f('ck_jobs_status')),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_jobs'))
    )
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.create_index('ix_jobs_status_id', ['status', 'id'], unique=False)

    op.create_table('tokenizers',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('algorithm', sa.String(length=40), nullable=False),
    sa.Column('source', sa.String(length=20), nullable=False),
    sa.Column('tokenizer_json', sa.Text(), nullable=False),
    sa.Column('config', sa.JSON(), nullable=False),
    sa.Column('stats', sa.JSON(), nullable=False),
    sa.Column('vocab_size', sa.Integer(), nullable=False),
    sa.Column('training_seconds', sa.Double(), nullable=True),
    sa.Column('job_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("source IN ('trained', 'imported')", name=op.f('ck_tokenizers_source')),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_tokenizers_job_id_jobs'), ondelete='SET NULL'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_tokenizers'))
    )
    with op.batch_alter_table('tokenizers', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_tokenizers_job_id'), ['job_id'], unique=False)



def downgrade() -> None:
    with op.batch_alter_table('tokenizers', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_tokenizers_job_id'))

    op.drop_table('tokenizers')
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_index('ix_jobs_status_id')

    op.drop_table('jobs')
    with op.batch_alter_table('corpora', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_corpora_sha256'))

    op.drop_table('corpora')
