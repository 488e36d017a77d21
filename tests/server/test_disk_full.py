"""A job that fills the disk, on a real small filesystem: a server whose data dir is a tmpfs of DISK_MIB MiB.

The job writes until ENOSPC with max_restarts: 0. It must fail once as `disk_full` (never retried as a node fault,
never requeued for free), its failure detail must say that the disk is full, where and what is free; while the disk
is still full reads answer (the job list, the job, `treino audit verify`) and a submit is refused with a clear 507
or accepted; once the file is deleted everything works again.

`classify` is checked against the real output of a write and of torch.save on the full disk.

Mounting needs root: without it the test is skipped saying why, but under CI=true (CI runs as root) it must run.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import ServerProcess, StartServer, clean_env
from treino.server.backend import ExitInfo
from treino.server.service import classify

DISK_MIB = 32
JOB_TIMEOUT_S = 60.0
CLI_TIMEOUT_S = 60.0
# Writes until the disk refuses; its traceback (OSError: [Errno 28]) may not fit in its log: the supervisor says it.
FILL = (
    "import os\nwith open('fill.bin', 'wb') as f:\n    while True:\n        f.write(os.urandom(1 << 20)); f.flush()\n"
)


@pytest.fixture
def small_disk(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A tmpfs of DISK_MIB MiB, unmounted at teardown (after the servers on it stop: request it first)."""
    where = tmp_path_factory.mktemp("small-disk") / "data"
    where.mkdir()
    why = None
    if os.geteuid() != 0:
        why = "mounting a small tmpfs needs root"
    else:
        mounted = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", f"size={DISK_MIB}m", "tmpfs", str(where)], capture_output=True, text=True
        )
        if mounted.returncode != 0:
            why = f"mount -t tmpfs failed: {mounted.stderr.strip()}"
    if why:
        if os.environ.get("CI") == "true":
            pytest.fail(f"the disk-full test must run under CI=true, but {why}")
        pytest.skip(why)
    try:
        yield where
    finally:
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=True)


def fill(path: Path) -> None:
    """Write `path` until the disk is full (what is left is less than one page)."""
    try:
        with path.open("wb") as f:
            while True:
                f.write(b"\1" * 4096)
                f.flush()
    except OSError as exc:  # at once when not even a file can be made
        assert exc.errno == 28, exc


def wait_final(c: httpx.Client, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        job: dict[str, Any] = c.get(f"/api/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not end: {job}")


def audit_verify(server: ServerProcess, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = clean_env(HOME=str(cwd), XDG_CONFIG_HOME=str(cwd / "xdg"), TREINO_URL=server.url, TREINO_TOKEN=server.token)
    argv = [sys.executable, "-m", "treino", "audit", "verify"]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=CLI_TIMEOUT_S, env=env)


def test_a_job_that_fills_the_disk_fails_once_as_disk_full_and_reads_go_on(
    small_disk: Path, start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(data_dir=small_disk)
    with server.client() as c:
        paths = c.get("/openapi.json").json()["paths"]  # the 507 is in the contract of what writes, not of reads
        assert "507" in paths["/api/v1/jobs"]["post"]["responses"]
        assert "507" not in paths["/api/v1/jobs"]["get"]["responses"]
        assert "507" in paths["/api/v1/audit/export"]["get"]["responses"]  # recorded in the audit chain: a write
        assert "507" not in paths["/api/v1/audit/verify"]["get"]["responses"]
        r = c.post("/api/v1/jobs", json={"name": "filler", "command": [sys.executable, "-c", FILL], "max_restarts": 0})
        assert r.status_code == 201, r.text
        job_id = r.json()["id"]
        job = wait_final(c, job_id)
        # One attempt, failed as disk_full: not requeued as a node fault, no restart spent beyond max_restarts: 0.
        assert (job["state"], job["failure_reason"], job["attempts"], job["restarts"]) == ("failed", "disk_full", 1, 0)
        detail = job["failure_detail"]
        assert detail.startswith("The disk is full: "), detail
        assert f"(filesystem at {small_disk})" in detail and " free of 32.0 MiB" in detail, detail
        assert "To fix: free space on that disk" in detail, detail
        attempts = c.get(f"/api/v1/jobs/{job_id}").json()["history"]
        assert [a["outcome"] for a in attempts] == ["disk_full"], attempts

        # Whatever room the supervisor's reserve left, taken: the disk is full now.
        fill(small_disk / "filler.bin")
        assert os.statvfs(small_disk).f_bavail * os.statvfs(small_disk).f_frsize < 64 * 1024

        listed = c.get("/api/v1/jobs")
        assert listed.status_code == 200 and [j["id"] for j in listed.json()["jobs"]] == [job_id], listed.text
        assert c.get(f"/api/v1/jobs/{job_id}").status_code == 200
        verdict = c.get("/api/v1/audit/verify")
        assert verdict.status_code == 200 and verdict.json()["ok"] is True, verdict.text
        out = audit_verify(server, tmp_path)
        assert out.returncode == 0 and out.stdout.startswith("chain intact: "), out.stdout + out.stderr
        # A submit needs a write: refused with a 507 that says why, or accepted when the database still had room.
        r = c.post("/api/v1/jobs", json={"name": "while-full", "command": ["true"], "max_restarts": 0})
        assert r.status_code in (201, 507), r.text
        if r.status_code == 507:
            assert r.json()["detail"].startswith("The server's disk is full: ") and "To fix: " in r.text, r.text

        # Room again: everything works.
        (small_disk / "filler.bin").unlink()
        (small_disk / "jobs" / str(job_id) / "fill.bin").unlink()
        r = c.post("/api/v1/jobs", json={"name": "after", "command": [sys.executable, "-c", "print('room')"]})
        assert r.status_code == 201, r.text
        assert wait_final(c, r.json()["id"])["state"] == "succeeded"
        verdict = c.get("/api/v1/audit/verify")
        assert verdict.status_code == 200 and verdict.json()["ok"] is True, verdict.text
        assert "not in the audit chain" not in verdict.json()["reason"]
    assert "Exception in ASGI application" not in server.log(), server.log()[-5_000:]


WRITERS = {
    # what a training script's output says when its disk fills: a plain write, and torch.save's zip writer
    "python": "open('out.bin', 'wb').write(b'x' * (64 << 20))",
    "torch": "import torch; torch.save(torch.zeros(16 << 20), 'model.pt')",
}


@pytest.mark.parametrize("writer", sorted(WRITERS))
def test_the_output_of_a_write_on_a_full_disk_is_classified_disk_full(small_disk: Path, writer: str) -> None:
    if writer == "torch":
        pytest.importorskip("torch", reason="torch.save's message needs torch")
    out = subprocess.run(
        [sys.executable, "-c", WRITERS[writer]], cwd=small_disk, capture_output=True, text=True, timeout=CLI_TIMEOUT_S
    )
    assert out.returncode == 1, out.stderr
    assert classify(ExitInfo(1, out.stdout + out.stderr)) == ("disk_full", out.stderr.strip().splitlines()[-1])
    # and a failure that is not the disk's stays what it is
    assert classify(ExitInfo(1, "OSError: [Errno 2] No such file or directory: 'x'"))[0] == "user_error"
