"""governance: users, grants, datasets, versions, transfers, lineage, erasures, audit

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 22:26:32.297555
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:

    op.create_table(
        "audit_checkpoints",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.Column("hmac", sa.String(length=64), nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "audit_records",
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("time", sa.Float(), nullable=False),
        sa.Column("actor", sa.String(length=100), nullable=False),
        sa.Column("action", sa.String(length=40), nullable=False),
        sa.Column("dataset", sa.String(length=100), nullable=True),
        sa.Column("subject", sa.String(length=64), nullable=True),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column("detail", sa.JSON(), nullable=False),
        sa.Column("prev_hash", sa.String(length=64), nullable=False),
        sa.Column("hash", sa.String(length=64), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    with op.batch_alter_table("audit_records", schema=None) as batch_op:
        batch_op.create_index("ix_audit_dataset", ["dataset"], unique=False)
        batch_op.create_index("ix_audit_subject", ["subject"], unique=False)

    op.create_table(
        "datasets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("format", sa.String(length=10), nullable=False),
        sa.Column("legal_basis", sa.String(length=40), nullable=False),
        sa.Column("purposes", sa.JSON(), nullable=False),
        sa.Column("personal_data", sa.Boolean(), nullable=False),
        sa.Column("sensitive", sa.Boolean(), nullable=False),
        sa.Column("residency", sa.String(length=10), nullable=False),
        sa.Column("retention_days", sa.Integer(), nullable=True),
        sa.Column("subject_column", sa.String(length=100), nullable=True),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "erasures",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("subject_pseudonym", sa.String(length=64), nullable=False),
        sa.Column("dataset", sa.String(length=100), nullable=True),
        sa.Column("requested_by", sa.String(length=100), nullable=False),
        sa.Column("requested_at", sa.Float(), nullable=False),
        sa.Column("deadline_at", sa.Float(), nullable=False),
        sa.Column("report", sa.JSON(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("erasures", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_erasures_subject_pseudonym"), ["subject_pseudonym"], unique=False)

    op.create_table(
        "transfers",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("site", sa.String(length=40), nullable=False),
        sa.Column("mechanism", sa.String(length=40), nullable=False),
        sa.Column("reference", sa.String(length=200), nullable=False),
        sa.Column("signed_on", sa.String(length=10), nullable=False),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "users",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=100), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("disabled_at", sa.Float(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("name"),
    )
    op.create_table(
        "dataset_versions",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("dataset_id", sa.Integer(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("sha256", sa.String(length=64), nullable=False),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("bytes", sa.Integer(), nullable=False),
        sa.Column("rows", sa.Integer(), nullable=False),
        sa.Column("reason", sa.String(length=200), nullable=False),
        sa.Column("parent_id", sa.Integer(), nullable=True),
        sa.Column("created_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("purged_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["dataset_id"],
            ["datasets.id"],
        ),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["dataset_versions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("dataset_id", "number"),
    )
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_dataset_versions_dataset_id"), ["dataset_id"], unique=False)

    op.create_table(
        "grants",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("user_id", sa.Integer(), nullable=False),
        sa.Column("dataset", sa.String(length=100), nullable=False),
        sa.Column("purposes", sa.JSON(), nullable=False),
        sa.Column("granted_by", sa.String(length=100), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("revoked_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"],
            ["users.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_grants_user_id"), ["user_id"], unique=False)

    op.create_table(
        "models",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("step", sa.Integer(), nullable=True),
        sa.Column("path", sa.Text(), nullable=False),
        sa.Column("personal_data", sa.Boolean(), nullable=False),
        sa.Column("sensitive", sa.Boolean(), nullable=False),
        sa.Column("residency", sa.String(length=10), nullable=False),
        sa.Column("created_at", sa.Float(), nullable=False),
        sa.Column("erasure_id", sa.Integer(), nullable=True),
        sa.Column("erasure_note", sa.Text(), nullable=True),
        sa.ForeignKeyConstraint(
            ["erasure_id"],
            ["erasures.id"],
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_models_job_id"), ["job_id"], unique=False)

    op.create_table(
        "job_datasets",
        sa.Column("id", sa.Integer(), nullable=False),
        sa.Column("job_id", sa.Integer(), nullable=False),
        sa.Column("version_id", sa.Integer(), nullable=False),
        sa.Column("purpose", sa.String(length=100), nullable=False),
        sa.Column("pinned_at", sa.Float(), nullable=False),
        sa.Column("first_read_at", sa.Float(), nullable=True),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["jobs.id"],
        ),
        sa.ForeignKeyConstraint(
            ["version_id"],
            ["dataset_versions.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    with op.batch_alter_table("job_datasets", schema=None) as batch_op:
        batch_op.create_index(batch_op.f("ix_job_datasets_job_id"), ["job_id"], unique=False)
        batch_op.create_index(batch_op.f("ix_job_datasets_version_id"), ["version_id"], unique=False)

    with op.batch_alter_table("tokens", schema=None) as batch_op:
        batch_op.add_column(sa.Column("user_id", sa.Integer(), nullable=True))
        batch_op.add_column(sa.Column("last_used_at", sa.Float(), nullable=True))
        batch_op.create_foreign_key("fk_tokens_user_id", "users", ["user_id"], ["id"])


def downgrade() -> None:

    with op.batch_alter_table("tokens", schema=None) as batch_op:
        # WARNING: constraint name is None; this directive will fail as
        # rendered.  Add a name, or use a naming convention; see
        # https://alembic.sqlalchemy.org/en/latest/naming.html
        batch_op.drop_constraint("fk_tokens_user_id", type_="foreignkey")
        batch_op.drop_column("last_used_at")
        batch_op.drop_column("user_id")

    with op.batch_alter_table("job_datasets", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_job_datasets_version_id"))
        batch_op.drop_index(batch_op.f("ix_job_datasets_job_id"))

    op.drop_table("job_datasets")
    with op.batch_alter_table("models", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_models_job_id"))

    op.drop_table("models")
    with op.batch_alter_table("grants", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_grants_user_id"))

    op.drop_table("grants")
    with op.batch_alter_table("dataset_versions", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_dataset_versions_dataset_id"))

    op.drop_table("dataset_versions")
    op.drop_table("users")
    op.drop_table("transfers")
    with op.batch_alter_table("erasures", schema=None) as batch_op:
        batch_op.drop_index(batch_op.f("ix_erasures_subject_pseudonym"))

    op.drop_table("erasures")
    op.drop_table("datasets")
    with op.batch_alter_table("audit_records", schema=None) as batch_op:
        batch_op.drop_index("ix_audit_subject")
        batch_op.drop_index("ix_audit_dataset")

    op.drop_table("audit_records")
    op.drop_table("audit_checkpoints")
