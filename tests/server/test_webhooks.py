"""Notifications (treino.server.webhooks) end to end: a real `treino server --webhook URL` posting to a real HTTP
receiver in the test's own thread, which records every request and answers with the statuses it is told to.

SQLite only: the database plays no part in how a notification is sent.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session

from tests.server.conftest import ServerProcess, Servers, clean_env, free_port
from treino.govern.models import Erasure
from treino.server.db import make_engine, migrate, sqlite_url

WAIT_S = 60.0  # for a job to end and its notification to arrive (a few seconds on an idle machine)


class Receiver:
    """An HTTP server on 127.0.0.1:`port` recording each request (headers, body); answers `statuses` in turn,
    then 200."""

    def __init__(self, port: int = 0, statuses: tuple[int, ...] = ()) -> None:
        self.requests: list[tuple[dict[str, str], bytes]] = []
        self.statuses = list(statuses)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                receiver.requests.append(({k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_port}/hook"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def wait(self, count: int, timeout_s: float = WAIT_S) -> list[tuple[dict[str, str], bytes]]:
        deadline = time.monotonic() + timeout_s
        while len(self.requests) < count:
            assert time.monotonic() < deadline, f"{len(self.requests)} of {count} requests came: {self.requests}"
            time.sleep(0.1)
        return list(self.requests)

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    started = Servers(tmp_path_factory)  # SQLite
    try:
        yield started
    finally:
        started.close()


def submit_and_wait(server: ServerProcess, spec: dict[str, Any]) -> dict[str, Any]:
    with server.client() as c:
        r = c.post("/api/v1/jobs", json=spec)
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        deadline = time.monotonic() + WAIT_S
        while (job := c.get(f"/api/v1/jobs/{job_id}").json())["state"] not in ("succeeded", "failed", "cancelled"):
            assert time.monotonic() < deadline, job
            time.sleep(0.2)
    return dict(job)


def verify(secret: bytes, headers: dict[str, str], body: bytes) -> bool:
    """What a receiver does (docs/server.md, Notifications)."""
    expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, headers["x-treino-signature"])


def test_a_job_end_is_one_signed_delivery_retried_after_500s_with_the_same_id(servers: Servers, tmp_path: Path) -> None:
    receiver = Receiver(statuses=(500, 500))
    secret_file = tmp_path / "secret"
    secret_file.write_text("a-webhook-secret-of-some-length\n")
    try:
        server = servers.start(extra_args=["--webhook", receiver.url, "--webhook-secret-file", str(secret_file)])
        job = submit_and_wait(server, {"name": "notified", "command": ["true"]})
        assert job["state"] == "succeeded"
        requests = receiver.wait(3)
        time.sleep(2.5)  # past the backoff a fourth try would wait: none comes after the 200
    finally:
        receiver.close()
    assert len(receiver.requests) == 3
    ids = {headers["x-treino-delivery"] for headers, _ in requests}
    assert len(ids) == 1  # one delivery, tried three times
    assert {body for _, body in requests} == {requests[0][1]}
    for headers, body in requests:
        assert headers["x-treino-event"] == "job.ended"
        assert verify(b"a-webhook-secret-of-some-length", headers, body)
        assert not verify(b"another-secret-of-the-same-size", headers, body)
    payload = json.loads(requests[0][1])
    assert payload["event"] == "job.ended"
    assert payload["job"] == job["id"] and payload["name"] == "notified" and payload["owner"] == "admin"
    assert payload["state"] == "succeeded" and payload["reason"] is None
    assert payload["attempts"] == 1 and payload["duration_s"] >= 0
    assert server.token not in requests[0][1].decode()


def test_erasure_deadline_and_a_failed_job_are_delivered_after_a_restart_and_notified_once(
    servers: Servers, tmp_path_factory: pytest.TempPathFactory
) -> None:
    # An erasure request the server recorded but never finished (its report empty): open, 15 days from its deadline.
    data_dir = tmp_path_factory.mktemp("server") / "data"
    data_dir.mkdir()
    engine = make_engine(sqlite_url(data_dir))
    migrate(engine)
    now = time.time()
    with Session(engine) as s, s.begin():
        e = Erasure(
            subject_pseudonym="f" * 64,
            dataset="patients",
            requested_by="dpo",
            requested_at=now,
            deadline_at=now + 15 * 86400,
            report={},
        )
        s.add(e)
        s.flush()
        erasure_id = e.id
    engine.dispose()
    port = free_port()  # nothing listens there yet: every try fails to connect
    hook = f"http://127.0.0.1:{port}/hook"
    args = ["--webhook", hook, "--erasure-warn-days", "20"]
    server = servers.start(extra_args=args, data_dir=data_dir)
    job = submit_and_wait(server, {"name": "crasher", "command": ["sh", "-c", "exit 3"]})
    assert job["state"] == "failed"
    queue_file = data_dir / "webhooks.jsonl"
    deadline = time.monotonic() + WAIT_S
    while len(added := [r for r in map(json.loads, queue_file.read_text().splitlines()) if r["op"] == "add"]) < 2:
        assert time.monotonic() < deadline, queue_file.read_text()
        time.sleep(0.1)
    assert server.stop() == 0

    receiver = Receiver(port)
    try:
        restarted = servers.start(extra_args=args, data_dir=data_dir, port=server.port)
        requests = receiver.wait(2)
        deadline = time.monotonic() + WAIT_S
        while "erasure deadlines checked" not in restarted.log():
            assert time.monotonic() < deadline, restarted.log()
            time.sleep(0.1)
        time.sleep(1.0)  # the sender's next pass
    finally:
        receiver.close()
    assert len(receiver.requests) == 2  # the erasure notified once, before the restart, and not again after it
    assert "erasure deadlines checked: 0 newly notified" in restarted.log()
    secret = (data_dir / "webhook-secret").read_bytes().strip()
    by_event = {headers["x-treino-event"]: (headers, body) for headers, body in requests}
    assert {d["id"] for d in added} == {headers["x-treino-delivery"] for headers, _ in requests}
    for headers, body in by_event.values():
        assert verify(secret, headers, body)
    erasure = json.loads(by_event["erasure.deadline"][1])
    assert erasure["erasure"] == erasure_id and erasure["dataset"] == "patients"
    assert erasure["deadline_at"] == pytest.approx(now + 15 * 86400)
    assert 14.9 < erasure["days_left"] <= 15 and erasure["threshold_days"] == 20
    assert "f" * 64 not in by_event["erasure.deadline"][1].decode()  # no subject, not even its pseudonym
    ended = json.loads(by_event["job.ended"][1])
    assert ended["job"] == job["id"] and ended["state"] == "failed" and ended["reason"] == job["failure_reason"]
    assert ended["reason"] is not None


def test_a_webhook_that_is_not_http_refuses_to_start(tmp_path: Path) -> None:
    argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(tmp_path / "data"), "--devices", "cpu:1"]
    out = subprocess.run(
        [*argv, "--port", str(free_port()), "--webhook", "ftp://hooks.example.com/x"],
        capture_output=True,
        text=True,
        env=clean_env(COLUMNS="200"),
        timeout=60,
    )
    assert out.returncode == 1, out.stdout + out.stderr
    assert "--webhook 'ftp://hooks.example.com/x' is not an http(s) URL" in out.stderr
    assert not (tmp_path / "data" / "treino.db").exists()  # refused before the database was made
