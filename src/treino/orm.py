"""The declarative base every table derives from.

It lives here, on neutral ground, so that `treino.server.db` (jobs, attempts, tokens) and `treino.govern.models`
(datasets, grants, the audit chain) share one metadata, and so one Alembic history, without importing each other.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Integer
from sqlalchemy.orm import DeclarativeBase

# Every integer column holds 64 bits, as SQLite's INTEGER does: ids, steps and byte counts that the API accepts up to
# 2**63 - 1 must not overflow PostgreSQL's 32-bit `integer` (a 3 GiB checkpoint would). SQLite keeps INTEGER, the
# only type its rowid primary keys autoincrement with.
BigInt = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    # Times are unix seconds (float): one representation that SQLite and PostgreSQL compare the same way.
    type_annotation_map = {int: BigInt, dict[str, Any]: JSON, list[Any]: JSON}  # noqa: RUF012 (SQLAlchemy's form)
