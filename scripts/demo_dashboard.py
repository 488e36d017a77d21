"""`make demo`'s last step: a server left running in the background with the example job on it, and the dashboard's
URL and admin token printed. Its data lives in .demo/ (ignored by git); a later `make demo` replaces it, and
`.venv/bin/python scripts/demo_dashboard.py --stop` cancels its job and stops it (a server stopped with `kill`
alone leaves its running jobs to their supervisors)."""

from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
from demo_common import ROOT, SERVER_START_S, TREINO, cancel_jobs, free_port

DEMO = Path(os.environ.get("TREINO_DEMO_DIR") or ROOT / ".demo")  # elsewhere for a test, never the user's demo
PREFERRED_PORT = 8765
SERVER_STOP_S = 30.0  # SIGTERM to exit: the server signs its audit head and closes its database


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie no parent has reaped yet has stopped running)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    except (PermissionError, IndexError):
        return True
    return state != "Z"


def stop_previous() -> None:
    """Stop the server a previous run left, its jobs first (a stopped server leaves its jobs running)."""
    pid_file = DEMO / "server.pid"
    if not pid_file.exists():
        return
    try:
        pid = int(pid_file.read_text())
    except ValueError:
        pid = 0
    if not pid or not alive(pid):  # gone already (a reboot): its jobs ended with the machine or before
        pid_file.unlink()
        return
    try:
        cancel_jobs((DEMO / "server.url").read_text(), (DEMO / "data" / "admin-token").read_text().strip())
    except (OSError, httpx.HTTPError) as exc:
        print(f"Could not cancel the previous demo's jobs: {exc}", flush=True)
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + SERVER_STOP_S
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.2)
    if alive(pid):
        print(f"warning: the demo's server (PID {pid}) did not stop within {SERVER_STOP_S:g} s", flush=True)
    pid_file.unlink()


def main() -> int:
    stop_previous()
    if sys.argv[1:] == ["--stop"]:
        print(f"Stopped the demo's server and its jobs (data left in {DEMO})")
        return 0
    shutil.rmtree(DEMO, ignore_errors=True)
    DEMO.mkdir()
    port = PREFERRED_PORT
    try:
        httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=0.5)
        port = free_port()  # something already answers on 8765
    except httpx.TransportError:
        pass
    url = f"http://127.0.0.1:{port}"
    cmd = [*TREINO, "server", "--data-dir", str(DEMO / "data"), "--devices", "cpu:2", "--port", str(port)]
    cmd += ["--job-user", pwd.getpwuid(os.geteuid()).pw_name]  # jobs as this user, as the demo's files expect
    with (DEMO / "server.log").open("w") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True
        )  # keeps running after make demo
    (DEMO / "server.pid").write_text(str(proc.pid))
    (DEMO / "server.url").write_text(url)
    deadline = time.monotonic() + SERVER_START_S
    while time.monotonic() < deadline:
        try:
            if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                break
        except httpx.TransportError:
            time.sleep(0.2)
    token = (DEMO / "data" / "admin-token").read_text().strip()
    spec = {
        "name": "ddp-example",
        "script": "ddp_train.py",
        "workdir": str(ROOT / "examples"),
        "gpus": 2,
        "args": ["--steps", "600", "--save-every", "50", "--sleep", "0.05"],
        "env": {"OMP_NUM_THREADS": "1"},
    }
    httpx.post(url + "/api/v1/jobs", json=spec, headers={"Authorization": f"Bearer {token}"}, timeout=10)
    print(f"Dashboard: {url}/  (log in with the admin token below; the example job is training on it now)")
    print(f"Token:     {token}")
    print(f"Stop it:   .venv/bin/python scripts/demo_dashboard.py --stop   (its job, then server {proc.pid})")
    print(f"Data:      {DEMO}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
