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
        self.proc.terminate()
        self.proc.wait(10)


def run(*args: str, env: dict[str, str], as_user: str = "", check: bool = True) -> str:
    who = f"({as_user}) " if as_user else ""
    print(f"{who}$ treino {' '.join(args)}", flush=True)
    out = subprocess.run([*TREINO, *args], env=env, capture_output=True, text=True)
    print(out.stdout + out.stderr, flush=True)
    if check and out.returncode != 0:
        raise SystemExit(out.returncode)
    return out.stdout
