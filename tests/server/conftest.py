"""A real `treino server` process per test: `server` (2 CPU slots) or `start_server(devices=..., extra_args=[...])`.

Each server runs as a subprocess on a free port with its own data dir, is stopped with SIGTERM (SIGKILL after
SERVER_STOP_S) at teardown, and every job process it started is killed then too: attempts run under detached
supervisors that outlive the server by design, so the fixture finds them by their cgroup (state.json) and their
attempt key (launch.json), whichever user they run as.

Jobs run as the test's own user (`--job-user` naming it: the tests' scripts live in pytest's 0700 temporary
folders); tests/server/test_isolation.py passes `job_user=None` to get a root server's default, the job user.

`start_server` and `server` run on the `database` of tests/conftest.py: each test that uses them runs twice,
[sqlite] (the data dir's own file) and [postgresql] (a fresh database per server on the session's instance).
"""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.conftest import Database
from treino.server import cgroups
from treino.server.db import sqlite_url
from treino.server.supervisor import kill_key

SERVER_START_S = 60.0  # until /healthz answers (a Slurm server first runs a 1-node job; make test runs 2 workers)
SERVER_STOP_S = 10.0  # SIGTERM -> SIGKILL
HEALTH_POLL_S = 0.1
THIS_USER = pwd.getpwuid(os.geteuid()).pw_name


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without treino's own variables, the venv's `python` first on PATH, and `extra`; in English
    (the CLI speaks the language of LC_ALL, LC_MESSAGES or LANG, and the tests read English)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREINO_") and k != "XDG_CONFIG_HOME"}
    env = {k: v for k, v in env.items() if k not in ("LC_ALL", "LC_MESSAGES")} | {"LANG": "C.UTF-8"}
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "/usr/bin:/bin")])
    return {**env, **extra}


@dataclass
class ServerProcess:
    url: str
    token: str
    data_dir: Path
    port: int
    proc: subprocess.Popen[bytes]
    log_path: Path
    devices: str
    extra_args: list[str] = field(default_factory=list)
    db_url: str | None = None  # a PostgreSQL database's URL (`--db`); None: SQLite under the data dir

    @property
    def database_url(self) -> str:
        """The URL of its database, whichever kind (for tests that reach past the API, e.g. to tamper)."""
        return self.db_url or sqlite_url(self.data_dir)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def client(self) -> httpx.Client:
        return httpx.Client(base_url=self.url, headers={"Authorization": f"Bearer {self.token}"}, timeout=10)

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """SIGTERM (or `sig`, e.g. SIGKILL to crash it), then SIGKILL after SERVER_STOP_S; the exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                self.proc.wait(SERVER_STOP_S)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


def kill_jobs(data_dir: Path) -> None:
    """SIGKILL every process of every attempt under `data_dir`, and the attempts' supervisors."""
    # First the supervisors by their command line: one started a moment ago may not have written its state.json
    # yet, and would otherwise live on (and start its job) after the test.
    jobs = str(data_dir / "jobs").encode()
    for proc in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError, ValueError):
            argv = (proc / "cmdline").read_bytes().split(b"\0")
            if b"treino.server.supervisor" in argv and any(a.startswith(jobs) for a in argv):
                os.kill(int(proc.name), signal.SIGKILL)
    for launch in data_dir.glob("jobs/*/attempt-*/launch.json"):
        with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
            record = json.loads((launch.parent / "state.json").read_text())["cgroup"]
            cgroup = cgroups.Cgroup.from_record(record)
            cgroups.kill(cgroup)
            cgroups.remove(cgroup)
        with contextlib.suppress(OSError, ValueError, KeyError):
            kill_key(json.loads(launch.read_text())["key"], grace_s=0.0)
        with contextlib.suppress(OSError, ValueError, KeyError):
            pid = int(json.loads((launch.parent / "state.json").read_text())["supervisor_pid"])
            # Only if that pid is still this attempt's supervisor, not a reused pid.
            if str(launch.parent).encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                os.kill(pid, signal.SIGKILL)


StartServer = Callable[..., ServerProcess]


class Servers:
    """Starts servers and, at `close()`, stops them and kills their jobs. Fixtures of any scope wrap one. On a
    PostgreSQL `database` each new data dir gets a fresh database; a restart on a data dir reuses its URL."""

    def __init__(self, tmp: pytest.TempPathFactory, database: Database | None = None) -> None:
        self.tmp = tmp
        self.database = database or Database()
        self.started: list[ServerProcess] = []

    def start(
        self,
        devices: str = "cpu:2",
        extra_args: Sequence[str] = (),
        data_dir: Path | None = None,
        port: int | None = None,
        job_user: str | None = THIS_USER,
    ) -> ServerProcess:
        """A running server. Pass the data dir (and port) of a stopped one to restart it on the same database.
        `job_user`: its --job-user (None: the server's default)."""
        earlier = [s.db_url for s in self.started if s.data_dir == data_dir]
        db_url = earlier[-1] if earlier else self.database.new_url()
        data_dir = data_dir or self.tmp.mktemp("server") / "data"
        port = port or free_port()
        log_path = data_dir.parent / f"server-{port}-{len(self.started)}.log"
        argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(data_dir), "--devices", devices]
        with log_path.open("wb") as log:
            proc = subprocess.Popen(
                [
                    *argv,
                    *("--port", str(port)),
                    *(["--db", db_url] if db_url else []),
                    *(["--job-user", job_user] if job_user else []),
                    *extra_args,
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                env=clean_env(COLUMNS="200"),
            )
        url = f"http://127.0.0.1:{port}"
        server = ServerProcess(url, "", data_dir, port, proc, log_path, devices, [*extra_args], db_url)
        self.started.append(server)
        deadline = time.monotonic() + SERVER_START_S
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"treino server exited with {proc.returncode}:\n{server.log()}")
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{server.url}/healthz", timeout=1).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError(f"treino server did not answer /healthz in {SERVER_START_S:g} s:\n{server.log()}")
            time.sleep(HEALTH_POLL_S)
        server.token = (data_dir / "admin-token").read_text().strip()
        return server

    def close(self) -> None:
        for server in reversed(self.started):
            server.stop()
        for data_dir in {s.data_dir for s in self.started}:
            kill_jobs(data_dir)


@pytest.fixture
def start_server(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[StartServer]:
    """`start_server(devices="cpu:2", extra_args=[], data_dir=None, port=None)` -> a running ServerProcess."""
    servers = Servers(tmp_path_factory, database)
    try:
        yield servers.start
    finally:
        servers.close()


@pytest.fixture
def server(start_server: StartServer) -> ServerProcess:
    """A running server with 2 CPU slots."""
    return start_server()


@pytest.fixture(scope="module")
def shared(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[ServerProcess]:
    """One server for a module's tests (a start costs seconds); each test names its jobs and reads their ids."""
    servers = Servers(tmp_path_factory, database)
    try:
        yield servers.start()
    finally:
        servers.close()
