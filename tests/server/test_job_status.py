"""Why a job waits, its place in line, its progress, ETA and duration, end to end: a real server on one CPU slot, a
real job logging steps through the SDK, the API, `treino jobs` and `treino show` at 80 columns, and the dashboard."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Database
from tests.server.conftest import ServerProcess, StartServer
from tests.server.test_cli_client import treino

WAIT_S = 30.0
POLL_S = 0.1
STEPPER = """
import pathlib, sys, time
from treino import job
run = job.init()
step = 0
while not pathlib.Path(sys.argv[1]).exists():  # a step every 20 ms until the test lets it end
    step += 1
    run.log(step=step, loss=1.0 / step)
    time.sleep(0.02)
run.finish()
"""


def listed(http: httpx.Client) -> dict[int, dict[str, Any]]:
    return {j["id"]: j for j in http.get("/api/v1/jobs").json()["jobs"]}


def until(http: httpx.Client, ok: Any, what: str) -> dict[int, dict[str, Any]]:
    deadline = time.monotonic() + WAIT_S
    while True:
        jobs = listed(http)
        if ok(jobs):
            return jobs
        assert time.monotonic() < deadline, f"never {what}: {jobs}"
        time.sleep(POLL_S)


def row(out: str, job_id: int) -> str:
    """The line of `treino jobs`' table that starts job `job_id`'s row."""
    return next(line for line in out.splitlines() if re.match(rf"│ *{job_id} │", line))


def test_waits_positions_progress_eta_and_durations(
    start_server: StartServer, database: Database, tmp_path: Path
) -> None:
    if database.kind != "sqlite":
        pytest.skip("the list reads the spec's total_steps and args as the dashboard does, on both: [sqlite] runs it")
    server: ServerProcess = start_server(devices="cpu:1")
    (tmp_path / "stepper.py").write_text(STEPPER)
    release = tmp_path / "release"
    with server.client() as http:

        def submit(name: str, priority: int, command: list[str], **extra: Any) -> int:
            spec = {"name": name, "command": command, "priority": priority, "workdir": str(tmp_path), **extra}
            r = http.post("/api/v1/jobs", json=spec)
            assert r.status_code == 201, r.text
            return int(r.json()["id"])

        # Priority 10: the jobs queued behind it never preempt it.
        runner = submit("stepper", 10, [sys.executable, "stepper.py", str(release)], total_steps=100_000)
        until(http, lambda j: j[runner]["eta_at"] is not None, "an ETA for the running job")
        low = submit("low", 0, ["true"])
        high = submit("high", 5, ["true"])
        jobs = until(http, lambda j: j[low]["wait"] and j[high]["wait"], "a reason for both queued jobs")

        # The higher-priority job is next, waiting for the slot the running job holds; the other waits behind it.
        assert (jobs[high]["wait"]["reason"], jobs[high]["wait"]["position"]) == ("resources", 1)
        assert jobs[high]["wait"]["blocked_by"] == [runner] and jobs[high]["wait"]["gpus_free"] == 0
        assert jobs[high]["wait"]["detail"].startswith(f"needs 1 device(s), 0 free; held by job {runner}")
        assert (jobs[low]["wait"]["reason"], jobs[low]["wait"]["position"]) == ("priority", 2)
        assert jobs[low]["wait"]["blocked_by"] == [high]
        running = jobs[runner]
        assert running["wait"] is None and running["total_steps"] == 100_000 and running["last_step"] >= 2
        assert running["eta_at"] > time.time()  # 100,000 steps at ~50 steps/s: far ahead
        assert http.get(f"/api/v1/jobs/{low}").json()["wait"]["reason"] == "priority"

        out = treino("jobs", cwd=tmp_path, server=server, COLUMNS="80")
        assert out.returncode == 0, out.stderr
        assert max(len(line) for line in out.stdout.splitlines()) <= 80, out.stdout
        assert "#1 resources" in row(out.stdout, high) and "#2 priority" in row(out.stdout, low), out.stdout
        assert "/100000" in row(out.stdout, runner) and "ETA " in row(out.stdout, runner), out.stdout
        shown = treino("show", str(low), cwd=tmp_path, server=server)
        assert f"#2 in the queue; priority: job {high}, of higher priority, goes first" in shown.stdout, shown.stdout

        pages = httpx.Client(base_url=server.url, timeout=10)
        assert pages.post("/login", data={"token": server.token}).status_code in (200, 303)
        html = pages.get("/", headers={"Accept-Language": "pt-BR"}).text
        assert "um job de prioridade maior vai antes" in html and f'href="/jobs/{runner}"' in html

        release.touch()
        jobs = until(http, lambda j: all(j[i]["state"] == "succeeded" for i in (runner, low, high)), "all done")
    for j in jobs.values():
        assert j["wait"] is None and j["eta_at"] is None
        assert j["duration_s"] == j["ended_at"] - j["started_at"]
        assert j["queue_wait_s"] == j["started_at"] - j["submitted_at"]
    assert jobs[high]["queue_wait_s"] > 0.5  # it waited for the stepper to see its release
    assert jobs[low]["started_at"] >= jobs[high]["ended_at"]  # and the low-priority job for it
    out = treino("jobs", cwd=tmp_path, server=server, COLUMNS="80")
    assert "took " in row(out.stdout, runner), out.stdout
