"""One real `treino server` (2 CPU slots, SQLite) for the framework tests, and a local run for the in-process ones.

The server's database paths are those tests/server runs on both databases; what these tests add is the frameworks'
side (the SDK, the Trainer's and Lightning's checkpoints), so the slow end-to-end jobs run once, not once per
database.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Database
from tests.server.conftest import ServerProcess, Servers
from tests.server.test_jobs import job_pids
from treino import job

JOB_TIMEOUT_S = 180.0  # two attempts, each importing a framework (seconds of CPU on a loaded machine)


class Jobs:
    """The calls these tests make to the server."""

    def __init__(self, server: ServerProcess) -> None:
        self.server = server

    def api(self, method: str, path: str, **kw: Any) -> httpx.Response:
        with self.server.client() as client:
            return client.request(method, path, **kw)

    def submit(self, spec: dict[str, Any]) -> int:
        r = self.api("POST", "/api/v1/jobs", json=spec)
        assert r.status_code == 201, r.text
        return int(r.json()["id"])

    def job(self, job_id: int) -> dict[str, Any]:
        r = self.api("GET", f"/api/v1/jobs/{job_id}")
        assert r.status_code == 200, r.text
        return dict(r.json())

    def logs(self, job_id: int, attempt: int) -> str:
        return str(self.api("GET", f"/api/v1/jobs/{job_id}/logs", params={"attempt": attempt}).json()["text"])

    def wait(self, job_id: int, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while time.monotonic() < deadline:
            state = self.job(job_id)
            if until(state):
                return state
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} never reached the condition: {state}\n{self.logs(job_id, 1)}")

    def kill(self, job_id: int) -> None:
        """SIGKILL every process of the job, as a crash would."""
        pids = job_pids(self.server.url, job_id)
        assert pids, f"job {job_id} has no process to kill"
        for pid in pids:
            os.kill(pid, signal.SIGKILL)

    def points(self, job_id: int) -> list[dict[str, Any]]:
        return list(self.api("GET", f"/api/v1/jobs/{job_id}/metrics").json()["points"])


@pytest.fixture(scope="session")
def jobs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jobs]:
    servers = Servers(tmp_path_factory, Database())
    try:
        yield Jobs(servers.start())
    finally:
        servers.close()


@pytest.fixture
def local_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[job.Run]:
    """A local run (no server) whose checkpoint folder is tmp_path/ckpt."""
    for name in (job.ENV_URL, job.ENV_JOB_ID, job.ENV_JOB_TOKEN, job.ENV_CHECKPOINT_DIR, job.ENV_ATTEMPT, "RANK"):
        monkeypatch.delenv(name, raising=False)
    run = job.init(checkpoint_dir=tmp_path / "ckpt", keep=3)
    yield run
    run.finish()


def final(state: dict[str, Any]) -> bool:
    return state["state"] in ("succeeded", "failed", "cancelled")
