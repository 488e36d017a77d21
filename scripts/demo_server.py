"""`make demo`'s server part: a real `treino server` on 2 CPU slots, the example DDP job submitted, followed and shown.

Everything runs through the `treino` CLI, as a user would type it; the server's data lives in a temp dir and the
server is stopped at the end.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
TREINO = [sys.executable, "-c", "from treino.cli.app import main; main()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run(*args: str, env: dict[str, str]) -> str:
    print(f"$ treino {' '.join(args)}", flush=True)
    out = subprocess.run([*TREINO, *args], env=env, capture_output=True, text=True)
    print(out.stdout + out.stderr, flush=True)
    if out.returncode != 0:
        raise SystemExit(out.returncode)
    return out.stdout


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="treino-demo-") as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cmd = [*TREINO, "server", "--data-dir", tmp, "--devices", "cpu:2", "--port", str(port)]
        print(f"$ treino server --data-dir {tmp} --devices cpu:2 --port {port} &", flush=True)
        with (Path(tmp) / "server.log").open("w") as log:
            server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)
        try:
            for _ in range(100):
                try:
                    if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            print((Path(tmp) / "server.log").read_text(), flush=True)
            token = (Path(tmp) / "admin-token").read_text().strip()
            env = {**os.environ, "TREINO_URL": url, "TREINO_TOKEN": token, "COLUMNS": "100"}
            out = run("submit", str(ROOT / "examples" / "job.yaml"), env=env)
            job_id = out.split("job ")[1].split()[0]
            run("logs", job_id, "--follow", env=env)
            run("show", job_id, env=env)
            run("jobs", env=env)
        finally:
            server.terminate()
            server.wait(10)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
