"""quotas: an admin's limits on a user's or a role's GPU-hours per month and GPUs held at once
(treino.server.quotas)

Revision ID: 0008_quotas
Revises: 0007_metric_keys
Create Date: 2026-12-02 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008_quotas"
down_revision = "0007_metric_keys"
branch_labels = None
depends_on = None

BigInt = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # treino.orm.BigInt


def upgrade() -> None:
    op.create_table(
        "quotas",
        sa.Column("id", BigInt, primary_key=True),
        sa.Column("kind", sa.String(10), nullable=False),
        sa.Column("name", sa.String(100), nullable=False),
        sa.Column("gpu_hours_month", sa.Float(), nullable=True),
        sa.Column("concurrent_gpus", BigInt, nullable=True),
        sa.Column("set_by", sa.String(100), nullable=False),
        sa.Column("set_at", sa.Float(), nullable=False),
        sa.UniqueConstraint("kind", "name", name="uq_quotas_kind_name"),
    )


def downgrade() -> None:
    op.drop_table("quotas")
