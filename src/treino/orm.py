"""The declarative base every table derives from.

It lives here, on neutral ground, so that `treino.server.db` (jobs, attempts, tokens) and `treino.govern.models`
(datasets, grants, the audit chain) share one metadata, and so one Alembic history, without importing each other.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON
from sqlalchemy.orm import DeclarativeBase


class Base(DeclarativeBase):
    # Times are unix seconds (float): one representation that SQLite and PostgreSQL compare the same way.
    type_annotation_map = {dict[str, Any]: JSON, list[Any]: JSON}  # noqa: RUF012 (SQLAlchemy's documented form)
