"""The HTTP layer's promises, against a real server: one error shape per status (treino.server.api.errors), the
body limit enforced before a byte is buffered, edge integers and NUL bytes refused as 422, never a 500; and the
settings that fail closed."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import ServerProcess
from treino.errors import TreinoError
from treino.server.db import Checkpoint, make_engine, make_sessionmaker
from treino.server.settings import (
    API_BODY_BYTES_MAX,
    ARG_STRING_BYTES_MAX,
    ENV_VARS_MAX,
    FORM_BYTES_MAX,
    INT_MAX,
    METRICS_BYTES_MAX,
    SPEC_BYTES_MAX,
    Settings,
)
from treino.server.tasks import PeriodicTask


def test_a_body_over_the_limit_is_413_by_its_length_or_while_it_streams(server: ServerProcess) -> None:
    big = b"x" * (SPEC_BYTES_MAX + 1)

    def chunks(size: int) -> Iterator[bytes]:  # no Content-Length: chunked transfer encoding
        for _ in range(size // 2**16 + 2):
            yield b" " * 2**16

    with server.client() as c:
        r = c.post("/api/v1/jobs", content=big, headers={"Content-Type": "application/json"})
        assert r.status_code == 413 and r.json()["detail"] == (
            "The request body is over 1 MiB. To fix: send less per request."
        )
        assert r.json()["detail_msg"] == {  # for a client to word in its language (treino.i18n.from_data)
            "template": "The request body is over {size}. To fix: send less per request.",
            "params": {"size": "1 MiB"},
        }
        r = c.post("/api/v1/jobs", content=chunks(SPEC_BYTES_MAX), headers={"Content-Type": "application/json"})
        assert r.status_code == 413, r.text
        assert c.get("/api/v1/jobs").json() == {"jobs": [], "next": None}  # nothing was stored
        # each route its own ceiling: a user is small, a batch of metric points is large
        r = c.post(
            "/api/v1/users", content=b" " * (API_BODY_BYTES_MAX + 1), headers={"Content-Type": "application/json"}
        )
        assert r.status_code == 413 and "over 64 KiB" in r.json()["detail"]
        points = b'{"points": []' + b" " * SPEC_BYTES_MAX + b"}"
        r = c.post("/api/v1/jobs/1/metrics", content=points, headers={"Content-Type": "application/json"})
        assert r.status_code == 404  # read and parsed: no job 1
        r = c.post("/api/v1/jobs/1/metrics", content=b"x" * (METRICS_BYTES_MAX + 1))
        assert r.status_code == 413


def raw_head(server: ServerProcess, head: str) -> bytes:
    """Send only a request's head, never a byte of its body, and return what the server answers within 10 s."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as sock:
        sock.sendall(head.encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = sock.recv(65536)
            if not chunk:
                break
            answer += chunk
    return answer


def test_without_a_valid_token_a_body_is_refused_before_it_is_read(server: ServerProcess) -> None:
    """401 with not a byte of the announced body sent: the server answered before reading any."""
    for auth in ("", "Authorization: Bearer trn_wrong\r\n", "Authorization: Bearer trj_not-this-job\r\n"):
        for path in ("/api/v1/jobs", "/api/v1/jobs/1/metrics", f"/api/v1/jobs/{10**19}/metrics", "/api/v1/users"):
            for length in ("Content-Length: 104857600", "Transfer-Encoding: chunked"):
                head = f"POST {path} HTTP/1.1\r\nHost: x\r\n{auth}Content-Type: application/json\r\n{length}\r\n\r\n"
                answer = raw_head(server, head)
                assert answer.startswith(b"HTTP/1.1 401 "), (path, auth, length, answer[:200])
    with httpx.Client(base_url=server.url, timeout=30) as c:  # a client that sends it all gets the 401 after
        r = c.post("/api/v1/jobs", content=b"x" * (METRICS_BYTES_MAX * 2), headers={"Content-Type": "application/json"})
        assert r.status_code == 401 and r.json()["detail"].startswith("Missing token. To fix")
        r = c.post("/api/v1/jobs", json={}, headers={"Authorization": "Bearer trn_wrong"})
        assert r.status_code == 401 and r.json()["detail"].startswith("Invalid, expired or revoked token")
    # with a valid token, an announced length over the route's ceiling is refused unread too
    auth = f"Authorization: Bearer {server.token}"
    head = f"POST /api/v1/jobs HTTP/1.1\r\nHost: x\r\n{auth}\r\nContent-Length: {SPEC_BYTES_MAX + 1}\r\n\r\n"
    assert raw_head(server, head).startswith(b"HTTP/1.1 413 ")
    # the dashboard's login form is not an API route: no token needed, its own small ceiling
    r = httpx.post(f"{server.url}/login", content=b"token=" + b"x" * FORM_BYTES_MAX)
    assert r.status_code == 413
    r = httpx.post(f"{server.url}/login", data={"token": "trn_wrong"})
    assert r.status_code == 401  # the login page again, saying the token was refused


def test_each_status_has_one_shape(server: ServerProcess) -> None:
    with server.client() as c:
        r = c.post("/api/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "(body)"
        r = c.post("/api/v1/jobs", json={"name": "x", "command": ["python", "-c", "print(1)\x00"]})
        assert r.status_code == 422 and r.json()["detail"] == [
            {
                "field": "command.2",
                "message": "may not contain NUL bytes (\\x00)",
                "message_msg": {"template": "may not contain NUL bytes (\\x00)", "params": {}},  # for its language
            }
        ]
        r = c.post("/api/v1/jobs", json={"name": "x", "command": ["true"], "env": {"A=B": "1"}})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "env.A=B.[key]"
        r = c.post("/api/v1/jobs", json={"name": "x", "command": ["true"], "gpus": "1"})  # no coercion
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "gpus"
        assert c.get(f"/api/v1/jobs/{INT_MAX}").status_code == 404
        r = c.get(f"/api/v1/jobs/{INT_MAX + 1}")
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "job_id"
        r = c.post(f"/api/v1/jobs/{INT_MAX}/cancel")
        assert r.status_code == 404
        assert r.json() == {
            "detail": f"No job {INT_MAX}. To fix: list jobs with 'treino jobs'.",
            "detail_msg": {  # the same message as data, for a client's language (treino.i18n.to_data)
                "template": "No job {job_id}. To fix: list jobs with 'treino jobs'.",
                "params": {"job_id": INT_MAX},
            },
        }
        r = c.get("/api/v1/no-such-thing")
        assert r.status_code == 404 and r.json() == {"detail": "Not Found"}
        r = c.delete("/api/v1/jobs")
        assert r.status_code == 405 and r.headers["allow"] == "GET, POST"
        job = c.post("/api/v1/jobs", json={"name": "once", "command": ["true"]}).json()
        r = c.post("/api/v1/users", json={"name": "vera", "role": "viewer"})
        assert r.status_code == 201 and r.json() == {"id": 2, "name": "vera", "role": "viewer", "disabled": False}
        assert c.post("/api/v1/users", json={"name": "vera", "role": "viewer"}).status_code == 409
        viewer = c.post("/api/v1/tokens", json={"user": "vera"}).json()["token"]
    r = httpx.post(f"{server.url}/api/v1/jobs/{job['id']}/cancel", headers={"Authorization": f"Bearer {viewer}"})
    assert r.status_code == 403 and r.json()["detail"]["rule"] == "role"
    assert "may not jobs.cancel" in r.json()["detail"]["message"]
    r = httpx.get(f"{server.url}/api/v1/jobs", headers={"Authorization": "Basic YTpi"})
    assert r.status_code == 401 and "Bearer" in r.json()["detail"]


def test_the_server_refuses_to_start_without_a_real_key(tmp_path: Path) -> None:
    with pytest.raises(TreinoError, match=r"at least 16 are needed .* To fix"):
        Settings(tmp_path, "http://127.0.0.1:1", key=b"")
    assert Settings(tmp_path, "http://127.0.0.1:1", key=b"k" * 16).store == tmp_path / "store"


def test_a_periodic_task_runs_on_its_interval_survives_a_failure_and_wakes_at_once() -> None:
    runs: list[float] = []

    def run() -> None:
        runs.append(time.monotonic())
        if len(runs) == 1:
            raise RuntimeError("a bad first run")

    task = PeriodicTask("test", 0.05, run)
    task.start()
    try:
        deadline = time.monotonic() + 5
        while len(runs) < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(runs) >= 3  # the failure did not stop it
        slow = PeriodicTask("slow", 3600, lambda: runs.append(-1.0))
        slow.start()
        slow.wakeup.set()
        deadline = time.monotonic() + 5
        while -1.0 not in runs and time.monotonic() < deadline:
            time.sleep(0.01)
        assert -1.0 in runs  # woken long before its hour
        stopped = threading.Event()
        threading.Thread(target=lambda: (slow.stop(), stopped.set())).start()
        assert stopped.wait(5)
    finally:
        task.stop()


def test_what_the_kernel_or_the_database_cannot_take_is_422_at_the_boundary(server: ServerProcess) -> None:
    def refused(body: dict[str, Any]) -> list[dict[str, str]]:
        r = c.post("/api/v1/jobs", json={"name": "x", **body})
        assert r.status_code == 422, r.text
        return list(r.json()["detail"])

    with server.client() as c:
        assert refused({"command": ["true"], "env": {"A=B": "1"}})[0]["field"] == "env.A=B.[key]"
        assert refused({"command": ["true"], "env": {"A\x00": "1"}})[0]["field"] == "env.A\x00.[key]"
        assert refused({"command": ["true"], "env": {"A": "1\x00"}})[0]["field"] == "env.A"
        many = {f"V{i}": "" for i in range(ENV_VARS_MAX + 1)}
        assert refused({"command": ["true"], "env": many})[0]["field"] == "env"
        [error] = refused({"command": ["true"], "env": {"BIG": "x" * ARG_STRING_BYTES_MAX}})  # with "BIG=": over
        assert error["field"] == "env" and "MAX_ARG_STRLEN" in error["message"]
        [error] = refused({"command": ["echo", *(["x" * 100_000] * 6)]})
        assert error["field"] == "(body)" and "ARG_MAX" in error["message"] and "To fix" in error["message"]
        [error] = refused({"script": "train.py", "workdir": "/tmp/" + "d" * 256})
        assert error == {
            "field": "workdir",
            "message": "has a name of 256 bytes; each name in a path may have at most 255 (NAME_MAX)",
            "message_msg": {
                "template": "has a name of {longest} bytes; each name in a path may have at most {most} (NAME_MAX)",
                "params": {"longest": 256, "most": 255},
            },
        }
        [error] = refused({"script": "train.py", "workdir": "/a" * 2048})
        assert error["field"] == "workdir" and "PATH_MAX" in error["message"]
        lone = b'{"name": "x", "command": ["\\ud800"]}'  # a lone surrogate, as JSON may escape it: no UTF-8 form
        r = c.post("/api/v1/jobs", content=lone, headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "command.0"
        assert refused({"command": ["true"], "priority": 2**64})[0]["field"] == "priority"
        assert refused({"command": ["true"], "plan": {"model": "m\x00"}})[0]["field"] == "plan.model"
        r = c.get("/api/v1/jobs", params={"before_id": str(2**64)})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "before_id"
        r = c.get("/api/v1/audit/export", params={"actor": "a\x00"})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "actor"
        deep = b"[" * 100_000 + b"]" * 100_000  # deeper than a parser's recursion
        r = c.post("/api/v1/jobs", content=deep, headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "(body)"
        job = c.post("/api/v1/jobs", json={"name": "once", "command": ["true"]}).json()
        r = c.post(f"/api/v1/jobs/{job['id']}/checkpoints", json={"step": 1, "path": "/" + "c" * 256, "bytes": 1})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "path", r.text
    # A checkpoint row stored before these checks (a name over NAME_MAX) shows on the job's pages, never a 500.
    engine = make_engine(server.database_url)
    with make_sessionmaker(engine).begin() as s:
        s.add(Checkpoint(job_id=job["id"], attempt=1, step=7, path="/" + "c" * 300, bytes=1))
    engine.dispose()
    with server.client() as c:
        detail = c.get(f"/api/v1/jobs/{job['id']}").json()
        assert detail["checkpoints"][0]["step"] == 7 and detail["checkpoints"][0]["exists"] is False
        assert c.post("/login", data={"token": server.token}).status_code == 303  # the session cookie
        r = c.get(f"/jobs/{job['id']}")
        assert r.status_code == 200 and "c" * 300 in r.text
    assert "Traceback" not in server.log(), server.log()[-3_000:]
