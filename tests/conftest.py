"""The database the server and governance tests run on: `database`, one run per kind, [sqlite] and [postgresql].

[postgresql] runs on one private PostgreSQL 15 for the whole session (`postgres`: scripts/local_postgres.py, initdb
once, 127.0.0.1 on a free port, fsync off), and each server gets a fresh database in it. Without PostgreSQL
(not installed, or no psycopg) those variants are skipped, saying why; under CI=true they must run, so they fail
instead (the policy of tests/cluster's Slurm tests).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATABASES = ("sqlite", "postgresql")


def _load_local_postgres() -> ModuleType:
    spec = importlib.util.spec_from_file_location("local_postgres", ROOT / "scripts" / "local_postgres.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # before exec: its dataclass looks itself up there
    spec.loader.exec_module(module)
    return module


local_postgres = _load_local_postgres()


def why_no_postgres() -> str | None:
    reason: str | None = local_postgres.why_unavailable()
    if reason is None and importlib.util.find_spec("psycopg") is None:
        reason = "the driver psycopg is not installed. To fix: pip install -e '.[postgres]' (`make venv` does)"
    return reason


@dataclass(frozen=True)
class Database:
    """Which database servers get: `kind` "sqlite" (each server its data dir's own file) or "postgresql" (each a
    fresh database on `postgres`, a local_postgres.Instance)."""

    kind: str = "sqlite"
    postgres: Any = None

    def new_url(self) -> str | None:
        """A fresh database's URL for `treino server --db`; None for SQLite (the server's default)."""
        return self.postgres.create_database() if self.postgres else None


@pytest.fixture(scope="session")
def postgres() -> Iterator[Any]:
    """A private PostgreSQL for the session (a local_postgres.Instance), stopped and removed at its end."""
    reason = why_no_postgres()
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the PostgreSQL tests must run under CI=true, but: {reason}")
        pytest.skip(f"no PostgreSQL: {reason}")
    folder = Path(tempfile.mkdtemp(prefix="treino-pg-"))  # not under pytest's tmp: that is 0700, and root's
    try:
        instance = local_postgres.start(folder)
    except local_postgres.CliError as e:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.fail(f"scripts/local_postgres.py could not start PostgreSQL: {e}")
    try:
        yield instance
    finally:
        instance.stop()
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module", params=DATABASES)
def database(request: pytest.FixtureRequest) -> Database:
    """Each test that uses it (through `start_server`, `server`, or by name) runs once per kind of database."""
    if request.param == "sqlite":
        return Database()
    return Database("postgresql", request.getfixturevalue("postgres"))


@pytest.fixture
def local_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """A local run of the job SDK (no server, whatever this process's environment says) whose checkpoint folder is
    tmp_path/ckpt, keeping 3; finished after the test."""
    from treino import job

    for name in (job.ENV_URL, job.ENV_JOB_ID, job.ENV_JOB_TOKEN, job.ENV_CHECKPOINT_DIR, job.ENV_ATTEMPT, "RANK"):
        monkeypatch.delenv(name, raising=False)
    run = job.init(checkpoint_dir=tmp_path / "ckpt", keep=3)
    yield run
    run.finish()
