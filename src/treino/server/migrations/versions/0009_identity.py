"""identity: canonical subject ids (old pseudonyms tied to the canonical ones by subject.alias records), tombstones
of erased subjects, and where a dataset's retention period starts

Revision ID: 0009_identity
Revises: 0008_quotas
Create Date: 2026-12-02 05:00:00

The audit chain is never rewritten: with the server key (treino.server.db.migrate passes it), the upgrade appends one
`subject.alias` record per old pseudonym in use and re-pseudonymises the erasure rows (treino.govern.aliases). Run
without the key (alembic on the command line), it only changes the schema: subject queries still find the old
pseudonyms, computed from the id typed (treino.govern.aliases.subject_pseudonyms).
"""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import op
from sqlalchemy.orm import Session

revision = "0009_identity"
down_revision = "0008_quotas"
branch_labels = None
depends_on = None

BigInt = sa.BigInteger().with_variant(sa.Integer(), "sqlite")  # treino.orm.BigInt


def upgrade() -> None:
    op.create_table(
        "erased_subjects",
        sa.Column("id", BigInt, primary_key=True),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("dataset", sa.String(100), nullable=True),
        sa.Column("erasure_id", BigInt, sa.ForeignKey("erasures.id"), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
    )
    with op.batch_alter_table("erased_subjects", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_erased_subjects_digest"), ["digest"], unique=False)
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.add_column(sa.Column("retention_from", sa.Float(), nullable=True))
    config = op.get_context().config
    attributes = config.attributes if config is not None else {}
    key, store = attributes.get("server_key"), attributes.get("store")
    if key is not None and store is not None:
        from treino.govern.aliases import realias
        from treino.govern.audit import AuditLog

        session = Session(bind=op.get_bind())
        realias(session, key, Path(store), AuditLog(key))
        session.flush()


def downgrade() -> None:
    with op.batch_alter_table("datasets", schema=None) as batch_op:
        batch_op.drop_column("retention_from")
    with op.batch_alter_table("erased_subjects", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_erased_subjects_digest"))
    op.drop_table("erased_subjects")
