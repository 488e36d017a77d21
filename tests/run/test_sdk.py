"""The Job SDK on real files and real processes: checkpoints, torchrun DDP kills and resumes, SIGTERM, metrics."""

from __future__ import annotations

import datetime
import http.server
import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from treino import job
from treino.errors import JobError

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "ddp_train.py"
BIN = Path(sys.executable).parent
WAIT_S = 60.0  # the longest any single wait in these tests may take before failing


# --- in-process checkpoint tests ---------------------------------------------------------------------------
def _state(step: int) -> dict[str, Any]:
    return {"w": torch.full((4,), float(step)), "step": step}


def test_local_run_identity(local_run: job.Run, tmp_path: Path) -> None:
    assert not local_run.is_managed
    assert (local_run.rank, local_run.world_size, local_run.attempt) == (0, 1, 1)
    assert local_run.checkpoint_dir == tmp_path / "ckpt"
    assert local_run.restore() is None and local_run.checkpoint_step is None
    assert not local_run.should_stop
    local_run.log(step=1, loss=2.5, acc=float("nan"))
    assert [(p.step, p.values) for p in local_run.metrics] == [(1, {"loss": 2.5, "acc": None})]


def test_save_restore_round_trip_keeps_last_k(local_run: job.Run) -> None:
    for step in range(1, 6):
        path = local_run.save(_state(step), step=step)
        assert path.name == f"step-{step:09d}.pt"
    assert [s for s, _ in local_run.checkpoints()] == [3, 4, 5]
    state = local_run.restore()
    assert local_run.checkpoint_step == 5
    assert state["step"] == 5 and torch.equal(state["w"], torch.full((4,), 5.0))


def test_torn_newest_checkpoints_are_skipped(local_run: job.Run, caplog: pytest.LogCaptureFixture) -> None:
    for step in (1, 2, 3):
        local_run.save(_state(step), step=step)
    newest = local_run.checkpoint_dir / "step-000000003.pt"
    newest.write_bytes(newest.read_bytes()[: newest.stat().st_size // 2])  # cut by a kill
    (local_run.checkpoint_dir / "step-000000004.pt").write_bytes(b"garbage")
    (local_run.checkpoint_dir / "step-000000005.pt").write_bytes(b"")
    with caplog.at_level(logging.WARNING, logger="treino.job"):
        state = local_run.restore()
    assert local_run.checkpoint_step == 2 and state["step"] == 2
    skipped = sorted(r.getMessage().split()[3] for r in caplog.records)
    assert [Path(s.rstrip(":")).name for s in skipped] == [f"step-00000000{i}.pt" for i in (3, 4, 5)]


def test_leftover_temp_file_is_ignored_then_removed(local_run: job.Run) -> None:
    local_run.save(_state(1), step=1)
    temp = local_run.checkpoint_dir / ".step-000000002.pt.tmp-99999"
    torch.save(_state(2), temp)  # complete, but never renamed: not a checkpoint
    assert local_run.restore()["step"] == 1 and local_run.checkpoint_step == 1
    local_run.save(_state(3), step=3)
    assert not temp.exists()
    assert sorted(p.name for p in local_run.checkpoint_dir.iterdir()) == ["step-000000001.pt", "step-000000003.pt"]


def test_weights_only_refusal_is_an_error_not_a_torn_file(local_run: job.Run) -> None:
    local_run.save({"when": datetime.date(2025, 1, 1)}, step=1)
    with pytest.raises(JobError, match=r"intact but does not load.*weights_only=False"):
        local_run.restore()
    assert local_run.restore(weights_only=False) == {"when": datetime.date(2025, 1, 1)}


def test_managed_run_without_token_fails_closed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(job.ENV_JOB_ID, "3")
    monkeypatch.delenv(job.ENV_JOB_TOKEN, raising=False)
    with pytest.raises(JobError, match="TREINO_JOB_TOKEN"):
        job.Run()


# --- real processes ------------------------------------------------------------------------------------------
class Proc:
    """A child in its own process group whose stdout lines are collected by a thread; killed on close."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.popen = subprocess.Popen(
            argv, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
        )
        self.lines: queue.Queue[str] = queue.Queue()
        self.stdout: list[str] = []
        self.stderr = ""
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            self.stdout.append(line.rstrip("\n"))
            self.lines.put(line.rstrip("\n"))

    def wait_line(self, prefix: str) -> str:
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=0.1)
            except queue.Empty:
                assert self.popen.poll() is None, f"exited {self.popen.returncode} before {prefix!r}: {self.stdout}"
                continue
            if line.startswith(prefix):
                return line
        raise AssertionError(f"no line starting with {prefix!r} in {WAIT_S} s: {self.stdout}")

    def wait(self) -> int:
        assert self.popen.stderr is not None
        self.stderr = self.popen.stderr.read()
        rc = self.popen.wait(timeout=WAIT_S)
        self._reader.join(timeout=5)
        return rc

    def close(self) -> None:
        if self.popen.poll() is None:
            os.killpg(self.popen.pid, signal.SIGKILL)
            self.popen.wait()


@pytest.fixture
def procs() -> Iterator[list[Proc]]:
    started: list[Proc] = []
    yield started
    for p in started:
        p.close()


def _env(checkpoint_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREINO_")}
    # CPU only (gloo), also on a GPU machine: two ranks need two GPUs under NCCL.
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1", **extra)
    env[job.ENV_CHECKPOINT_DIR] = str(checkpoint_dir)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    return env


def _torchrun(procs: list[Proc], checkpoint_dir: Path, *args: str) -> Proc:
    argv = [str(BIN / "torchrun"), "--standalone", "--nproc-per-node=2", str(SCRIPT), *args]
    procs.append(Proc(argv, _env(checkpoint_dir)))
    return procs[-1]


def _worker_of_rank(torchrun_pid: int, rank: int) -> int:
    """The pid of torchrun's child process with RANK=rank (Linux /proc)."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                environ = (entry / "environ").read_bytes().split(b"\0") if ppid == torchrun_pid else []
            except (OSError, IndexError, ValueError):
                continue  # exited meanwhile
            if f"RANK={rank}".encode() in environ:
                return int(entry.name)
        time.sleep(0.1)
    raise AssertionError(f"no worker with RANK={rank} under torchrun {torchrun_pid}")


def _wait_for(path: Path) -> None:
    deadline = time.monotonic() + WAIT_S
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def test_torchrun_ddp_kill_resume_and_sigterm(tmp_path: Path, procs: list[Proc]) -> None:
    # A run that never stops: the reference loss.
    clean = _torchrun(procs, tmp_path / "clean", "--steps", "40")
    assert clean.wait() == 0, clean.stderr
    done = clean.stdout[-1]
    assert done.startswith("done step=40 loss="), clean.stdout

    # SIGKILL rank 1 mid-run: torchrun fails, the last checkpoint survives.
    ckpt = tmp_path / "killed"
    killed = _torchrun(procs, ckpt, "--steps", "40", "--save-every", "5", "--sleep", "0.1")
    _wait_for(ckpt / "step-000000010.pt")
    os.kill(_worker_of_rank(killed.popen.pid, 1), signal.SIGKILL)
    assert killed.wait() != 0
    assert not any(line.startswith("done") for line in killed.stdout), killed.stdout
    steps = [int(p.name[5:14]) for p in sorted(ckpt.glob("step-*.pt"))]
    assert 1 <= len(steps) <= 3 and steps[-1] >= 10 and all(s % 5 == 0 and s < 40 for s in steps), steps

    # Resume, then SIGTERM rank 1 only: both ranks must agree to stop at the same step, save, and exit 0.
    stopped = _torchrun(procs, ckpt, "--steps", "40", "--save-every", "5", "--sleep", "0.1")
    assert stopped.wait_line("resumed from step=") == f"resumed from step={steps[-1]}"
    stopped.wait_line("start step=")
    os.kill(_worker_of_rank(stopped.popen.pid, 1), signal.SIGTERM)
    assert stopped.wait() == 0, stopped.stderr
    last = stopped.stdout[-1]
    assert last.startswith("stopped step="), stopped.stdout
    stop_step = int(last.split()[1].removeprefix("step="))
    assert steps[-1] <= stop_step < 40 and (ckpt / f"step-{stop_step:09d}.pt").exists()

    # Resume to the end: the same loss as the run that never stopped (batches are a function of the step).
    final = _torchrun(procs, ckpt, "--steps", "40", "--save-every", "5")
    assert final.wait() == 0, final.stderr
    assert final.stdout[0] == f"resumed from step={stop_step}"
    assert final.stdout[-1] == done


def test_sigterm_local_run_saves_and_exits_zero(tmp_path: Path, procs: list[Proc]) -> None:
    argv = [sys.executable, str(SCRIPT), "--steps", "100000", "--save-every", "1000", "--sleep", "0.01"]
    procs.append(Proc(argv, _env(tmp_path)))
    p = procs[-1]
    assert p.wait_line("start step=") == "start step=1 world_size=1 attempt=1"
    time.sleep(0.3)
    p.popen.send_signal(signal.SIGTERM)
    assert p.wait() == 0, p.stderr
    stop_step = int(p.stdout[-1].split()[1].removeprefix("step="))
    assert p.stdout[-1].startswith("stopped step=") and 1 <= stop_step < 1000
    assert [c.name for c in tmp_path.glob("step-*.pt")] == [f"step-{stop_step:09d}.pt"]


# --- metrics over real HTTP --------------------------------------------------------------------------------
class Recorder(http.server.BaseHTTPRequestHandler):
    """Records every POST; answers 500 to the first FAIL_METRICS metrics POSTs and the first checkpoint POST (the
    SDK retries both)."""

    FAIL_METRICS = 2
    requests: ClassVar[list[tuple[str, str, dict[str, Any], int]]] = []  # path, Authorization, body, status sent

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        earlier = [r for r in self.requests if r[0] == self.path]
        failing = len(earlier) < (self.FAIL_METRICS if self.path.endswith("/metrics") else 1)
        status = 500 if failing else 200
        self.requests.append((self.path, self.headers.get("Authorization", ""), body, status))
        self.send_response(status)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"{}")

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_metrics_are_batched_retried_and_checkpoints_reported(tmp_path: Path, procs: list[Proc]) -> None:
    Recorder.requests = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        env = _env(
            tmp_path,
            TREINO_URL=f"http://127.0.0.1:{server.server_address[1]}",
            TREINO_JOB_ID="7",
            TREINO_JOB_TOKEN="s3cret",
            TREINO_ATTEMPT="2",
        )
        argv = [sys.executable, str(SCRIPT), "--steps", "250", "--save-every", "100", "--sleep", "0.004"]
        procs.append(Proc(argv, env))
        p = procs[-1]
        assert p.wait() == 0, p.stderr
    finally:
        server.shutdown()
        server.server_close()
    assert p.stdout[0] == "start step=1 world_size=1 attempt=2"
    assert p.stdout[-1].startswith("done step=250 loss=")
    assert {auth for _, auth, _, _ in Recorder.requests} == {"Bearer s3cret"}

    metrics = [(body, status) for path, _, body, status in Recorder.requests if path == "/api/v1/jobs/7/metrics"]
    assert [status for _, status in metrics][:2] == [500, 500] and metrics[-1][1] == 200
    delivered = [pt for body, status in metrics if status == 200 for pt in body["points"]]
    assert [pt["step"] for pt in delivered] == list(range(1, 251))  # each once, in order, despite the 500s
    assert len(metrics) < 250 / 10  # batched
    assert all(set(pt["values"]) == {"loss", "lr"} and isinstance(pt["time"], float) for pt in delivered)

    reports = [(b, s) for path, _, b, s in Recorder.requests if path == "/api/v1/jobs/7/checkpoints"]
    assert [(b["step"], s) for b, s in reports] == [(100, 500), (100, 200), (200, 200), (250, 200)]  # retried, in order
    for body, _ in reports:
        assert body["path"] == str(tmp_path / f"step-{body['step']:09d}.pt")
        assert body["bytes"] == Path(body["path"]).stat().st_size
    assert "retrying with backoff" in p.stderr
    assert (tmp_path / job.JOURNAL_NAME).read_text() == ""  # everything acknowledged: nothing left to replay


def test_log_skips_a_key_the_server_would_refuse_warning_once(
    local_run: job.Run, caplog: pytest.LogCaptureFixture
) -> None:
    # The server refuses a whole batch holding one such key (422, and the SDK drops a refused batch): skipped here.
    long = "k" * (job.METRIC_KEY_CHARS_MAX + 1)
    local_run.log(1, loss=1.0, **{long: 2.0})
    local_run.log(2, **{f"m{i}": 1.0 for i in range(job.METRIC_KEYS_MAX + 5)})
    local_run.log(3, loss=0.5, m0=2.0, extra=3.0)
    first, second, third = local_run.metrics
    assert first.values == {"loss": 1.0}
    assert len(second.values) == job.METRIC_KEYS_MAX - 1  # loss is the first of the job's keys
    assert third.values == {"loss": 0.5, "m0": 2.0}
    assert sum("run.log skips" in r.message for r in caplog.records) == 1
    from treino.server.settings import METRIC_KEY_CHARS_MAX, METRIC_KEYS_PER_JOB_MAX

    assert (job.METRIC_KEY_CHARS_MAX, job.METRIC_KEYS_MAX) == (METRIC_KEY_CHARS_MAX, METRIC_KEYS_PER_JOB_MAX)
