"""Preset tokenizers: ``tokenizers.preset`` and tokenizers that belong to no team.

``tokenforge presets install`` adds OpenAI's encodings (r50k, p50k, cl100k, o200k) as tokenizer
rows with no team, readable by every team and changeable by none (``webapp/tokenizers/presets.py``). A
check constraint ties the three columns together: a row has no team exactly when it is a preset
(``preset`` names the encoding, ``source`` is ``'preset'``). The downgrade deletes the presets
(``tokenforge presets install`` brings them back) before restoring ``team_id NOT NULL``.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-23 19:50:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = '0005'
down_revision: str | Sequence[str] | None = '0004'
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

PRESET_RULE = ("(team_id IS NULL AND preset IS NOT NULL AND source = 'preset') OR "
               "(team_id IS NOT NULL AND preset IS NULL AND source != 'preset')")


def upgrade() -> None:
    with op.batch_alter_table('tokenizers', schema=None) as batch_op:
        batch_op.add_column(sa.Column('preset', sa.String(length=40), nullable=True))
        batch_op.alter_column('team_id', existing_type=sa.Integer(), nullable=True)
        batch_op.create_unique_constraint(batch_op.f('uq_tokenizers_preset'), ['preset'])
        batch_op.drop_constraint(batch_op.f('ck_tokenizers_source'), type_='check')
        batch_op.create_check_constraint(op.f('ck_tokenizers_source'), "source IN ('trained', 'imported', 'preset')")
        batch_op.create_check_constraint(op.f('ck_tokenizers_preset_has_no_team'), PRESET_RULE)


def downgrade() -> None:
    op.execute("DELETE FROM tokenizers WHERE preset IS NOT NULL")
    with op.batch_alter_table('tokenizers', schema=None) as batch_op:
        batch_op.drop_constraint(batch_op.f('ck_tokenizers_preset_has_no_team'), type_='check')
        batch_op.drop_constraint(batch_op.f('ck_tokenizers_source'), type_='check')
        batch_op.create_check_constraint(op.f('ck_tokenizers_source'), "source IN ('trained', 'imported')")
        batch_op.drop_constraint(batch_op.f('uq_tokenizers_preset'), type_='unique')
        batch_op.alter_column('team_id', existing_type=sa.Integer(), nullable=False)
        batch_op.drop_column('preset')
