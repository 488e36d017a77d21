"""Speed of the job server against the Run issue's targets, on a real server with CPU slots.

    python benchmarks/server_bench.py         (part of make bench)

1. submit -> running, p50 over sequential submits of short jobs with free slots (target <= 1 s); the server's own
   timestamps (submitted_at, the attempt's started_at), so client polling does not count.
2. Throughput of examples/ddp_train.py (2 gloo ranks) under treino vs the same torchrun command run directly:
   wall time of the attempt (supervisor start to exit) vs wall time of the direct run (target >= 0.98x).
3. GET /api/v1/jobs latency, p50/p99, with 1,000 jobs in the database and 50 concurrent clients (target p99
   <= 50 ms on the 2-core CI machine).
"""

from __future__ import annotations

import concurrent.futures
import os
import pwd
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ddp_train.py"
SUBMITS = 20
THROUGHPUT_STEPS = 400
DB_JOBS = 1000
CLIENTS = 50
REQUESTS_PER_CLIENT = 20
WAIT_POLL_S = 0.5  # how often the bench asks a job's state; its timings come from the server's timestamps
POLL_PERIOD_S = 1.0  # the polling clients: each asks once a second, as a dashboard or `treino jobs -w` would


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        cmd = [sys.executable, "-c", "from treino.cli.app import main; main()", "server"]
        cmd += ["--data-dir", str(data_dir), "--devices", "cpu:2", "--port", str(self.port)]
        cmd += ["--job-user", pwd.getpwuid(os.geteuid()).pw_name]  # its jobs' scripts are in a 0700 temporary folder
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        for _ in range(150):
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        token = (data_dir / "admin-token").read_text().strip()
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=30)

    def wait_final(self, job_id: int) -> dict[str, Any]:
        while True:
            job = self.client.get(f"/api/v1/jobs/{job_id}").json()
            if job["state"] in ("succeeded", "failed", "cancelled"):
                return dict(job)
            time.sleep(WAIT_POLL_S)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(20)


def submit_latency(server: Server) -> list[float]:
    out = []
    for i in range(SUBMITS):
        job = server.client.post("/api/v1/jobs", json={"name": f"lat-{i}", "command": ["true"]}).json()
        done = server.wait_final(job["id"])
        out.append(done["history"][0]["started_at"] - done["submitted_at"])
    return out


def throughput(server: Server) -> tuple[float, float]:
    """Best of two runs each, alternating, so neither side gets the warm caches alone."""
    args = ["--steps", str(THROUGHPUT_STEPS), "--save-every", "100"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    spec = {
        "name": "throughput",
        "script": str(EXAMPLE),
        "args": args,
        "gpus": 2,
        "workdir": str(ROOT),
        "env": {"OMP_NUM_THREADS": "1"},
    }
    direct, managed = [], []
    for _ in range(3):
        with tempfile.TemporaryDirectory() as ckpt:
            t0 = time.perf_counter()
            torchrun = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node=2"]
            subprocess.run(
                [*torchrun, str(EXAMPLE), *args],
                env={**env, "TREINO_CHECKPOINT_DIR": ckpt},
                check=True,
                capture_output=True,
            )
            direct.append(time.perf_counter() - t0)
        job = server.client.post("/api/v1/jobs", json=spec).json()
        attempt = server.wait_final(job["id"])["history"][0]
        managed.append(attempt["ended_at"] - attempt["started_at"])
    return min(direct), min(managed)


def seed_jobs(data_dir: Path) -> None:
    """1,000 finished jobs straight into the database (the server's own models), before the server starts."""
    from treino.server.db import Job, make_engine, make_sessionmaker, migrate, sqlite_url

    data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(sqlite_url(data_dir))
    migrate(engine)
    now = time.time()
    spec = {"name": "seed", "command": ["true"], "gpus": 1}
    with make_sessionmaker(engine).begin() as s:
        s.add_all(
            Job(
                name=f"seed-{i}",
                spec=spec,
                owner="bench",
                state="succeeded",
                gpus=1,
                job_token_hash=f"{i:064x}",
                submitted_at=now - i,
                started_at=now - i,
                ended_at=now - i + 1,
                attempts=1,
                exit_code=0,
            )
            for i in range(DB_JOBS)
        )
    engine.dispose()


def list_latency(server: Server, think_s: float) -> list[float]:
    """50 clients asking GET /api/v1/jobs: back to back (think_s = 0: saturation), or each once per think_s."""

    def client_run(i: int) -> list[float]:
        times = []
        time.sleep(think_s * i / CLIENTS)  # spread the polling clients over the period
        with httpx.Client(base_url=server.url, headers=server.client.headers, timeout=30) as c:
            for _ in range(REQUESTS_PER_CLIENT):
                t0 = time.perf_counter()
                r = c.get("/api/v1/jobs")
                times.append(time.perf_counter() - t0)
                assert r.status_code == 200 and len(r.json()["jobs"]) == 100
                time.sleep(think_s)
        return times

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        return [t for ts in pool.map(client_run, range(CLIENTS)) for t in ts]


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def main() -> int:
    console = Console()
    table = Table(title="treino server (CPU slots), against the Run issue's targets")
    for col in ("benchmark", "measured", "target", "ratio to target"):
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    with tempfile.TemporaryDirectory() as tmp:
        server = Server(Path(tmp) / "a")
        try:
            lat = submit_latency(server)
            p50 = statistics.median(lat)
            table.add_row(
                f"submit -> running p50 ({SUBMITS} jobs)", f"{p50 * 1000:.0f} ms", "<= 1,000 ms", f"{p50 / 1.0:.2f}"
            )
            direct, managed = throughput(server)
            ratio = direct / managed
            table.add_row(
                f"ddp_train.py {THROUGHPUT_STEPS} steps, 2 ranks: direct / under treino",
                f"{direct:.1f} s / {managed:.1f} s = {ratio:.3f}x",
                ">= 0.98x",
                f"{ratio / 0.98:.2f}",
            )
        finally:
            server.stop()
        seed_jobs(Path(tmp) / "b")
        server = Server(Path(tmp) / "b")
        try:
            for think_s, how in ((0.0, "back to back"), (POLL_PERIOD_S, f"each every {POLL_PERIOD_S:g} s")):
                times = list_latency(server, think_s)
                p99 = pct(times, 0.99)
                table.add_row(
                    f"GET /api/v1/jobs, {DB_JOBS} jobs, {CLIENTS} clients {how}: p50 / p99",
                    f"{statistics.median(times) * 1000:.0f} / {p99 * 1000:.0f} ms",
                    "p99 <= 50 ms",
                    f"{p99 / 0.050:.2f}",
                )
        finally:
            server.stop()
    console.print(table)
    console.print(
        "ratio to target: measured / target for times (<= 1 meets it), target-relative for throughput (>= 1 meets it)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
