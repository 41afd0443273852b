"""Leaderboards: the ``leaderboards`` table, the "leaderboard" job kind, share links to a leaderboard.

A leaderboard is a team's table of tokenizers × held-out corpora, filled in by a job of the new
kind "leaderboard" (``webapp/leaderboards/child.py``); its results are one JSON column. A share
link now points at a tokenizer or at a leaderboard: ``share_links.tokenizer_id`` becomes
nullable, ``leaderboard_id`` is added, and a check constraint keeps exactly one of them set.
Existing rows are all tokenizer links and training or analysis jobs, so no data changes on the
way up. The downgrade deletes the leaderboard links and jobs (the older code knows neither)
before restoring the old constraints.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-23 20:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0006'
down_revision: str | Sequence[str] | None = '0005'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

ONE_TARGET = "(tokenizer_id IS NULL) <> (leaderboard_id IS NULL)"


def upgrade() -> None:
    op.create_table('leaderboards',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('tokenizers', sa.JSON(), nullable=False),
    sa.Column('corpora', sa.JSON(), nullable=False),
    sa.Column('max_bytes', sa.BigInteger(), nullable=False),
    sa.Column('results', sa.JSON(), nullable=False),
    sa.Column('job_id', sa.Integer(), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['job_id'], ['jobs.id'], name=op.f('fk_leaderboards_job_id_jobs'), ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_leaderboards_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_leaderboards'))
    )
    with op.batch_alter_table('leaderboards', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_leaderboards_job_id'), ['job_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_leaderboards_team_id'), ['team_id'], unique=False)

    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_jobs_kind'), type_='check')
        batch_op.create_check_constraint(op.f('ck_jobs_kind'), "kind IN ('train', 'analyse', 'leaderboard')")

    with op.batch_alter_table('share_links', schema=None) as batch_op:
        batch_op.add_column(sa.Column('leaderboard_id', sa.Integer(), nullable=True))
        batch_op.alter_column('tokenizer_id', existing_type=sa.Integer(), nullable=True)
        batch_op.create_index(batch_op.f('ix_share_links_leaderboard_id'), ['leaderboard_id'], unique=False)
        batch_op.create_foreign_key(batch_op.f('fk_share_links_leaderboard_id_leaderboards'), 'leaderboards',
                                    ['leaderboard_id'], ['id'], ondelete='CASCADE')
        batch_op.create_check_constraint(op.f('ck_share_links_one_target'), ONE_TARGET)


def downgrade() -> None:
    op.execute("DELETE FROM share_links WHERE leaderboard_id IS NOT NULL")
    with op.batch_alter_table('share_links', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_share_links_one_target'), type_='check')
        batch_op.drop_constraint(batch_op.f('fk_share_links_leaderboard_id_leaderboards'), type_='foreignkey')
        batch_op.drop_index(batch_op.f('ix_share_links_leaderboard_id'))
        batch_op.alter_column('tokenizer_id', existing_type=sa.Integer(), nullable=False)
        batch_op.drop_column('leaderboard_id')

    op.execute("DELETE FROM jobs WHERE kind = 'leaderboard'")
    with op.batch_alter_table('jobs', schema=None) as batch_op:
        batch_op.drop_constraint(op.f('ck_jobs_kind'), type_='check')
        batch_op.create_check_constraint(op.f('ck_jobs_kind'), "kind IN ('train', 'analyse')")

    with op.batch_alter_table('leaderboards', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_leaderboards_team_id'))
        batch_op.drop_index(batch_op.f('ix_leaderboards_job_id'))
    op.drop_table('leaderboards')
