"""The server's memory under unauthenticated bulk posts: four concurrent 100 MB bodies without a token, against a
real server (target: RSS growth <= 20 MB; the bodies are refused with 401 before a byte is read, and what the
clients still send is discarded as it arrives).

    python benchmarks/body_gate_bench.py
"""

from __future__ import annotations

import concurrent.futures
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
from rich.console import Console
from rich.table import Table

POSTS = 4
BODY_BYTES = 100 * 10**6
CHUNK_BYTES = 2**20
RSS_TARGET_BYTES = 20 * 2**20


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


def body() -> Iterator[bytes]:
    chunk = b"x" * CHUNK_BYTES
    for _ in range(BODY_BYTES // CHUNK_BYTES):
        yield chunk


def post(url: str, chunked: bool) -> str:
    headers = {"Content-Type": "application/json"}
    if not chunked:
        headers["Content-Length"] = str(BODY_BYTES // CHUNK_BYTES * CHUNK_BYTES)
    try:
        r = httpx.post(f"{url}/api/v1/jobs", content=body(), headers=headers, timeout=120)
    except httpx.TransportError as exc:  # the server may close the connection on a client still sending
        return type(exc).__name__
    return str(r.status_code)


def main() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        cmd = [sys.executable, "-m", "treino", "server", "--data-dir", f"{tmp}/data", "--devices", "cpu:2"]
        proc = subprocess.Popen(
            [*cmd, "--port", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
        )
        try:
            for _ in range(150):
                try:
                    if httpx.get(url + "/healthz", timeout=1).status_code == 200:
                        break
                except httpx.TransportError:
                    time.sleep(0.2)
            table = Table(title=f"{POSTS} concurrent {BODY_BYTES // 10**6} MB posts without a token")
            for col in ("framing", "answers", "seconds", "RSS before (MB)", "RSS after (MB)", "growth (MB)", "target"):
                table.add_column(col, justify="left" if col in ("framing", "answers") else "right")
            for chunked in (False, True):
                before = rss_bytes(proc.pid)
                start = time.monotonic()
                with concurrent.futures.ThreadPoolExecutor(POSTS) as pool:
                    answers = list(pool.map(post, [url] * POSTS, [chunked] * POSTS))
                seconds = time.monotonic() - start
                after = rss_bytes(proc.pid)
                growth = after - before
                table.add_row(
                    "chunked" if chunked else "Content-Length",
                    ", ".join(answers),
                    f"{seconds:.1f}",
                    f"{before / 1e6:.0f}",
                    f"{after / 1e6:.0f}",
                    f"{growth / 1e6:.1f}",
                    "ok" if growth <= RSS_TARGET_BYTES else "MISSED",
                )
            Console(width=120).print(table)
        finally:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(20)
    return 0


if __name__ == "__main__":
    sys.exit(main())
