"""idempotent submit: a table of Idempotency-Keys per user; jobs listed by state newest first use an index

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 22:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None

BigInt = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # treino.orm.BigInt: 64 bits, SQLite's rowid alias


def upgrade() -> None:
    op.create_table(
        "submit_keys",
        sa.Column("id", BigInt, nullable=False),
        sa.Column("owner", sa.String(length=100), nullable=False),
        sa.Column("key", sa.String(length=200), nullable=False),
        sa.Column("spec_sha256", sa.String(length=64), nullable=False),
        sa.Column("job_id", BigInt, nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.ForeignKeyConstraint(["job_id"], ["jobs.id"]),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("owner", "key", name="uq_submit_keys_owner_key"),
    )
    op.create_index("ix_jobs_state_id", "jobs", ["state", "id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_jobs_state_id", table_name="jobs")
    op.drop_table("submit_keys")
