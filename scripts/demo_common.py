"""What the `make demo` scripts share: a real `treino server` in the background, and the CLI run as a user types it."""

from __future__ import annotations

import os
import pwd
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
TREINO = [sys.executable, "-c", "from treino.cli.app import main; main()"]
SERVER_START_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class DemoServer:
    def __init__(self, data_dir: Path, *args: str) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        shown = " ".join(("treino server", "--data-dir", str(data_dir), "--devices", "cpu:2", *args))
        print(f"$ {shown} &", flush=True)
        cmd = [*TREINO, "server", "--data-dir", str(data_dir), "--devices", "cpu:2", "--port", str(self.port), *args]
        cmd += ["--job-user", pwd.getpwuid(os.geteuid()).pw_name]  # jobs as this user: the demo's files are 0700
        data_dir.mkdir(parents=True, exist_ok=True)
        with (data_dir / "server.log").open("w") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        print((data_dir / "server.log").read_text(), flush=True)
        self.token = (data_dir / "admin-token").read_text().strip()

    def env(self, token: str | None = None) -> dict[str, str]:
        return {**os.environ, "TREINO_URL": self.url, "TREINO_TOKEN": token or self.token, "COLUMNS": "110"}

    def stop(self) -> None:
        """Cancel the jobs still queued or running (a stopped server leaves them to their supervisors), then stop the
        server: the demo leaves nothing running behind."""
        cancel_jobs(self.url, self.token)
        self.proc.terminate()
        self.proc.wait(10)


JOBS_STOP_S = 60.0  # a cancelled job's grace period and the server's next ticks fit in this


def cancel_jobs(url: str, token: str) -> None:
    """Cancel every job of the server at `url` that has not ended, and wait until they have (JOBS_STOP_S at most)."""
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=url, headers=headers, timeout=10) as client:
        for state in ("queued", "running"):
            for job in client.get("/api/v1/jobs", params={"state": state, "limit": 500}).json()["jobs"]:
                client.post(f"/api/v1/jobs/{job['id']}/cancel")
        deadline = time.monotonic() + JOBS_STOP_S
        while time.monotonic() < deadline:
            live = [client.get("/api/v1/jobs", params={"state": s}).json()["jobs"] for s in ("running", "stopping")]
            if not any(live):
                return
            time.sleep(0.5)
        print(f"warning: jobs still stopping after {JOBS_STOP_S:g} s; see 'treino jobs' on {url}", flush=True)


def run(*args: str, env: dict[str, str], as_user: str = "", check: bool = True) -> str:
    who = f"({as_user}) " if as_user else ""
    print(f"{who}$ treino {' '.join(args)}", flush=True)
    out = subprocess.run([*TREINO, *args], env=env, capture_output=True, text=True)
    print(out.stdout + out.stderr, flush=True)
    if check and out.returncode != 0:
        raise SystemExit(out.returncode)
    return out.stdout
