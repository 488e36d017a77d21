"""One real `treino server` (2 CPU slots, SQLite) for the framework tests, and a local run for the in-process ones.

The server's database paths are those tests/server runs on both databases; what these tests add is the frameworks'
side (the SDK, the Trainer's and Lightning's checkpoints), so the slow end-to-end jobs run once, not once per
database.
"""

from __future__ import annotations

import os
import re
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Database
from tests.server.conftest import ServerProcess, Servers
from tests.server.test_jobs import job_pids
from treino.cli.client import spec_for_submit

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


def final(state: dict[str, Any]) -> bool:
    return state["state"] in ("succeeded", "failed", "cancelled")


ROOT = Path(__file__).resolve().parents[2]
STEPS = 30  # the kill/resume jobs' length, and their checkpoint interval
SAVE_EVERY = 10
PAUSE_ENV = "EXAMPLE_PAUSE_AT_STEP"  # the examples' test hook: the first attempt waits after saving this step


@dataclass(frozen=True)
class Resumed:
    job_id: int
    done: dict[str, Any]  # the job, once final
    second: str  # the second attempt's log
    where: re.Match[str]  # the example's "resumed from ..." line: (folder, step)
    step: int


def kill_and_resume(jobs: Jobs, example: str, resumed_from: str) -> Resumed:
    """Submit examples/`example` as `treino submit` sends it, SIGKILL its first attempt once its first checkpoint
    is registered with the server (the attempt waits there: a kill mid-run however slow the machine), and check that
    the second attempt resumed from that checkpoint and trained only the rest. `resumed_from`: the log line's
    pattern, with groups (folder, step)."""
    spec = spec_for_submit(ROOT / "examples" / example)
    spec["args"] = ["--steps", str(STEPS), "--save-every", str(SAVE_EVERY)]
    spec["env"] = {**spec.get("env", {}), PAUSE_ENV: str(SAVE_EVERY)}
    job_id = jobs.submit(spec)
    jobs.wait(job_id, lambda j: (j["checkpoint_step"] or 0) >= SAVE_EVERY)  # registered with the server
    jobs.kill(job_id)
    done = jobs.wait(job_id, final)
    assert done["state"] == "succeeded", jobs.logs(job_id, 2)
    assert done["attempts"] == 2 and done["history"][0]["outcome"] == "signal"
    second = jobs.logs(job_id, 2)
    where = re.search(resumed_from, second)
    assert where, second
    step = int(where.group(2))
    assert step == SAVE_EVERY  # where the first attempt waited to be killed
    assert f"done step={STEPS} trained={STEPS - step} " in second  # continued from its checkpoint, not from 0
    recorded = done["checkpoints"]
    assert [c["step"] for c in recorded] == list(range(SAVE_EVERY, STEPS + 1, SAVE_EVERY))  # each once
    return Resumed(job_id, done, second, where, step)
