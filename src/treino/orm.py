"""The declarative base every table derives from.

It lives here, on neutral ground, so that `treino.server.db` (jobs, attempts, tokens) and `treino.govern.models`
(datasets, grants, the audit chain) share one metadata, and so one Alembic history, without importing each other;
and `database_fault`, what a database error means (a full disk, a corrupt database), which both read as well.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Literal

from sqlalchemy import JSON, BigInteger, Integer
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import DeclarativeBase

# Every integer column holds 64 bits, as SQLite's INTEGER does: ids, steps and byte counts that the API accepts up to
# 2**63 - 1 must not overflow PostgreSQL's 32-bit `integer` (a 3 GiB checkpoint would). SQLite keeps INTEGER, the
# only type its rowid primary keys autoincrement with.
BigInt = BigInteger().with_variant(Integer(), "sqlite")


class Base(DeclarativeBase):
    # Times are unix seconds (float): one representation that SQLite and PostgreSQL compare the same way.
    type_annotation_map = {int: BigInt, dict[str, Any]: JSON, list[Any]: JSON}  # noqa: RUF012 (SQLAlchemy's form)


# SQLite's primary result codes (https://www.sqlite.org/rescode.html) and PostgreSQL's SQLSTATEs
# (https://www.postgresql.org/docs/current/errcodes-appendix.html) for a full disk and a corrupt database.
SQLITE_CORRUPT, SQLITE_FULL, SQLITE_NOTADB = 11, 13, 26
PG_DISK_FULL = "53100"
PG_CORRUPT = frozenset({"XX001", "XX002"})  # data_corrupted, index_corrupted


def database_fault(exc: BaseException) -> Literal["full", "corrupt"] | None:
    """What `exc` says of the database: "full" when it could not write for want of disk space, "corrupt" when what
    it read is damaged (SQLite's "database disk image is malformed", "file is not a database"), else None. `exc` is
    SQLAlchemy's wrapper or the driver's own error (a raw sqlite3 cursor raises those)."""
    orig = exc.orig if isinstance(exc, DBAPIError) else exc
    if isinstance(orig, sqlite3.Error):
        code = (getattr(orig, "sqlite_errorcode", 0) or 0) & 0xFF  # the primary code of an extended one
        return "full" if code == SQLITE_FULL else "corrupt" if code in (SQLITE_CORRUPT, SQLITE_NOTADB) else None
    sqlstate = getattr(orig, "sqlstate", None)
    return "full" if sqlstate == PG_DISK_FULL else "corrupt" if sqlstate in PG_CORRUPT else None
