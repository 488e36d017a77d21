"""metric keys: each key a job's metric points hold, once, so a POST can bound a job's keys without reading its
points (filled here from the points already stored)

Revision ID: 0007_metric_keys
Revises: 0006_resubmit
Create Date: 2026-12-02 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007_metric_keys"
down_revision = "0006_resubmit"
branch_labels = None
depends_on = None

BigInt = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # treino.orm.BigInt


def upgrade() -> None:
    op.create_table(
        "metric_keys",
        sa.Column("job_id", BigInt, sa.ForeignKey("jobs.id"), primary_key=True),
        sa.Column("key", sa.Text(), primary_key=True),
    )
    # json_each reads a point's keys on both SQLite and PostgreSQL (a json column there)
    op.execute(
        "INSERT INTO metric_keys (job_id, key) "
        'SELECT DISTINCT p.job_id, kv.key FROM metric_points p, json_each(p."values") kv'
    )


def downgrade() -> None:
    op.drop_table("metric_keys")
