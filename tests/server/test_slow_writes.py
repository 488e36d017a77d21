"""The SQLite engine names a write transaction that held the database's one write lock long (every other writer
waits for it, and fails after the busy timeout): where its first write came from, so an operator can find it."""

from __future__ import annotations

import logging
import time
from pathlib import Path

import pytest

from treino.server import db
from treino.server.db import Job, make_engine, make_sessionmaker, migrate


def _hold_a_write(tmp_path: Path, hold_s: float, caplog: pytest.LogCaptureFixture) -> None:
    engine = make_engine(f"sqlite:///{tmp_path / 'treino.db'}")
    migrate(engine)  # a write transaction too, which a loaded machine can make slow: not the one under test
    caplog.clear()
    sessions = make_sessionmaker(engine)
    with sessions.begin() as s:
        s.query(Job).filter(Job.id == -1).delete()  # a write that matches nothing still takes the lock
        time.sleep(hold_s)
    engine.dispose()


def test_a_long_write_transaction_is_logged_with_its_origin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(db, "SLOW_WRITE_S", 0.2)
    with caplog.at_level(logging.WARNING, logger="treino.server"):
        _hold_a_write(tmp_path, 0.4, caplog)
    (message,) = [r.getMessage() for r in caplog.records if "write transaction held" in r.getMessage()]
    assert "test_slow_writes.py" in message and "_hold_a_write" in message, message


def test_a_short_one_is_not(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(db, "SLOW_WRITE_S", 0.5)
    with caplog.at_level(logging.WARNING, logger="treino.server"):
        _hold_a_write(tmp_path, 0.0, caplog)
    assert not [r for r in caplog.records if "write transaction held" in r.getMessage()]
