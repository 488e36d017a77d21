"""The HTTP layer's promises, against a real server: one error shape per status (treino.server.api.errors), the
body limit enforced before a byte is buffered, edge integers and NUL bytes refused as 422, never a 500; and the
settings that fail closed."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import ServerProcess
from treino.errors import TreinoError
from treino.server.settings import INT_MAX, REQUEST_BYTES_MAX, Settings
from treino.server.tasks import PeriodicTask


def test_a_body_over_the_limit_is_413_by_its_length_or_while_it_streams(server: ServerProcess) -> None:
    big = b"x" * (REQUEST_BYTES_MAX + 1)
    r = httpx.post(f"{server.url}/api/v1/jobs", content=big, headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "MiB" in r.json()["detail"]

    def chunks() -> Iterator[bytes]:  # no Content-Length: chunked transfer encoding
        for _ in range(REQUEST_BYTES_MAX // 2**20 + 2):
            yield b" " * 2**20

    with server.client() as c:
        r = c.post("/api/v1/jobs", content=chunks(), headers={"Content-Type": "application/json"})
        assert r.status_code == 413, r.text
        assert c.get("/api/v1/jobs").json()["jobs"] == []  # nothing was stored


def test_each_status_has_one_shape(server: ServerProcess) -> None:
    with server.client() as c:
        r = c.post("/api/v1/jobs", content=b"{not json", headers={"Content-Type": "application/json"})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "(body)"
        r = c.post("/api/v1/jobs", json={"name": "x", "command": ["python", "-c", "print(1)\x00"]})
        assert r.status_code == 422 and r.json()["detail"] == [
            {"field": "command.2", "message": "may not contain NUL bytes (\\x00)"}
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
        assert r.json() == {"detail": f"No job {INT_MAX}. To fix: list jobs with 'treino jobs'."}
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
