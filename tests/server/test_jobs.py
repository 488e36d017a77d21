"""The job server end to end with real processes: a real server, real torchrun/DDP (gloo) jobs, real signals.

Each test starts `treino server --devices cpu:2` on a free port with its own data dir, talks HTTP to it, and
kills processes the way a crash would (SIGKILL).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import ServerProcess, StartServer

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "ddp_train.py")
JOB_TIMEOUT_S = 120.0


def job_pids(url: str, job_id: int, **env: str) -> list[int]:
    """Processes of `job_id` on the server at `url` (by the variables the server gives every job process)."""
    want = [f"TREINO_URL={url}".encode(), f"TREINO_JOB_ID={job_id}".encode()]
    want += [f"{k}={v}".encode() for k, v in env.items()]
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
            state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z" and all(w in environ for w in want):
            found.append(int(entry))
    return found


class Server:
    """A started server (tests/server/conftest.py) with the few calls these tests make."""

    def __init__(self, process: ServerProcess) -> None:
        self.process = process
        self.url, self.token, self.data_dir, self.port = process.url, process.token, process.data_dir, process.port

    def crash(self) -> None:
        self.process.stop(signal.SIGKILL)

    def api(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.token}"}
        return httpx.request(method, self.url + path, headers=headers, timeout=10, **kw)

    def submit(self, spec: dict[str, Any]) -> int:
        r = self.api("POST", "/api/v1/jobs", json=spec)
        assert r.status_code == 201, r.text
        return int(r.json()["id"])

    def job(self, job_id: int) -> dict[str, Any]:
        r = self.api("GET", f"/api/v1/jobs/{job_id}")
        assert r.status_code == 200, r.text
        return dict(r.json())

    def wait(self, job_id: int, until: Callable[[dict[str, Any]], bool], timeout_s: float = JOB_TIMEOUT_S) -> dict:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            job = self.job(job_id)
            if until(job):
                return job
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} never reached the condition: {job}\n{self.logs(job_id)}")

    def logs(self, job_id: int, attempt: int | None = None) -> str:
        params = {"attempt": attempt} if attempt else {}
        return str(self.api("GET", f"/api/v1/jobs/{job_id}/logs", params=params).json()["text"])


@pytest.fixture
def make_server(start_server: StartServer) -> Callable[..., Server]:
    """`make_server(*args, data_dir=None, port=None)`: a server on 2 CPU slots; the conftest stops it and kills its
    jobs' processes at teardown."""

    def make(*args: str, data_dir: Path | None = None, port: int | None = None) -> Server:
        return Server(start_server(extra_args=list(args), data_dir=data_dir, port=port))

    return make


def ddp_job(name: str, steps: int, gpus: int = 2, **extra: Any) -> dict[str, Any]:
    sleep = str(extra.pop("sleep", 0.0))
    return {
        "name": name,
        "script": EXAMPLE,
        "args": ["--steps", str(steps), "--save-every", "5", "--sleep", sleep],
        "gpus": gpus,
        "workdir": str(ROOT),
        "env": {"OMP_NUM_THREADS": "1"},
        **extra,
    }


def final(job: dict[str, Any]) -> bool:
    return job["state"] in ("succeeded", "failed", "cancelled")


def test_two_process_ddp_job_trains_to_completion(make_server: Callable[..., Server]) -> None:
    server = make_server()
    job_id = server.submit(ddp_job("ddp", steps=20))
    job = server.wait(job_id, final)
    assert job["state"] == "succeeded", server.logs(job_id)
    assert job["attempts"] == 1 and job["exit_code"] == 0
    assert "done step=20" in server.logs(job_id)
    assert job["checkpoint_step"] == 20 and job["checkpoints"][-1]["step"] == 20
    assert job["last_step"] == 20 and job["last_loss"] is not None  # metrics came through the SDK
    points = server.api("GET", f"/api/v1/jobs/{job_id}/metrics").json()["points"]
    assert [p["step"] for p in points][-1] == 20 and "loss" in points[-1]["values"]
    assert job_pids(server.url, job_id) == []
    # The attempt's token died with it: a finished job's processes may no longer write its lineage or metrics.
    launch = json.loads((server.data_dir / "jobs" / str(job_id) / "attempt-1" / "launch.json").read_text())
    assert (server.data_dir / "jobs" / str(job_id) / "attempt-1" / "launch.json").stat().st_mode & 0o077 == 0
    job_token = {"Authorization": f"Bearer {launch['env']['TREINO_JOB_TOKEN']}"}
    late = httpx.post(
        f"{server.url}/api/v1/jobs/{job_id}/checkpoints",
        headers=job_token,
        timeout=10,
        json={"step": 21, "path": "/etc/shadow", "bytes": 1},
    )
    assert late.status_code == 401


def test_sigkill_of_a_rank_resumes_from_its_checkpoint(make_server: Callable[..., Server]) -> None:
    server = make_server()
    job_id = server.submit(ddp_job("crashy", steps=40, sleep=0.1, max_restarts=2))
    server.wait(job_id, lambda j: (j["checkpoint_step"] or 0) >= 10)
    (victim,) = job_pids(server.url, job_id, RANK="1")
    os.kill(victim, signal.SIGKILL)
    job = server.wait(job_id, final)
    assert job["state"] == "succeeded", server.logs(job_id)
    assert job["restarts"] == 1 and job["attempts"] == 2
    assert job["history"][0]["outcome"] == "signal"
    second = server.logs(job_id, attempt=2)
    assert "resumed from step=" in second and "done step=40" in second
    resumed = int(second.split("resumed from step=")[1].split()[0])
    assert resumed >= 10  # at most one checkpoint interval lost


def test_server_sigkill_and_restart_adopts_the_running_job(make_server: Callable[..., Server], tmp_path: Path) -> None:
    server = make_server()
    job_id = server.submit(ddp_job("survivor", steps=30, sleep=0.1))
    server.wait(job_id, lambda j: j["state"] == "running" and (j["last_step"] or 0) >= 3)
    server.crash()
    assert job_pids(server.url, job_id), "the job must outlive its server"
    time.sleep(1.0)
    again = make_server(data_dir=server.data_dir, port=server.port)
    job = again.wait(job_id, final)
    assert job["state"] == "succeeded", again.logs(job_id)
    assert job["attempts"] == 1  # adopted, not restarted
    assert "done step=30" in again.logs(job_id)
    # The devices it held are free again, exactly once: two 1-slot jobs run side by side.
    a, b = (again.submit({"name": n, "command": [sys.executable, "-c", "import time; time.sleep(2)"]}) for n in "ab")
    jobs = [again.wait(j, lambda j: j["state"] == "running") for j in (a, b)]
    assert sorted(d for j in jobs for d in j["devices"]) == [0, 1]


def test_cancel_leaves_no_process_behind(make_server: Callable[..., Server]) -> None:
    server = make_server()
    job_id = server.submit(ddp_job("long", steps=10_000, sleep=0.2, grace_seconds=5))
    server.wait(job_id, lambda j: (j["last_step"] or 0) >= 2)
    assert len(job_pids(server.url, job_id)) >= 3  # torchrun and its two workers
    assert server.api("POST", f"/api/v1/jobs/{job_id}/cancel").status_code == 200
    job = server.wait(job_id, final, timeout_s=30)
    assert job["state"] == "cancelled"
    assert job_pids(server.url, job_id) == []
    assert server.api("POST", f"/api/v1/jobs/{job_id}/cancel").status_code == 409


def test_priority_preemption_keeps_the_progress(make_server: Callable[..., Server]) -> None:
    server = make_server()
    low = server.submit(ddp_job("low", steps=60, sleep=0.1, priority=0))
    server.wait(low, lambda j: (j["checkpoint_step"] or 0) >= 10)
    high = server.submit({"name": "high", "priority": 10, "command": [sys.executable, "-c", "print('urgent')"]})
    done = server.wait(high, final)
    assert done["state"] == "succeeded"
    job = server.wait(low, final)
    assert job["state"] == "succeeded", server.logs(low)
    assert job["preemptions"] == 1 and job["restarts"] == 0 and job["attempts"] == 2
    second = server.logs(low, attempt=2)
    assert "resumed from step=" in second and "done step=60" in second
    assert int(second.split("resumed from step=")[1].split()[0]) >= 10


def test_api_rejects_bad_specs_tokens_and_jobs_that_cannot_fit(make_server: Callable[..., Server]) -> None:
    server = make_server("--admission-gpu", "l4")
    r = server.api("POST", "/api/v1/jobs", json={"name": "bad name", "gpus": 0, "script": "x.py"})
    assert r.status_code == 422
    fields = {e["field"] for e in r.json()["detail"]}
    assert fields == {"name", "gpus"}
    r = server.api("POST", "/api/v1/jobs", json={"name": "both", "script": "x.py", "command": ["x"]})
    assert r.status_code == 422 and "exactly one of" in r.json()["detail"][0]["message"]
    r = server.api("POST", "/api/v1/jobs", json={"name": "big", "script": "x.py", "gpus": 3})
    assert r.status_code == 422 and r.json()["detail"][0]["field"] == "gpus"
    assert "has 2" in r.json()["detail"][0]["message"]
    # Llama-3.1-8B full fine-tune in bf16-mixed AdamW needs ~16 bytes/param: never on a 24 GB L4.
    plan = {"model": "llama-3.1-8b", "micro_batch": 1, "seq_len": 2048}
    r = server.api("POST", "/api/v1/jobs", json={"name": "ft", "script": "x.py", "plan": plan})
    assert r.status_code == 422
    message = r.json()["detail"][0]["message"]
    assert r.json()["detail"][0]["field"] == "plan" and "does not fit" in message and "To fix:" in message
    small = {**plan, "model": "qwen2.5-0.5b"}  # ~8 GiB with AdamW: fits
    r = server.api("POST", "/api/v1/jobs", json={"name": "small", "command": ["true"], "plan": small})
    assert r.status_code == 201, r.text
    assert httpx.get(server.url + "/api/v1/jobs").status_code == 401
    bad = httpx.get(server.url + "/api/v1/jobs", headers={"Authorization": "Bearer trn_wrong"})
    assert bad.status_code == 401
    assert httpx.get(server.url + "/metrics").status_code == 401
    assert httpx.get(server.url + "/healthz").status_code == 200
    assert (server.data_dir / "admin-token").stat().st_mode & 0o777 == 0o600


def test_a_command_that_cannot_start_fails_once_with_the_reason(make_server: Callable[..., Server]) -> None:
    server = make_server()
    job_id = server.submit({"name": "typo", "command": ["no-such-program-xyz"], "max_restarts": 0})
    job = server.wait(job_id, final, timeout_s=30)
    assert job["state"] == "failed" and job["attempts"] == 1 and job["exit_code"] == 127
    assert "cannot start 'no-such-program-xyz'" in server.logs(job_id)


def test_the_local_backend_refuses_a_multi_node_job_naming_slurm(server: ServerProcess) -> None:
    with server.client() as c:
        r = c.post("/api/v1/jobs", json={"name": "mn", "command": ["true"], "nodes": 2})
        assert r.status_code == 422 and "--backend slurm" in r.text, r.text
        assert c.get("/api/v1/jobs").json()["jobs"] == []
