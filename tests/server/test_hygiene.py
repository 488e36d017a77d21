"""What a start refuses, in one line and exit code 1, before it touches the database or says it listens: a data dir
another server runs on (its lock, released by the kernel when that server dies, SIGKILL included) and a port in
use. And `treino --version`.

The lock is per data dir, whichever database it uses, so these run on SQLite only.
"""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import THIS_USER, Servers, clean_env, free_port

REFUSED_START_S = 30.0  # a refused start exits long before this


@pytest.fixture
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Servers]:
    started = Servers(tmp_path_factory)  # SQLite
    try:
        yield started
    finally:
        started.close()


def start_refused(data_dir: Path, port: int) -> tuple[int, str]:
    """`treino server` on `data_dir` and `port`, expected to exit at start: (exit status, its output)."""
    argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(data_dir), "--devices", "cpu:2"]
    argv += ["--port", str(port), "--job-user", THIS_USER]
    done = subprocess.run(
        argv,
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        env=clean_env(COLUMNS="200"),
        timeout=REFUSED_START_S,
    )
    return done.returncode, done.stdout + done.stderr


def answers(url: str) -> bool:
    return httpx.get(f"{url}/healthz", timeout=5).status_code == 200


def test_a_second_server_on_a_data_dir_exits_1_and_a_killed_servers_lock_is_released(servers: Servers) -> None:
    first = servers.start()

    status, output = start_refused(first.data_dir, free_port())
    assert status == 1, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert str(first.data_dir) in lines[0] and f"PID {first.proc.pid}" in lines[0], output
    assert "To fix:" in lines[0] and "Traceback" not in output and "Listening" not in output, output
    assert answers(first.url), "the first server must keep serving"

    first.stop(signal.SIGKILL)  # no shutdown code runs: the kernel releases the lock
    again = servers.start(data_dir=first.data_dir, port=first.port)
    assert answers(again.url)
    assert (first.data_dir / "server.lock").read_text().strip() == str(again.proc.pid)


def test_a_busy_port_exits_1_in_one_line_before_saying_it_listens(tmp_path: Path) -> None:
    with socket.socket() as other:  # another program listening on the port
        other.bind(("127.0.0.1", 0))
        other.listen()
        port = int(other.getsockname()[1])
        status, output = start_refused(tmp_path / "data", port)
    assert status == 1, output
    lines = output.strip().splitlines()
    assert len(lines) == 1, output
    assert f"Port {port} on 127.0.0.1 is in use (by another treino server?). To fix: --port " in lines[0], output
    assert "Traceback" not in output and "Listening" not in output, output
    assert not (tmp_path / "data" / "treino.db").exists(), "a refused start must not create the database"


@pytest.mark.parametrize("flag", ["--version", "-V"])
def test_version(flag: str) -> None:
    done = subprocess.run([sys.executable, "-m", "treino", flag], capture_output=True, text=True, env=clean_env())
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"treino {version('treino')}\n"
