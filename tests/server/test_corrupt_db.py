"""A structurally corrupt SQLite database, with real processes: pages of the audit table overwritten with garbage
once the table is big enough to have interior b-tree pages.

- `treino server` on such a database refuses to start: exit 1, one line naming the file and how to restore it.
- Corrupted while the server runs: `audit verify` answers a verdict (200, ok false, the database is corrupt), the
  CLI says so and exits 1, and a write that needs the audit table answers 503 with the reason, never a 500.
SQLite only: PostgreSQL checks its own pages and cannot be corrupted from outside in this way; its start-up check
(a connection and a query) is shown by a server pointed at a PostgreSQL that is not there.
"""

from __future__ import annotations

import random
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import THIS_USER, ServerProcess, Servers, clean_env, free_port

USERS = 60  # each one an audit record of ~300 bytes: the audit table spans several pages under an interior one
CLI_TIMEOUT_S = 60.0


@pytest.fixture
def sqlite_servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    servers = Servers(tmp_path_factory)  # the default Database(): SQLite in each data dir
    try:
        yield servers
    finally:
        servers.close()


def add_users(server: ServerProcess) -> None:
    with server.client() as c:
        for i in range(USERS):
            r = c.post("/api/v1/users", json={"name": f"user{i:03d}", "role": "engineer"})
            assert r.status_code == 201, r.text


def corrupt_audit_table(db: Path) -> list[int]:
    """Overwrite the audit table's interior page and two of its leaves with garbage; the pages overwritten. The WAL
    is checkpointed first (so the pages are read from the file), and page 1 is rewritten after (a new WAL frame:
    every connection of a running server drops its cached pages at its next read)."""
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        pages = conn.execute(
            "SELECT pageno, pagetype FROM dbstat WHERE name = 'audit_records' ORDER BY pageno"
        ).fetchall()
    interior = [p for p, kind in pages if kind == "internal"]
    leaves = [p for p, kind in pages if kind == "leaf"]
    assert interior and len(leaves) >= 3, pages
    targets = [interior[0], leaves[len(leaves) // 2], leaves[len(leaves) // 2 + 1]]
    garbage = random.Random(20261201)
    with db.open("r+b") as f:
        for page in targets:
            f.seek((page - 1) * page_size)
            f.write(garbage.randbytes(page_size))
    with sqlite3.connect(db) as conn:
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        conn.execute(f"PRAGMA user_version = {version + 1}")
    conn.close()
    return targets


def start_refused(data_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`treino server` on `data_dir`, run to its end: a refusal at start exits at once."""
    argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(data_dir), "--devices", "cpu:1"]
    argv += ["--job-user", THIS_USER, "--port", str(free_port()), *args]
    return subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=clean_env())


def test_a_corrupt_database_refuses_to_start_with_one_line(sqlite_servers: Servers) -> None:
    server = sqlite_servers.start()
    add_users(server)
    server.stop()
    db = server.data_dir / "treino.db"
    corrupt_audit_table(db)

    out = start_refused(server.data_dir)
    assert out.returncode == 1, out.stdout + out.stderr
    line = " ".join(out.stderr.split())
    assert line.startswith(f"error: The database {db} is corrupt (PRAGMA quick_check: "), out.stderr
    assert f"To fix: stop the server, then restore {db} from a backup" in line and ".recover" in line, out.stderr
    assert "Traceback" not in out.stderr and out.stdout == "", out.stdout + out.stderr


def test_verify_on_a_database_corrupted_while_running_is_a_verdict(sqlite_servers: Servers, tmp_path: Path) -> None:
    server = sqlite_servers.start()
    add_users(server)
    with server.client() as c:
        assert c.get("/api/v1/audit/verify").json()["ok"] is True

    corrupt_audit_table(server.data_dir / "treino.db")

    with server.client() as c:
        r = c.get("/api/v1/audit/verify")
        assert r.status_code == 200, r.text
        verdict = r.json()
        assert verdict["ok"] is False and "the database is corrupt" in verdict["reason"], verdict
        assert "database disk image is malformed" in verdict["reason"], verdict
        assert verdict["reason"].endswith("(this check is not in the audit chain: the database is corrupt)"), verdict
        # A write that appends to the audit table: the reason, as a 503, not a 500.
        r = c.post("/api/v1/users", json={"name": "late", "role": "engineer"})
        assert r.status_code == 503 and r.json()["detail"].startswith("The database is corrupt: "), r.text
        assert c.get("/api/v1/jobs").status_code == 200  # what does not touch the damaged pages still reads

    env = clean_env(HOME=str(tmp_path), XDG_CONFIG_HOME=str(tmp_path / "xdg"))
    argv = [sys.executable, "-m", "treino", "audit", "verify", "--url", server.url, "--token", server.token]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=env)
    assert out.returncode == 1 and out.stdout == "", out.stdout + out.stderr
    assert " ".join(out.stderr.split()).startswith("chain broken at record "), out.stderr
    assert "the database is corrupt" in out.stderr
    assert "Exception in ASGI application" not in server.log(), server.log()[-5_000:]


def test_an_unreachable_postgresql_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    pytest.importorskip("psycopg", reason="the PostgreSQL driver is not installed")
    url = f"postgresql+psycopg://treino:s3cret@127.0.0.1:{free_port()}/treino"  # nothing listens there
    out = start_refused(tmp_path / "data", "--db", url)
    assert out.returncode == 1, out.stdout + out.stderr
    line = " ".join(out.stderr.split())
    assert line.startswith("error: Cannot use the database postgresql+psycopg://treino:***@127.0.0.1:"), out.stderr
    assert "To fix: check that PostgreSQL runs" in line and "s3cret" not in out.stderr, out.stderr
    assert "Traceback" not in out.stderr
