"""Speed of the job server against the Run and the Harden issues' targets, on real servers with CPU slots.

    python benchmarks/server_bench.py           (part of make bench; a few minutes)
    python benchmarks/server_bench.py --quick   (fewer samples, no DDP throughput run; about a minute and a half)

1. submit -> running, p50 over sequential submits of short jobs with free slots (target <= 1 s); the server's own
   timestamps (submitted_at, the attempt's started_at), so client polling does not count.
2. Throughput of examples/ddp_train.py (2 gloo ranks) under treino vs the same torchrun command run directly:
   wall time of the attempt (supervisor start to exit) vs wall time of the direct run (target >= 0.98x).
3. A queue of 10,000 jobs, written straight into the database before the server starts (the server's own
   models; through the API it would take minutes): 10,002 `sleep` jobs on 2 CPU slots, so two run and 10,000 stay
   queued. The server's CPU while idle, from /proc/PID/stat over IDLE_S (target <= 5 % of a core), then the rate
   of sequential submits through the API (target >= 30/s).
4. GET /api/v1/jobs (the first page), 50 clients back to back, with 1,000 jobs (finished) and with the 10,000 of
   3 (queued): p50/p99 (target p99 <= 50 ms on the 2-core CI machine); also with each client polling once a second,
   and, where Debian's wrk is installed, under wrk (the server alone, without the Python clients' own waiting);
   then the same Python clients against a bare ASGI app answering the same page: their own floor, no target (50
   threads of one interpreter on the 2 cores the server also uses wait for each other, whatever the server does).
5. Four concurrent 100 MB POSTs to /api/v1/jobs without a token, streamed chunked (no Content-Length) and with a
   Content-Length: the server's resident memory growth, its peak (VmRSS sampled every RSS_SAMPLE_S, and VmHWM
   after a reset through /proc/PID/clear_refs) over its RSS before (target <= 20 MB), each on a fresh server.

The code measured is whichever `treino` imports first (PYTHONPATH): the title names its folder.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import contextlib
import json
import os
import pwd
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

import treino

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "ddp_train.py"
SUBMITS = 20
THROUGHPUT_STEPS = 400
DB_JOBS = 1000
CLIENTS = 50
REQUESTS_PER_CLIENT = 20
WAIT_POLL_S = 0.5  # how often the bench asks a job's state; its timings come from the server's timestamps
POLL_PERIOD_S = 1.0  # the polling clients: each asks once a second, as a dashboard or `treino jobs -w` would
QUEUED_JOBS = 10_000  # 3: the queue, beside SLOTS running jobs
SLOTS = 2  # the servers' CPU slots (--devices cpu:2)
SETTLE_S = 3.0  # after the queue's holders run, before the idle CPU is measured (the first ticks read the queue)
IDLE_S = 10.0
RATE_SUBMITS = 100
POST_BYTES = 100 * 1024**2
POSTS = 4
POST_CHUNK_BYTES = 1024**2
RSS_SAMPLE_S = 0.01
START_TIMEOUT_S = 60.0
TIMEOUT_S = 120.0  # any one request, and waits for a state

TARGET_SUBMIT_S = 1.0
TARGET_DDP_RATIO = 0.98
TARGET_IDLE_CPU = 0.05  # of one core
TARGET_SUBMITS_PER_S = 30.0
TARGET_LIST_P99_S = 0.050
TARGET_RSS_GROWTH_MB = 20.0


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
        self.data_dir = data_dir
        self.log = data_dir.parent / f"{data_dir.name}-server.log"
        with self.log.open("wb") as log:
            self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            if self.proc.poll() is not None or time.monotonic() > deadline:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(
                    f"treino server on {data_dir} did not start (exit status {self.proc.poll()}):\n{tail}"
                )
            time.sleep(0.2)
        token = (data_dir / "admin-token").read_text().strip()
        self.client = httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {token}"}, timeout=TIMEOUT_S)

    def wait_final(self, job_id: int) -> dict[str, Any]:
        while True:
            job = self.client.get(f"/api/v1/jobs/{job_id}").json()
            if job["state"] in ("succeeded", "failed", "cancelled"):
                return dict(job)
            time.sleep(WAIT_POLL_S)

    def stop(self) -> None:
        """The server, then every attempt it left running (their supervisors outlive it by design)."""
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        from treino.server.supervisor import kill_key

        for launch in self.data_dir.glob("jobs/*/attempt-*/launch.json"):
            with contextlib.suppress(OSError, ValueError, KeyError):
                kill_key(json.loads(launch.read_text())["key"], grace_s=0.0)

    def cpu_s(self) -> float:
        """User + system CPU seconds of the server process so far (/proc/PID/stat, fields 14 and 15)."""
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def rss_kb(self, field: str = "VmRSS") -> int:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
        raise RuntimeError(f"no {field} in /proc/{self.proc.pid}/status")

    def wait_running(self, count: int) -> None:
        deadline = time.monotonic() + TIMEOUT_S
        while len(self.client.get("/api/v1/jobs", params={"state": "running"}).json()["jobs"]) < count:
            if time.monotonic() > deadline:
                raise RuntimeError(f"fewer than {count} jobs running after {TIMEOUT_S:g} s")
            time.sleep(WAIT_POLL_S)


def submit_latency(server: Server, submits: int) -> list[float]:
    out = []
    for i in range(submits):
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


def seed_jobs(data_dir: Path, count: int, state: str) -> None:
    """`count` jobs straight into the database (the server's own models and migrations), before the server starts:
    finished ones (`state` succeeded), or queued `sleep` jobs of one CPU slot each."""
    from sqlalchemy import insert

    from treino.server.db import Job, make_engine, make_sessionmaker, migrate, sqlite_url
    from treino.server.spec import JobSpec

    data_dir.mkdir(parents=True, exist_ok=True)
    engine = make_engine(sqlite_url(data_dir))
    migrate(engine)
    now = time.time()
    spec = JobSpec(name="seed", command=["sleep", "3600"], grace_seconds=1).model_dump(mode="json")
    done = {"started_at": now, "ended_at": now + 1, "attempts": 1, "exit_code": 0} if state == "succeeded" else {}
    rows = [
        {
            "name": f"seed-{i}",
            "spec": spec,
            "owner": "bench",
            "state": state,
            "gpus": 1,
            "job_token_hash": f"{i:064x}",
            "submitted_at": now - count + i,  # in id order, as submits would be
            **done,
        }
        for i in range(count)
    ]
    with make_sessionmaker(engine).begin() as s:
        s.execute(insert(Job), rows)
    engine.dispose()


def list_latency(server: Server | BareApp, think_s: float, requests_per_client: int) -> list[float]:
    """50 clients asking GET /api/v1/jobs: back to back (think_s = 0: saturation), or each once per think_s."""

    def client_run(i: int) -> list[float]:
        times = []
        time.sleep(think_s * i / CLIENTS)  # spread the polling clients over the period
        with httpx.Client(base_url=server.url, headers=server.client.headers, timeout=TIMEOUT_S) as c:
            for _ in range(requests_per_client):
                t0 = time.perf_counter()
                r = c.get("/api/v1/jobs")
                times.append(time.perf_counter() - t0)
                assert r.status_code == 200 and r.json()["jobs"], r.text[:200]  # a page (and maybe a `next`)
                time.sleep(think_s)
        return times

    with concurrent.futures.ThreadPoolExecutor(CLIENTS) as pool:
        return [t for ts in pool.map(client_run, range(CLIENTS)) for t in ts]


# An ASGI app that answers every request with the same bytes, under the same Uvicorn: what the Python clients
# measure against a server that does nothing (their own floor on the shared cores).
BARE_APP = """
import sys, uvicorn
body = open(sys.argv[2], "rb").read()
async def app(scope, receive, send):
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": body})
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[1]), log_level="warning", lifespan="off")
"""


class BareApp:
    """BARE_APP serving `page` (a list page the real server answered), for list_latency."""

    def __init__(self, page: bytes, folder: Path) -> None:
        (folder / "page.json").write_bytes(page)
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.client = httpx.Client(base_url=self.url, timeout=TIMEOUT_S)
        argv = [sys.executable, "-c", BARE_APP, str(self.port), str(folder / "page.json")]
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            with contextlib.suppress(httpx.TransportError):
                if self.client.get("/").status_code == 200:
                    return
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the bare app did not start (exit status {self.proc.poll()})")
            time.sleep(0.2)

    def stop(self) -> None:
        self.client.close()
        self.proc.terminate()
        self.proc.wait()


def add_client_floor_row(rows: Rows, server: Server, requests: int, folder: Path) -> None:
    """The 50 Python clients against BARE_APP answering the server's own first page: no target (a floor)."""
    bare = BareApp(server.client.get("/api/v1/jobs").content, folder)
    try:
        times = list_latency(bare, 0.0, requests)
    finally:
        bare.stop()
    rows.info(
        f"the same {CLIENTS} Python clients against a bare ASGI app (Uvicorn, no routes) answering that page: "
        "p50 / p99 (the clients' own floor on the shared cores)",
        f"{statistics.median(times) * 1000:.0f} / {pct(times, 0.99) * 1000:.0f} ms",
    )


WRK_S = 10  # seconds of wrk's run
WRK_UNITS_S = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0}


@dataclass(frozen=True)
class WrkRun:
    p50_s: float
    p99_s: float
    requests_per_s: float
    server_cpu_us_per_request: float  # the server's own CPU (user + system) over the run, per request answered


def wrk_latency(server: Server) -> WrkRun | None:
    """GET /api/v1/jobs under `wrk` (C, from Debian's wrk) with CLIENTS connections back to back, or None without
    wrk. The Python clients above share one interpreter's lock across 50 threads, which adds their own waiting to
    what they measure; wrk measures the server alone (it still shares the 2 cores). The server's CPU per request
    is the steadiest figure on a shared machine: latency follows from it (CLIENTS x CPU per request, at best)."""
    if shutil.which("wrk") is None:
        return None
    argv = ["wrk", "-t", "2", "-c", str(CLIENTS), "-d", f"{WRK_S}s", "--latency"]
    argv += ["-H", f"Authorization: {server.client.headers['Authorization']}", server.url + "/api/v1/jobs"]
    cpu_before = server.cpu_s()
    out = subprocess.run(argv, capture_output=True, text=True, check=True, timeout=WRK_S * 3).stdout
    cpu_s = server.cpu_s() - cpu_before
    found = dict(re.findall(r"^\s+(50|99)%\s+([\d.]+\w+)", out, re.M))
    answered = int(re.search(r"^\s*(\d+) requests in", out, re.M).group(1))  # type: ignore[union-attr]
    rate = float(re.search(r"^Requests/sec:\s+([\d.]+)", out, re.M).group(1))  # type: ignore[union-attr]

    def seconds(text: str) -> float:
        number, unit = re.fullmatch(r"([\d.]+)(\w+)", text).groups()  # type: ignore[union-attr]
        return float(number) * WRK_UNITS_S[unit]

    return WrkRun(seconds(found["50"]), seconds(found["99"]), rate, cpu_s / max(answered, 1) * 1e6)


def add_wrk_row(rows: Rows, server: Server, jobs: str) -> None:
    run = wrk_latency(server)
    if run is None:
        print("wrk is not installed (apt-get install wrk): the list's latency is measured by Python clients only")
        return
    rows.add(
        f"GET /api/v1/jobs, {jobs}, wrk {CLIENTS} connections back to back ({WRK_S} s): p50 / p99 "
        f"({run.requests_per_s:,.0f} req/s, server CPU {run.server_cpu_us_per_request:.0f} us per request)",
        f"{run.p50_s * 1000:.0f} / {run.p99_s * 1000:.0f} ms",
        run.p99_s,
        TARGET_LIST_P99_S,
        f"<= {TARGET_LIST_P99_S * 1000:g} ms",
    )


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


def idle_cpu(server: Server, seconds: float) -> float:
    """The server's CPU use, as a fraction of one core, over `seconds` of no requests."""
    t0, c0 = time.monotonic(), server.cpu_s()
    time.sleep(seconds)
    return (server.cpu_s() - c0) / (time.monotonic() - t0)


def submit_rate(server: Server, submits: int) -> float:
    """Sequential submits through the API, one client: jobs accepted per second."""
    t0 = time.perf_counter()
    for i in range(submits):
        r = server.client.post("/api/v1/jobs", json={"name": f"rate-{i}", "command": ["true"]})
        assert r.status_code == 201, r.text[:200]
    return submits / (time.perf_counter() - t0)


@contextlib.contextmanager
def peak_rss_kb(server: Server) -> Iterator[dict[str, int]]:
    """The server's peak resident memory while the block runs: VmRSS sampled every RSS_SAMPLE_S, and VmHWM when
    /proc/PID/clear_refs could reset it first (the kernel's own peak, which sampling can miss)."""
    out = {"before": server.rss_kb(), "peak": 0}
    try:
        Path(f"/proc/{server.proc.pid}/clear_refs").write_text("5")
        hwm = True
    except OSError:
        hwm = False
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            with contextlib.suppress(OSError, RuntimeError):
                out["peak"] = max(out["peak"], server.rss_kb())
            stop.wait(RSS_SAMPLE_S)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        yield out
    finally:
        stop.set()
        sampler.join()
        out["peak"] = max(out["peak"], server.rss_kb("VmHWM") if hwm else 0)


def big_posts(server: Server, chunked: bool) -> tuple[float, str]:
    """POSTS concurrent POST_BYTES bodies to /api/v1/jobs with no token: (RSS growth in MB, the answers)."""

    def body() -> Iterator[bytes]:
        chunk = b"x" * POST_CHUNK_BYTES
        for _ in range(POST_BYTES // POST_CHUNK_BYTES):
            yield chunk

    def post(_: int) -> str:
        headers = {"Content-Type": "application/json"}
        if not chunked:
            headers["Content-Length"] = str(POST_BYTES)  # httpx then streams the body without chunking it
        try:
            with httpx.Client(timeout=TIMEOUT_S) as c:
                return str(c.post(server.url + "/api/v1/jobs", content=body(), headers=headers).status_code)
        except httpx.HTTPError as exc:  # the server may answer and close before the body is sent
            return type(exc).__name__

    with peak_rss_kb(server) as rss, concurrent.futures.ThreadPoolExecutor(POSTS) as pool:
        answers = list(pool.map(post, range(POSTS)))
    growth_mb = max(0, rss["peak"] - rss["before"]) / 1024
    return growth_mb, ", ".join(f"{n} x {a}" for a, n in sorted({a: answers.count(a) for a in answers}.items()))


@dataclass
class Rows:
    table: Table

    def add(self, benchmark: str, measured: str, value: float, target: float, target_text: str) -> None:
        """A row with its ratio to target (value / target) and the verdict: PASS at <= 1 for an upper bound
        (`target_text` "<= ..."), at >= 1 for a lower one (">= ...")."""
        ratio = value / target
        ok = ratio <= 1 if target_text.startswith("<=") else ratio >= 1
        verdict = "[green]PASS[/]" if ok else "[bold red]FAIL[/]"
        self.table.add_row(benchmark, measured, target_text, f"{ratio:.2f}", verdict)

    def info(self, benchmark: str, measured: str) -> None:
        """A row with no target: a figure that explains the others."""
        self.table.add_row(benchmark, measured, "-", "-", "info")

    def error(self, benchmark: str, exc: Exception) -> None:
        """A measurement that failed: reported as its row, and the bench goes on to the next."""
        self.table.add_row(benchmark, f"{type(exc).__name__}: {exc}"[:200], "-", "-", "[bold red]ERROR[/]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="fewer samples, no DDP throughput run")
    args = parser.parse_args()
    quick = args.quick
    console = Console() if Console().is_terminal else Console(width=160)
    code = Path(treino.__file__).resolve().parent
    table = Table(title=f"treino server (CPU slots), against the Run and Harden issues' targets; code: {code}")
    for col in ("benchmark", "measured", "target", "ratio to target", "verdict"):
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    rows = Rows(table)
    requests = REQUESTS_PER_CLIENT // 2 if quick else REQUESTS_PER_CLIENT
    with tempfile.TemporaryDirectory() as tmp:
        # 1-2: a plain server.
        server = Server(Path(tmp) / "a")
        try:
            submits = SUBMITS // 4 if quick else SUBMITS
            p50 = statistics.median(submit_latency(server, submits))
            rows.add(
                f"submit -> running p50 ({submits} jobs)", f"{p50 * 1000:.0f} ms", p50, TARGET_SUBMIT_S, "<= 1,000 ms"
            )
            if not quick:
                what = f"ddp_train.py {THROUGHPUT_STEPS} steps, 2 ranks: direct / under treino"
                try:
                    direct, managed = throughput(server)
                    rows.add(
                        what,
                        f"{direct:.1f} s / {managed:.1f} s = {direct / managed:.3f}x",
                        direct / managed,
                        TARGET_DDP_RATIO,
                        f">= {TARGET_DDP_RATIO}x",
                    )
                except (subprocess.CalledProcessError, RuntimeError) as exc:  # e.g. torchrun's rendezvous port taken
                    rows.error(what, exc)
        finally:
            server.stop()
        # 3, and 4 at 10,000: the queue.
        seed_jobs(Path(tmp) / "q", QUEUED_JOBS + SLOTS, "queued")
        server = Server(Path(tmp) / "q")
        try:
            server.wait_running(SLOTS)
            time.sleep(SETTLE_S)
            idle_s = IDLE_S / 2 if quick else IDLE_S
            cpu = idle_cpu(server, idle_s)
            rows.add(
                f"idle server CPU, {QUEUED_JOBS:,} jobs queued, {SLOTS} running ({idle_s:g} s)",
                f"{cpu * 100:.1f} %",
                cpu,
                TARGET_IDLE_CPU,
                f"<= {TARGET_IDLE_CPU * 100:g} % of a core",
            )
            n = RATE_SUBMITS // 2 if quick else RATE_SUBMITS
            rate = submit_rate(server, n)
            rows.add(
                f"submits, one client, {QUEUED_JOBS:,} jobs queued ({n} sequential POSTs)",
                f"{rate:.1f} /s",
                rate,
                TARGET_SUBMITS_PER_S,
                f">= {TARGET_SUBMITS_PER_S:g} /s",
            )
            times = list_latency(server, 0.0, requests)
            p99 = pct(times, 0.99)
            rows.add(
                f"GET /api/v1/jobs, {QUEUED_JOBS:,} jobs (queued), {CLIENTS} clients back to back: p50 / p99",
                f"{statistics.median(times) * 1000:.0f} / {p99 * 1000:.0f} ms",
                p99,
                TARGET_LIST_P99_S,
                f"<= {TARGET_LIST_P99_S * 1000:g} ms",
            )
            add_wrk_row(rows, server, f"{QUEUED_JOBS:,} jobs (queued)")
        finally:
            server.stop()
        # 4 at 1,000.
        seed_jobs(Path(tmp) / "b", DB_JOBS, "succeeded")
        server = Server(Path(tmp) / "b")
        try:
            ways = [(0.0, "back to back")] + ([] if quick else [(POLL_PERIOD_S, f"each every {POLL_PERIOD_S:g} s")])
            for think_s, how in ways:
                times = list_latency(server, think_s, requests)
                p99 = pct(times, 0.99)
                rows.add(
                    f"GET /api/v1/jobs, {DB_JOBS:,} jobs (finished), {CLIENTS} clients {how}: p50 / p99",
                    f"{statistics.median(times) * 1000:.0f} / {p99 * 1000:.0f} ms",
                    p99,
                    TARGET_LIST_P99_S,
                    f"<= {TARGET_LIST_P99_S * 1000:g} ms",
                )
            add_wrk_row(rows, server, f"{DB_JOBS:,} jobs (finished)")
            add_client_floor_row(rows, server, requests, Path(tmp))
        finally:
            server.stop()
        # 5: each way on a fresh server, so neither starts from the other's grown heap.
        for chunked, how in ((True, "chunked, no Content-Length"), (False, "with Content-Length")):
            server = Server(Path(tmp) / f"post-{chunked}")
            try:
                growth_mb, answers = big_posts(server, chunked)
                rows.add(
                    f"{POSTS} concurrent {POST_BYTES // 1024**2} MB POSTs, no token, {how} ({answers}): RSS growth",
                    f"{growth_mb:.0f} MB",
                    growth_mb,
                    TARGET_RSS_GROWTH_MB,
                    f"<= {TARGET_RSS_GROWTH_MB:g} MB",
                )
            finally:
                server.stop()
    console.print(table)
    console.print(
        "ratio to target: measured / target; PASS at <= 1 for an upper bound, >= 1 for a lower one. CPU is the server "
        "process's (/proc/PID/stat); MB are MiB of resident memory (/proc/PID/status)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
