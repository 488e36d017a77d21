"""Audit anchors on a real server: an insider who holds the database and the key rewrites the chain consistently, plain
`treino audit verify` cannot tell, and `treino audit verify --anchors FILE` names the first anchor that disagrees."""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from tests.conftest import Database
from tests.govern.test_cli_govern import one_line, treino
from tests.server.conftest import ServerProcess, Servers, clean_env, free_port
from tests.server.test_webhooks import Receiver
from treino.govern.audit import checkpoint_hmac, record_hash
from treino.govern.models import AuditCheckpoint, AuditRecord
from treino.server.db import make_engine
from treino.server.settings import KEY_FILE, WEBHOOK_SECRET_FILE

ANCHOR_WAIT_S = 10.0


@pytest.fixture
def servers(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[Servers]:
    servers = Servers(tmp_path_factory, database)
    try:
        yield servers
    finally:
        servers.close()


def anchors_of(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for_anchor(path: Path, seq: int) -> None:
    deadline = time.monotonic() + ANCHOR_WAIT_S
    while time.monotonic() < deadline:
        if path.exists() and any(a["seq"] == seq for a in anchors_of(path)):
            return
        time.sleep(0.1)
    raise AssertionError(f"no anchor of record {seq} in {path}: {path.read_text() if path.exists() else 'no file'}")


def insider_rewrite(server: ServerProcess, seq: int, actor: str) -> None:
    """What someone holding the database and the server key can do: change record `seq`, then recompute every later
    hash and re-sign every later checkpoint with the functions the server itself uses."""
    key = (server.data_dir / KEY_FILE).read_bytes()
    engine = make_engine(server.database_url)
    with Session(engine) as s, s.begin():
        prev = None
        for rec in s.scalars(select(AuditRecord).where(AuditRecord.seq >= seq).order_by(AuditRecord.seq)):
            if rec.seq == seq:
                rec.actor = actor
            if prev is not None:
                rec.prev_hash = prev
            fields = {k: getattr(rec, k) for k in ("seq", "time", "actor", "action", "dataset", "subject", "job_id")}
            rec.hash = prev = record_hash({**fields, "detail": rec.detail, "prev_hash": rec.prev_hash})
        hashes = {n: h for n, h in s.execute(select(AuditRecord.seq, AuditRecord.hash))}
        for cp in s.scalars(select(AuditCheckpoint).where(AuditCheckpoint.seq >= seq)):
            cp.hash = hashes[cp.seq]
            cp.hmac = checkpoint_hmac(key, cp.seq, cp.hash)
    engine.dispose()


def test_verify_with_anchors_catches_a_rewrite_by_someone_holding_the_key(servers: Servers, tmp_path: Path) -> None:
    witness = tmp_path / "witness"
    witness.mkdir()
    anchors = witness / "anchors.jsonl"
    receiver = Receiver(statuses=(503,))  # the first delivery is retried
    args = ["--audit-anchor", str(anchors), "--audit-anchor-url", receiver.url, "--audit-anchor-interval-s", "0.2"]
    server = servers.start(extra_args=args)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return treino(*args, cwd=tmp_path, url=server.url, token=server.token)

    for name in ("a1", "a2", "a3"):
        assert cli("users", "add", name, "--role", "viewer").returncode == 0
    exported = [json.loads(line) for line in cli("audit", "export").stdout.splitlines()]
    target = next(r["seq"] for r in exported if r["action"] == "user.create" and r["detail"]["user"] == "a2")
    head = exported[-1]["seq"]
    wait_for_anchor(anchors, head)
    key_file = str(server.data_dir / KEY_FILE)

    # Untouched: the anchors agree with the recomputed chain, and their HMACs verify under the server key.
    out = cli("audit", "verify", "--anchors", str(anchors), "--key-file", key_file)
    assert out.returncode == 0, out.stderr
    assert f"records 1-{head} are unchanged since" in out.stdout and "HMACs not checked" not in out.stdout

    # The insider's rewrite: plain verify passes (hashes and checkpoints are consistent) ...
    insider_rewrite(server, target, "mallory")
    out = cli("audit", "verify")
    assert out.returncode == 0 and out.stdout.startswith("chain intact"), out.stderr
    # ... but the anchor written before it names the change.
    lines = anchors.read_text().splitlines()
    first = next(n for n, line in enumerate(lines, 1) if json.loads(line)["seq"] >= target)
    out = cli("audit", "verify", "--anchors", str(anchors))
    assert out.returncode == 1 and out.stdout == "", out.stdout
    said = one_line(out.stderr)
    assert said.startswith(f"chain broken at record {json.loads(lines[first - 1])['seq']}: anchor at line {first} ")
    assert "disagrees" in said and "holding the database and the key" in said

    # A garbled line: a clear error naming it, not a verdict.
    garbled = tmp_path / "garbled.jsonl"
    garbled.write_text(lines[0] + "\n" + lines[0][:30] + "\n")
    out = cli("audit", "verify", "--anchors", str(garbled))
    assert out.returncode == 1
    assert f"{garbled} line 2 is not an audit anchor" in one_line(out.stderr) and "To fix" in out.stderr

    # At shutdown the server anchors its head once more (now the rewritten one: the anchor is no time machine).
    before = len(anchors_of(anchors))
    server.stop()
    assert anchors_of(anchors)[before:][-1]["reason"] == "shutdown"
    # The same anchors went to the URL, signed with the webhook secret (the 503 retried).
    secret = (server.data_dir / WEBHOOK_SECRET_FILE).read_bytes().strip()
    posted = receiver.requests
    receiver.close()
    for headers, body in posted:
        assert headers["x-treino-event"] == "audit.anchor"
        assert headers["x-treino-signature"] == "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    sent = {(b["seq"], b["hash"]) for b in (json.loads(body) for _, body in posted[1:])}
    assert {(a["seq"], a["hash"]) for a in anchors_of(anchors)} <= sent  # the shutdown anchor too


def test_an_anchor_file_inside_the_data_dir_is_refused(tmp_path: Path) -> None:
    data = tmp_path / "data"
    argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(data), "--devices", "cpu:1"]
    argv += ["--port", str(free_port()), "--audit-anchor", str(data / "anchors.jsonl")]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=clean_env(COLUMNS="200"))
    assert out.returncode == 1, out.stderr
    assert "is inside the server's data dir" in one_line(out.stderr) and "To fix" in out.stderr
