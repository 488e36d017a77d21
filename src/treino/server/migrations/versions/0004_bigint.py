"""64-bit integers everywhere on PostgreSQL: ids, steps, byte counts

PostgreSQL's `integer` is 32 bits: a checkpoint of 2 GiB or more, or a step or id past 2**31 - 1 that the API
accepts, failed there with "integer out of range". SQLite's INTEGER already holds 64 bits: nothing changes there.

Revision ID: 0004
Revises: 0003
Create Date: 2026-12-01 21:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def _integer_columns(type_name: str) -> list[tuple[str, str]]:
    rows = op.get_bind().execute(
        sa.text(
            "SELECT table_name, column_name FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND data_type = :t AND table_name <> 'alembic_version' "
            "ORDER BY table_name, column_name"
        ),
        {"t": type_name},
    )
    return [(str(t), str(c)) for t, c in rows]


def _sequences(type_name: str) -> list[str]:
    rows = op.get_bind().execute(
        sa.text(
            "SELECT sequencename FROM pg_sequences WHERE schemaname = current_schema() AND CAST(data_type AS text) = :t"
        ),
        {"t": type_name},
    )
    return [str(name) for (name,) in rows]


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for table, column in _integer_columns("integer"):
        op.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE BIGINT')
    for sequence in _sequences("integer"):  # the id sequences, which would stop at 2**31 - 1
        op.execute(f'ALTER SEQUENCE "{sequence}" AS BIGINT')


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for sequence in _sequences("bigint"):
        op.execute(f'ALTER SEQUENCE "{sequence}" AS INTEGER')
    for table, column in _integer_columns("bigint"):
        op.execute(f'ALTER TABLE "{table}" ALTER COLUMN "{column}" TYPE INTEGER')
