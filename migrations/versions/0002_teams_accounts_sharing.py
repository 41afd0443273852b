"""Accounts, teams, invites, API keys, share links; a team for every corpus, job and tokenizer.

Rows that existed before this migration had no owner. They are all given to one new team,
"Existing data", which has no members yet: the first account created afterwards (the admin)
becomes its owner (``auth.claim_orphan_teams``). The downgrade drops the new tables and the
``team_id`` columns, keeping every corpus, job and tokenizer.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22 19:10:35
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

OWNED = ("corpora", "jobs", "tokenizers")
EXISTING_TEAM = "Existing data"

revision: str = '0002'
down_revision: str | Sequence[str] | None = '0001'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table('teams',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_teams'))
    )
    op.create_table('users',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('email', sa.String(length=254), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('password_hash', sa.String(length=255), nullable=False),
    sa.Column('is_admin', sa.Boolean(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_users')),
    sa.UniqueConstraint('email', name=op.f('uq_users_email'))
    )
    op.create_table('api_keys',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('name', sa.String(length=200), nullable=False),
    sa.Column('prefix', sa.String(length=16), nullable=False),
    sa.Column('key_hash', sa.String(length=64), nullable=False),
    sa.Column('last_used_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_api_keys_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_api_keys')),
    sa.UniqueConstraint('key_hash', name=op.f('uq_api_keys_key_hash'))
    )
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_api_keys_user_id'), ['user_id'], unique=False)

    op.create_table('invites',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.Integer(), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=False),
    sa.Column('uses', sa.Integer(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_invites_created_by_users'),
                            ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_invites_team_id_teams'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_invites')),
    sa.UniqueConstraint('token', name=op.f('uq_invites_token'))
    )
    with op.batch_alter_table('invites', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_invites_team_id'), ['team_id'], unique=False)

    op.create_table('memberships',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('team_id', sa.Integer(), nullable=False),
    sa.Column('user_id', sa.Integer(), nullable=False),
    sa.Column('role', sa.String(length=20), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.CheckConstraint("role IN ('owner', 'member')", name=op.f('ck_memberships_role')),
    sa.ForeignKeyConstraint(['team_id'], ['teams.id'], name=op.f('fk_memberships_team_id_teams'), ondelete='CASCADE'),
    sa.ForeignKeyConstraint(['user_id'], ['users.id'], name=op.f('fk_memberships_user_id_users'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_memberships')),
    sa.UniqueConstraint('team_id', 'user_id', name='uq_memberships_team_id_user_id')
    )
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_memberships_team_id'), ['team_id'], unique=False)
        batch_op.create_index(batch_op.f('ix_memberships_user_id'), ['user_id'], unique=False)

    op.create_table('share_links',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('tokenizer_id', sa.Integer(), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('created_by', sa.Integer(), nullable=True),
    sa.Column('expires_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('revoked_at', sa.DateTime(timezone=True), nullable=True),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['created_by'], ['users.id'], name=op.f('fk_share_links_created_by_users'),
                            ondelete='SET NULL'),
    sa.ForeignKeyConstraint(['tokenizer_id'], ['tokenizers.id'], name=op.f('fk_share_links_tokenizer_id_tokenizers'),
                            ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_share_links')),
    sa.UniqueConstraint('token', name=op.f('uq_share_links_token'))
    )
    with op.batch_alter_table('share_links', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_share_links_tokenizer_id'), ['tokenizer_id'], unique=False)

    op.create_table('shared_texts',
    sa.Column('id', sa.Integer(), nullable=False),
    sa.Column('share_link_id', sa.Integer(), nullable=False),
    sa.Column('token', sa.String(length=64), nullable=False),
    sa.Column('text', sa.Text(), nullable=False),
    sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
    sa.ForeignKeyConstraint(['share_link_id'], ['share_links.id'],
                            name=op.f('fk_shared_texts_share_link_id_share_links'), ondelete='CASCADE'),
    sa.PrimaryKeyConstraint('id', name=op.f('pk_shared_texts')),
    sa.UniqueConstraint('token', name=op.f('uq_shared_texts_token'))
    )
    with op.batch_alter_table('shared_texts', schema=None) as batch_op:
        batch_op.create_index(batch_op.f('ix_shared_texts_share_link_id'), ['share_link_id'], unique=False)

    for table in OWNED:  # nullable first, so that existing rows can be given a team
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column('team_id', sa.Integer(), nullable=True))
    _adopt_existing_rows()
    for table in OWNED:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column('team_id', existing_type=sa.Integer(), nullable=False)
            batch_op.create_index(batch_op.f(f'ix_{table}_team_id'), ['team_id'], unique=False)
            batch_op.create_foreign_key(batch_op.f(f'fk_{table}_team_id_teams'), 'teams', ['team_id'], ['id'],
                                        ondelete='CASCADE')


def _adopt_existing_rows() -> None:
    """Give every row that predates teams to one new team (claimed by the first account)."""
    bind = op.get_bind()
    if not any(bind.execute(sa.text(f"SELECT 1 FROM {t} LIMIT 1")).first() for t in OWNED):
        return
    teams = sa.table('teams', sa.column('id', sa.Integer()), sa.column('name', sa.String()),
                     sa.column('created_at', sa.DateTime(timezone=True)))
    bind.execute(teams.insert().values(name=EXISTING_TEAM, created_at=dt.datetime.now(dt.timezone.utc)))
    team_id = bind.execute(sa.select(sa.func.max(teams.c.id))).scalar_one()
    for table in OWNED:
        bind.execute(sa.text(f"UPDATE {table} SET team_id = :team").bindparams(team=team_id))


def downgrade() -> None:
    for table in reversed(OWNED):
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_constraint(batch_op.f(f'fk_{table}_team_id_teams'), type_='foreignkey')
            batch_op.drop_index(batch_op.f(f'ix_{table}_team_id'))
            batch_op.drop_column('team_id')

    with op.batch_alter_table('shared_texts', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_shared_texts_share_link_id'))

    op.drop_table('shared_texts')
    with op.batch_alter_table('share_links', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_share_links_tokenizer_id'))

    op.drop_table('share_links')
    with op.batch_alter_table('memberships', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_memberships_user_id'))
        batch_op.drop_index(batch_op.f('ix_memberships_team_id'))

    op.drop_table('memberships')
    with op.batch_alter_table('invites', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_invites_team_id'))

    op.drop_table('invites')
    with op.batch_alter_table('api_keys', schema=None) as batch_op:
        batch_op.drop_index(batch_op.f('ix_api_keys_user_id'))

    op.drop_table('api_keys')
    op.drop_table('users')
    op.drop_table('teams')
