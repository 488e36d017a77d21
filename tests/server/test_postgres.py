"""treino's Alembic migrations on a real PostgreSQL 15 (the session's `postgres`, tests/conftest.py; skipped, or
failed under CI=true, without it): a fresh database gets every table exactly as the models declare it, a second
migrate changes nothing, and the whole history downgrades to nothing and upgrades back."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlalchemy.engine import Engine

from treino.orm import Base
from treino.server import db
from treino.server.db import Checkpoint, Job, all_models, make_engine, make_sessionmaker, migrate

MIGRATIONS = Path(db.__file__).with_name("migrations")


def alembic_config(connection: Connection | None = None) -> Config:
    """What treino.server.db.migrate configures, for the commands it does not run (downgrade)."""
    cfg = Config()
    cfg.set_main_option("script_location", str(MIGRATIONS))
    cfg.attributes["connection"] = connection
    return cfg


def schema(engine: Engine) -> dict[str, Any]:
    """Every table's columns (name, type, nullability), indexes and foreign keys, as the database reports them."""
    i = inspect(engine)
    return {
        t: (
            [(c["name"], str(c["type"]), c["nullable"]) for c in i.get_columns(t)],
            sorted((x["name"], tuple(x["column_names"])) for x in i.get_indexes(t)),
            sorted((fk["referred_table"], tuple(fk["constrained_columns"])) for fk in i.get_foreign_keys(t)),
        )
        for t in sorted(i.get_table_names())
    }


def revision(engine: Engine) -> str | None:
    with engine.connect() as c:
        return c.execute(text("SELECT version_num FROM alembic_version")).scalar_one_or_none()


def model_drift(engine: Engine) -> list[Any]:
    """What Alembic's autogenerate would change to make the database match the models: nothing, if all is well."""
    all_models()
    with engine.connect() as c:
        return list(compare_metadata(MigrationContext.configure(c, opts={"compare_type": True}), Base.metadata))


@pytest.fixture
def engine(postgres: Any) -> Iterator[Engine]:
    """A fresh, empty PostgreSQL database."""
    engine = make_engine(postgres.create_database())
    assert engine.dialect.name == "postgresql"
    yield engine
    engine.dispose()


def test_migrate_creates_every_table_as_the_models_declare(engine: Engine) -> None:
    migrate(engine)
    all_models()
    assert set(inspect(engine).get_table_names()) == {*Base.metadata.tables, "alembic_version"}
    assert model_drift(engine) == []
    assert revision(engine) == ScriptDirectory.from_config(alembic_config()).get_current_head()


def test_a_second_migrate_is_a_no_op(engine: Engine) -> None:
    migrate(engine)
    with make_sessionmaker(engine).begin() as s:
        s.add(Job(name="kept", spec={"command": ["true"]}, owner="ana", gpus=0, job_token_hash="0" * 64))
    before, head = schema(engine), revision(engine)
    migrate(engine)
    assert (schema(engine), revision(engine)) == (before, head)
    with make_sessionmaker(engine)() as s:
        assert [j.name for j in s.query(Job)] == ["kept"]


def test_downgrade_to_base_and_upgrade_again(engine: Engine) -> None:
    migrate(engine)
    fresh = schema(engine)
    with engine.begin() as c:
        command.downgrade(alembic_config(c), "base")
    assert set(inspect(engine).get_table_names()) == {"alembic_version"}
    assert revision(engine) is None
    migrate(engine)
    assert schema(engine) == fresh
    assert model_drift(engine) == []


def test_every_integer_column_is_64_bit(engine: Engine) -> None:
    """The API accepts integers up to 2**63 - 1 (settings.INT_MAX); PostgreSQL's `integer` is 32 bits and would
    answer a checkpoint of 2 GiB, or a step or id past 2**31 - 1, with "integer out of range" (migration 0004)."""
    migrate(engine)
    with engine.connect() as c:
        narrow = c.execute(
            text(
                "SELECT table_name || '.' || column_name FROM information_schema.columns "
                "WHERE table_schema = current_schema() AND data_type IN ('smallint', 'integer') ORDER BY 1"
            )
        )
        assert list(narrow.scalars()) == []
    with make_sessionmaker(engine).begin() as s:
        job = Job(id=2**40, name="llama", spec={}, owner="ana", gpus=1, job_token_hash="0" * 64)
        s.add(job)
        s.flush()
        s.add(Checkpoint(job_id=job.id, attempt=1, step=2**33, path="/ckpt/step-8589934592", bytes=16 * 2**30))
    with make_sessionmaker(engine)() as s:
        ckpt = s.query(Checkpoint).one()
        assert (ckpt.job_id, ckpt.step, ckpt.bytes) == (2**40, 2**33, 16 * 2**30)
