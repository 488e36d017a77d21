"""Nothing a job reports is lost while the server is down: a real server SIGKILLed and restarted on the same data
dir while a real job saves checkpoints and logs metrics (the SDK's journal and retries, treino.job), and the
checkpoints the server finds on disk at adoption and when an attempt ends (treino.server.lineage)."""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import StartServer
from tests.server.test_jobs import EXAMPLE, ROOT, Server, final, job_pids
from treino import job as sdk

WAIT_S = 60.0


@pytest.fixture
def make_server(start_server: StartServer) -> Callable[..., Server]:
    def make(data_dir: Path | None = None, port: int | None = None) -> Server:
        return Server(start_server(data_dir=data_dir, port=port))

    return make


def train_job(name: str, steps: int, save_every: int, **extra: Any) -> dict[str, Any]:
    """examples/ddp_train.py as one process: a step (and a metric point) every 0.1 s."""
    return {
        "name": name,
        "script": EXAMPLE,
        "args": ["--steps", str(steps), "--save-every", str(save_every), "--sleep", "0.1"],
        "gpus": 1,
        "workdir": str(ROOT),
        "env": {"OMP_NUM_THREADS": "1"},
        **extra,
    }


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen in {WAIT_S:g} s"
        time.sleep(0.05)


def steps_on_disk(folder: Path) -> list[int]:
    return sorted(int(p.name[5:14]) for p in folder.glob("step-*.pt"))


def models_of(server: Server, job_id: int) -> list[tuple[str, int]]:
    models = server.api("GET", "/api/v1/models", params={"limit": 1000}).json()["models"]  # a slow run saves 100+
    return sorted((m["kind"], m["step"]) for m in models if m["job"] == job_id)


def audit_records(server: Server, action: str) -> list[dict[str, Any]]:
    r = server.api("GET", "/api/v1/audit/export", params={"fmt": "jsonl"})
    assert r.status_code == 200, r.text
    return [rec for line in r.text.splitlines() if (rec := json.loads(line))["action"] == action]


SAVER = """
import pathlib, sys, time
import torch
from treino import job

run = job.init()
step = 0
while True:  # a step every 0.1 s, a checkpoint every other step, until told to stop
    step += 1
    run.log(step=step, loss=1.0 / step)
    if step % 2 == 0:
        run.save({"w": torch.full((256,), float(step))}, step=step)
        if pathlib.Path(sys.argv[1]).exists():
            break
    time.sleep(0.1)
print(f"done step={step}", flush=True)
"""


def test_checkpoints_and_metrics_through_a_server_sigkill_are_all_recorded_once(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    script, stop = tmp_path / "saver.py", tmp_path / "stop"
    script.write_text(SAVER)
    server = make_server()
    job_id = server.submit({"name": "outage", "command": [sys.executable, str(script), str(stop)]})
    server.wait(job_id, lambda j: (j["checkpoint_step"] or 0) >= 4)
    server.crash()
    folder = server.data_dir / "jobs" / str(job_id) / "checkpoints"
    down_at = steps_on_disk(folder)[-1]
    wait_until(lambda: steps_on_disk(folder)[-1] >= down_at + 10, "five checkpoints saved with no server")
    unsent = sdk.parse_journal((folder / sdk.JOURNAL_NAME).read_text())
    assert [e for e in unsent if e.kind == "checkpoint"] and [e for e in unsent if e.kind == "metrics"]

    again = make_server(data_dir=server.data_dir, port=server.port)
    assert again.job(job_id)["state"] == "running"
    time.sleep(1.0)  # a few more checkpoints with the server back
    stop.touch()
    done = again.wait(job_id, final)
    assert done["state"] == "succeeded" and done["attempts"] == 1, again.logs(job_id)
    last = int(again.logs(job_id).split("done step=")[1].split()[0])

    # Every checkpoint saved, once each: the ones pruned from disk during the outage came from the journal.
    saved = list(range(2, last + 1, 2))
    assert [c["step"] for c in done["checkpoints"]] == saved and done["checkpoint_step"] == last
    assert steps_on_disk(folder) == saved[-3:]  # the SDK keeps 3
    assert models_of(again, job_id) == sorted([("checkpoint", s) for s in saved] + [("final", last)])
    # The ones on disk at the restart were found there before the job's replay reached the server: no duplicate.
    found = [r["detail"]["step"] for r in audit_records(again, "checkpoint.found") if r["job_id"] == job_id]
    assert set(found) <= set(range(down_at, last + 1)) and len(found) == len(set(found))
    # Every metric point, once each, including those logged while no server listened.
    points = again.api("GET", f"/api/v1/jobs/{job_id}/metrics").json()["points"]
    assert [p["step"] for p in points] == list(range(1, last + 1))
    assert (folder / sdk.JOURNAL_NAME).read_text() == ""  # all acknowledged


QUIET_SAVER = """
import pathlib, os, sys, time
folder = pathlib.Path(os.environ["TREINO_CHECKPOINT_DIR"])
(folder / "step-000000001.pt").write_bytes(b"1" * 10)
while not pathlib.Path(sys.argv[1]).exists():
    time.sleep(0.05)
(folder / "step-000000002.pt").write_bytes(b"2" * 20)
shard = folder / "step-000000003"  # a sharded checkpoint (torch.distributed.checkpoint): complete with .metadata
shard.mkdir()
(shard / "__0_0.distcp").write_bytes(b"3" * 30)
(shard / ".metadata").write_bytes(b"m")
(folder / "step-000000004").mkdir()  # one still being written: no .metadata yet
(folder / ".step-000000005.pt.tmp-1").write_bytes(b"t")  # a temp file is never a checkpoint
framework = folder / "checkpoint-6"  # any other folder the SDK registered: its marker, written last, names the step
framework.mkdir()
(framework / "model.safetensors").write_bytes(b"6" * 60)
(framework / ".treino-checkpoint").write_text('{"step": 6}')
(folder / "checkpoint-7").mkdir()  # no marker: not a checkpoint (yet)
(folder / "checkpoint-7" / "model.safetensors").write_bytes(b"7")
"""


def test_checkpoints_never_reported_are_found_on_disk_at_adoption_and_at_the_end(
    make_server: Callable[..., Server], tmp_path: Path
) -> None:
    script, go = tmp_path / "quiet.py", tmp_path / "go"
    script.write_text(QUIET_SAVER)
    server = make_server()
    job_id = server.submit({"name": "quiet", "command": [sys.executable, str(script), str(go)]})
    folder = server.data_dir / "jobs" / str(job_id) / "checkpoints"
    wait_until(lambda: (folder / "step-000000001.pt").exists(), "the first checkpoint")
    assert server.job(job_id)["checkpoints"] == []  # the job reports nothing
    server.crash()

    again = make_server(data_dir=server.data_dir, port=server.port)
    adopted = again.job(job_id)
    assert adopted["state"] == "running"
    assert [(c["step"], c["bytes"], c["attempt"]) for c in adopted["checkpoints"]] == [(1, 10, 1)]
    assert models_of(again, job_id) == [("checkpoint", 1)]

    go.touch()
    done = again.wait(job_id, final)
    assert done["state"] == "succeeded", again.logs(job_id)
    assert [(c["step"], c["bytes"], Path(c["path"]).name) for c in done["checkpoints"]] == [
        (1, 10, "step-000000001.pt"),
        (2, 20, "step-000000002.pt"),
        (3, 31, "step-000000003"),
        (6, 71, "checkpoint-6"),
    ]
    assert done["checkpoint_step"] == 6
    assert models_of(again, job_id) == [
        ("checkpoint", 1),
        ("checkpoint", 2),
        ("checkpoint", 3),
        ("checkpoint", 6),
        ("final", 6),
    ]
    found = [r for r in audit_records(again, "checkpoint.found") if r["job_id"] == job_id]
    assert [(r["detail"]["step"], r["detail"]["bytes"]) for r in found] == [(1, 10), (2, 20), (3, 31), (6, 71)]
    assert all("did not report" in r["detail"]["source"] and r["actor"] == "admin" for r in found)
    assert again.api("GET", "/api/v1/audit/verify").json()["ok"]


def test_a_later_attempt_replays_the_journal_an_earlier_one_left(make_server: Callable[..., Server]) -> None:
    server = make_server()
    job_id = server.submit(train_job("replay", steps=60, save_every=5, max_restarts=1))
    server.wait(job_id, lambda j: (j["last_step"] or 0) >= 5)
    server.crash()
    folder = server.data_dir / "jobs" / str(job_id) / "checkpoints"
    journal = folder / sdk.JOURNAL_NAME

    def journaled_points() -> list[tuple[int, float]]:
        entries = sdk.parse_journal(journal.read_text())
        return [(p["step"], p["time"]) for e in entries for p in e.body.get("points", [])]

    wait_until(lambda: len(journaled_points()) >= 15, "fifteen metric points journaled with no server")
    for pid in job_pids(server.url, job_id):  # the attempt dies with its unsent reports on disk only
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not job_pids(server.url, job_id), "the attempt's end")
    left = sdk.parse_journal(journal.read_text())
    points = journaled_points()
    checkpoints = sorted(e.body["step"] for e in left if e.kind == "checkpoint")
    assert points and checkpoints

    again = make_server(data_dir=server.data_dir, port=server.port)
    done = again.wait(job_id, final)
    assert done["state"] == "succeeded" and done["attempts"] == 2, again.logs(job_id, attempt=2)
    recorded = [(p["step"], p["time"]) for p in again.api("GET", f"/api/v1/jobs/{job_id}/metrics").json()["points"]]
    assert set(points) <= set(recorded)  # what attempt 1 logged during the outage, sent by attempt 2
    assert max(Counter(recorded).values()) == 1
    steps = [c["step"] for c in done["checkpoints"]]
    assert set(checkpoints) <= set(steps) and len(steps) == len(set(steps))
    assert journal.read_text() == ""


HOSTILE_FOLDER = """
import os, pathlib
folder = pathlib.Path(os.environ["TREINO_CHECKPOINT_DIR"])
(folder / ("step-" + "9" * 25 + ".pt")).write_bytes(b"x")  # a step no 64-bit column holds
(folder / "step-000000007.pt").write_bytes(b"y")
many = folder / "step-000000008"  # a sharded checkpoint whose folder the server cannot list
(many / "sub").mkdir(parents=True)
(many / ".metadata").write_bytes(b"z")
(many / "sub").chmod(0)
"""


def test_whatever_a_job_leaves_in_its_checkpoint_folder_never_stops_the_engine(
    make_server: Callable[..., Server],
) -> None:
    """The folder is the job's, and the server scans it inside the pass that records every job's exit: a step past
    64 bits or an unreadable folder must be skipped, not fail that pass (then nothing would start or end again)."""
    server = make_server()
    hostile = server.submit({"name": "hostile", "command": [sys.executable, "-c", HOSTILE_FOLDER]})
    assert server.wait(hostile, final)["state"] == "succeeded", server.logs(hostile)
    steps = [c["step"] for c in server.job(hostile)["checkpoints"]]
    assert 7 in steps and all(step < 2**63 for step in steps), steps
    after = server.submit({"name": "after", "command": [sys.executable, "-c", "pass"]})
    assert server.wait(after, final, timeout_s=30)["state"] == "succeeded"
    assert "OverflowError" not in server.process.log() and "Traceback" not in server.process.log()
