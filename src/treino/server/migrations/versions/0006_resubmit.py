"""continue, don't restart: a job records the job and step it continues from; a dataset version a job's starting
checkpoint was trained on is an inherited edge of its lineage (job_datasets.inherited_from)

Revision ID: 0006_resubmit
Revises: 0005
Create Date: 2026-12-02 01:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006_resubmit"
down_revision = "0005"
branch_labels = None
depends_on = None

BigInt = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # treino.orm.BigInt


def upgrade() -> None:
    # Plain columns, no foreign keys: SQLite cannot add one to an existing table without copying it, and jobs are
    # never deleted.
    op.add_column("jobs", sa.Column("continues_from", BigInt, nullable=True))
    op.add_column("jobs", sa.Column("continues_from_step", BigInt, nullable=True))
    op.add_column("job_datasets", sa.Column("inherited_from", BigInt, nullable=True))


def downgrade() -> None:
    op.drop_column("job_datasets", "inherited_from")
    op.drop_column("jobs", "continues_from_step")
    op.drop_column("jobs", "continues_from")
