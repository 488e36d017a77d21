"""Speed and weight of the dashboard (treino.server.web) against the Dashboard issue's targets.

    python benchmarks/web_bench.py

The app is built in-process on a SQLite database seeded with DB_JOBS jobs (queued, running, finished) and one job
with METRIC_POINTS loss points; requests go through Starlette's TestClient, so the time measured is the server's
(routing, auth, queries, templates) without a network. The scheduler loop is not started: nothing changes the
table while it is measured.

1. GET / (overview HTML) with DB_JOBS jobs: p50 and p95 over REQUESTS requests (target p95 <= 100 ms).
2. GET /jobs/{id} of the job with METRIC_POINTS points, and GET /plan (llama-3-8b on an L4): p50 (no target;
   reported for regressions).
3. Page weight: HTML plus every /static asset each page references (target <= 500 kB).
"""

from __future__ import annotations

import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

DB_JOBS = 1000
RUNNING = 2  # on the 2 CPU slots
QUEUED = 60
METRIC_POINTS = 2000
REQUESTS = 50
OVERVIEW_P95_TARGET_S = 0.100
PAGE_WEIGHT_TARGET_BYTES = 500_000


def build(tmp: Path) -> tuple[object, str, int]:
    """(TestClient logged in as admin, its token, the id of the job with metric points)."""
    from fastapi.testclient import TestClient

    from treino.server.api import build_app
    from treino.server.backend import LocalBackend
    from treino.server.context import ServerContext
    from treino.server.db import Job, JobState, MetricPoint, make_engine, make_sessionmaker, migrate, sqlite_url
    from treino.server.inventory import cpu_inventory
    from treino.server.settings import Settings

    engine = make_engine(sqlite_url(tmp))
    migrate(engine)
    settings = Settings(tmp, "http://127.0.0.1:0", key=b"k" * 32)
    ctx = ServerContext.create(settings, make_sessionmaker(engine), LocalBackend(cpu_inventory(2)))
    token = ctx.create_admin_token()
    assert token is not None
    now = time.time()
    with ctx.sessions.begin() as s:
        for i in range(DB_JOBS):
            if i >= DB_JOBS - RUNNING:
                state, devices = JobState.RUNNING, [i - (DB_JOBS - RUNNING)]
            elif i >= DB_JOBS - RUNNING - QUEUED:
                state, devices = JobState.QUEUED, None
            else:
                state, devices = (JobState.SUCCEEDED if i % 5 else JobState.FAILED), None
            s.add(
                Job(
                    name=f"job-{i}",
                    spec={"name": f"job-{i}", "script": "train.py", "args": ["--steps", "1000"], "gpus": 1},
                    owner="admin",
                    state=state,
                    priority=i % 3,
                    gpus=1,
                    devices=devices,
                    submitted_at=now - DB_JOBS + i,
                    job_token_hash=f"{i:064x}",
                    last_step=500 if state == JobState.RUNNING else None,
                    steps_per_s=12.5 if state == JobState.RUNNING else None,
                    last_loss=0.5 if state == JobState.RUNNING else None,
                )
            )
        s.flush()
        job_id = DB_JOBS  # the last one: running
        s.add_all(
            MetricPoint(job_id=job_id, step=k, time=now + k * 0.08, values={"loss": 10.0 / (1 + k)})
            for k in range(METRIC_POINTS)
        )
    client = TestClient(build_app(ctx), base_url="http://testserver")
    r = client.post("/login", data={"token": token, "next": "/"}, follow_redirects=False)
    assert r.status_code == 303, r.text
    return client, token, job_id


def timed(client: object, path: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        r = client.get(path)  # type: ignore[attr-defined]
        times.append(time.perf_counter() - t0)
        assert r.status_code == 200, (path, r.status_code)
    return times


def weight(client: object, path: str) -> int:
    html = client.get(path)  # type: ignore[attr-defined]
    assets = set(re.findall(r'(?:src|href)="(/static/[^"]+)"', html.text))
    return len(html.content) + sum(len(client.get(a).content) for a in assets)  # type: ignore[attr-defined]


def main() -> int:
    console = Console()
    table = Table(title=f"treino dashboard, {DB_JOBS:,} jobs in SQLite, against the Dashboard issue's targets")
    for col in ("benchmark", "measured", "target", "ratio to target"):
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        client, _token, job_id = build(Path(tmp))
        timed(client, "/", 5)  # warm: templates compiled, caches filled
        overview = timed(client, "/", REQUESTS)
        p50, p95 = statistics.median(overview), sorted(overview)[int(0.95 * len(overview))]
        table.add_row(
            f"GET / overview HTML: p50 / p95 ({REQUESTS} requests)",
            f"{p50 * 1000:.1f} / {p95 * 1000:.1f} ms",
            "p95 <= 100 ms",
            f"{p95 / OVERVIEW_P95_TARGET_S:.2f}",
        )
        job = statistics.median(timed(client, f"/jobs/{job_id}", 10))
        table.add_row(f"GET /jobs/{{id}}, {METRIC_POINTS:,} metric points: p50", f"{job * 1000:.1f} ms", "–", "–")
        plan = statistics.median(timed(client, "/plan?model=llama-3-8b&gpu=l4&tokens=2e9", 5))
        table.add_row("GET /plan (llama-3-8b on l4, 2e9 tokens): p50", f"{plan * 1000:.1f} ms", "–", "–")
        for label, path in (("overview", "/"), ("job", f"/jobs/{job_id}"), ("plan", "/plan"), ("data", "/data")):
            size = weight(client, path)
            table.add_row(
                f"page weight: {label} (HTML + scripts + CSS)",
                f"{size / 1000:.1f} kB",
                "<= 500 kB",
                f"{size / PAGE_WEIGHT_TARGET_BYTES:.2f}",
            )
    console.print(table)
    console.print("ratio to target: measured / target (<= 1 meets it). Server time in-process (TestClient).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
