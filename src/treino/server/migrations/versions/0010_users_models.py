"""models: quarantine and deletion of a model an erasure marked (treino.server.quarantine); the row stays as a
tombstone with who and when

Revision ID: 0010_users_models
Revises: 0009_identity
Create Date: 2026-12-02 04:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010_users_models"
down_revision = "0009_identity"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("models") as t:
        t.add_column(sa.Column("quarantined_at", sa.Float(), nullable=True))
        t.add_column(sa.Column("quarantined_by", sa.String(100), nullable=True))
        t.add_column(sa.Column("deleted_at", sa.Float(), nullable=True))
        t.add_column(sa.Column("deleted_by", sa.String(100), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("models") as t:
        for name in ("deleted_by", "deleted_at", "quarantined_by", "quarantined_at"):
            t.drop_column(name)
