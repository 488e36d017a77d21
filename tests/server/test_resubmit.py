"""Continue, don't restart: a real server, real torchrun (gloo, 2 ranks) jobs that checkpoint, cancelled and
resubmitted with `treino resubmit` (a real CLI process) and the API.

They run on SQLite only, on one server: the database does not change what they show (tests/server/test_postgres.py
checks that the migration makes PostgreSQL's schema match the models).
"""

from __future__ import annotations

import csv
import json
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.orm import Session

from tests.server.conftest import ServerProcess, Servers
from tests.server.people import call, churn_job, people_and_clientes
from tests.server.test_cli_client import treino
from tests.server.test_jobs import ddp_job
from treino.govern import datasets as store_ops
from treino.server.db import make_engine

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
JOB_TIMEOUT_S = 300.0  # generous: only a failing test waits this long, and a loaded machine starts jobs slowly
SAVE_EVERY = 5  # ddp_job's --save-every
KEEP = 3  # the SDK's DEFAULT_KEEP_CHECKPOINTS


@pytest.fixture(scope="module")
def imports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder datasets may be imported from (--import-root), besides examples/data."""
    return tmp_path_factory.mktemp("imports")


@pytest.fixture(scope="module")
def sqlite_server(tmp_path_factory: pytest.TempPathFactory, imports: Path) -> Iterator[ServerProcess]:
    servers = Servers(tmp_path_factory)  # SQLite: the database does not matter to these tests
    try:
        yield servers.start(
            extra_args=["--site", "eveo-sp1", "--import-root", str(DATA), "--import-root", str(imports)]
        )
    finally:
        servers.close()


@pytest.fixture(scope="module")
def tokens(sqlite_server: ServerProcess) -> dict[str, str]:
    """Tokens by user name, once the users, the clientes dataset and eng1's grant exist (once per server)."""
    return people_and_clientes(sqlite_server.url, sqlite_server.token)


def api(server: ServerProcess, method: str, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
    return call(server.url, token or server.token, method, path, **kw)


def wait(server: ServerProcess, job_id: int, until: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    job: dict[str, Any] = {}
    while time.monotonic() < deadline:
        job = api(server, "GET", f"/api/v1/jobs/{job_id}").json()
        if until(job):
            return job
        time.sleep(0.2)
    raise AssertionError(f"job {job_id}: {job}\n{logs(server, job_id)}")


def final(job: dict[str, Any]) -> bool:
    return job["state"] in ("succeeded", "failed", "cancelled")


def logs(server: ServerProcess, job_id: int) -> str:
    return str(api(server, "GET", f"/api/v1/jobs/{job_id}/logs").json()["text"])


def first_step(server: ServerProcess, job_id: int) -> int:
    """The first step the job logged (its metrics), once it logged one."""
    wait(server, job_id, lambda j: j["last_step"] is not None)
    return int(api(server, "GET", f"/api/v1/jobs/{job_id}/metrics").json()["points"][0]["step"])


def cancel(server: ServerProcess, job_id: int) -> dict[str, Any]:
    assert api(server, "POST", f"/api/v1/jobs/{job_id}/cancel").status_code == 200
    return wait(server, job_id, final)


def test_cancel_then_resubmit_continues_from_the_last_checkpoint(sqlite_server: ServerProcess, tmp_path: Path) -> None:
    server = sqlite_server
    spec = ddp_job("resume-me", steps=100_000, sleep=0.1, grace_seconds=20)
    old = int(api(server, "POST", "/api/v1/jobs", json=spec).json()["id"])
    wait(server, old, lambda j: (j["checkpoint_step"] or 0) >= SAVE_EVERY)

    # Cancelled: the server asked for the stop, so the job is cancelled whatever torchrun's exit status (1 before,
    # with its SignalException traceback in the log; killed by SIGTERM now), and its log ends with the job's words.
    job = cancel(server, old)
    assert (job["state"], job["failure_reason"], job["history"][0]["outcome"]) == ("cancelled", None, "cancel")
    text = logs(server, old)
    assert "stopped step=" in text  # the user's own output is all there
    assert "Traceback" not in text and "SignalException" not in text, text
    last = job["checkpoint_step"]  # the SDK example saves the step it stopped at
    old_checkpoint = server.data_dir / "jobs" / str(old) / "checkpoints" / f"step-{last:09d}.pt"
    size = old_checkpoint.stat().st_size

    # `treino resubmit`: a new job that starts right after the old job's last checkpoint, linked to it.
    out = treino("resubmit", str(old), cwd=tmp_path, server=server)
    assert out.returncode == 0, out.stderr
    new = int(out.stdout.split()[2])
    assert out.stdout.strip() == (
        f"Submitted job {new} (resume-me): it continues job {old} from its checkpoint of step {last}. "
        f"Watch it with 'treino show {new}'."
    )
    assert first_step(server, new) == last + 1
    assert f"resumed from step={last}" in logs(server, new)
    job = api(server, "GET", f"/api/v1/jobs/{new}").json()
    assert (job["continues_from"], job["continues_from_step"]) == (old, last)
    shown = treino("show", str(new), cwd=tmp_path, server=server).stdout
    assert f"Continues job {old} from its checkpoint of step {last}." in shown
    seeded = job["checkpoints"][0]
    assert (seeded["step"], seeded["attempt"]) == (last, 0)  # its first checkpoint, placed before attempt 1
    assert seeded["path"] == str(server.data_dir / "jobs" / str(new) / "checkpoints" / f"step-{last:09d}.pt")
    # Once the new job rotated the seeded checkpoint away, the old job's file is still there, unchanged.
    wait(server, new, lambda j: (j["checkpoint_step"] or 0) >= last + KEEP * SAVE_EVERY)
    assert not Path(seeded["path"]).exists()
    assert old_checkpoint.stat().st_size == size
    assert cancel(server, new)["state"] == "cancelled"


def test_from_scratch_and_who_may_resubmit_what(sqlite_server: ServerProcess) -> None:
    server = sqlite_server
    tokens = {}
    for name, role in (("eng-r", "engineer"), ("view-r", "viewer")):
        assert api(server, "POST", "/api/v1/users", json={"name": name, "role": role}).status_code == 201
        tokens[name] = api(server, "POST", "/api/v1/tokens", json={"user": name}).json()["token"]
    short = ddp_job("short", steps=10, gpus=1)  # one process: plain python, no torchrun
    done = int(api(server, "POST", "/api/v1/jobs", json=short).json()["id"])
    assert wait(server, done, final)["state"] == "succeeded"

    # --from-scratch: a new job from step 1, linked to nothing.
    r = api(server, "POST", f"/api/v1/jobs/{done}/resubmit", json={"from_scratch": True})
    assert r.status_code == 201, r.text
    scratch = r.json()
    assert (scratch["continues_from"], scratch["continues_from_step"]) == (None, None)
    assert scratch["spec"] == api(server, "GET", f"/api/v1/jobs/{done}").json()["spec"]
    assert first_step(server, scratch["id"]) == 1
    assert wait(server, scratch["id"], final)["state"] == "succeeded"
    assert "resumed from" not in logs(server, scratch["id"])

    path = f"/api/v1/jobs/{done}/resubmit"
    r = api(server, "POST", path, tokens["eng-r"], json={})  # another user's job: its env may hold their secrets
    assert r.status_code == 403 and "only they or an admin" in r.json()["detail"]["message"]
    r = api(server, "POST", path, tokens["view-r"], json={"from_scratch": True})
    assert r.status_code == 403 and r.json()["detail"]["rule"] == "role"
    assert api(server, "POST", "/api/v1/jobs/999999/resubmit", json={}).status_code == 404
    assert api(server, "POST", path, json={"from_scratch": "yes"}).status_code == 422

    quick = {"name": "quick", "command": [sys.executable, "-c", "print('no checkpoint')"]}
    bare = int(api(server, "POST", "/api/v1/jobs", json=quick).json()["id"])
    assert wait(server, bare, final)["state"] == "succeeded"
    r = api(server, "POST", f"/api/v1/jobs/{bare}/resubmit", json={})  # nothing to continue from
    assert r.status_code == 409 and f"treino resubmit {bare} --from-scratch" in r.json()["detail"]

    # The engineer's own job, in its second attempt after a crash: it cannot be continued while it runs; cancelled,
    # it ends cancelled with no failure reason (the first attempt's crash is not why it ended).
    # (the second attempt sleeps far longer than the test takes: it is cancelled, never assumed still running)
    crashes_once = "import os, sys, time; sys.exit(3) if os.environ['TREINO_ATTEMPT'] == '1' else time.sleep(3600)"
    mine = {"name": "mine", "command": [sys.executable, "-c", crashes_once], "max_restarts": 1, "grace_seconds": 5}
    running = int(api(server, "POST", "/api/v1/jobs", tokens["eng-r"], json=mine).json()["id"])
    job = wait(server, running, lambda j: j["attempts"] == 2 and j["state"] == "running")
    assert job["failure_reason"] == "user_error"
    r = api(server, "POST", f"/api/v1/jobs/{running}/resubmit", tokens["eng-r"], json={})
    assert r.status_code == 409 and "running" in r.json()["detail"]
    assert api(server, "POST", f"/api/v1/jobs/{running}/cancel", tokens["eng-r"]).status_code == 200
    job = wait(server, running, final)
    assert (job["state"], job["failure_reason"], job["failure_detail"]) == ("cancelled", None, None)

    # A continuation whose checkpoint is gone before its first attempt fails as no_checkpoint: never from step 1.
    sleeper = [sys.executable, "-c", "import time; time.sleep(3600)"]  # cancelled below
    blocker = int(
        api(server, "POST", "/api/v1/jobs", json={"name": "blocker", "command": sleeper, "gpus": 2}).json()["id"]
    )
    wait(server, blocker, lambda j: j["state"] == "running")
    r = api(server, "POST", f"/api/v1/jobs/{done}/resubmit", json={})
    assert r.status_code == 201 and r.json()["state"] == "queued", r.text
    for checkpoint in (server.data_dir / "jobs" / str(done) / "checkpoints").glob("step-*.pt"):
        checkpoint.unlink()
    cancel(server, blocker)
    job = wait(server, r.json()["id"], final)
    assert (job["state"], job["failure_reason"], job["attempts"]) == ("failed", "no_checkpoint", 0)
    assert f"Cannot continue job {done}: " in job["failure_detail"] and "--from-scratch" in job["failure_detail"]


def test_a_continued_job_inherits_the_old_jobs_data_versions_and_erasure_reaches_them(
    sqlite_server: ServerProcess, imports: Path, tokens: dict[str, str]
) -> None:
    server = sqlite_server
    eng = tokens["eng1"]
    old = int(api(server, "POST", "/api/v1/jobs", eng, json=churn_job("churn-old", steps=20)).json()["id"])
    assert wait(server, old, final)["state"] == "succeeded", logs(server, old)

    # Version 2 of clientes, without one customer: the old job trained on v1, which still holds them.
    with (DATA / "clientes.csv").open() as f:
        rows = list(csv.DictReader(f))
    customer = rows[0]["cpf"]
    with (imports / "clientes.csv").open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows[1:])
    engine = make_engine(server.database_url)  # past the API: no route adds a version by re-import
    with Session(engine) as s, s.begin():
        store_ops.new_version(
            s,
            server.data_dir / "store",
            name="clientes",
            path=imports / "clientes.csv",
            allowed_roots=[imports],
            actor="eng1",
        )
    engine.dispose()

    r = api(server, "POST", f"/api/v1/jobs/{old}/resubmit", eng, json={})
    assert r.status_code == 201, r.text
    new = int(r.json()["id"])
    assert wait(server, new, final)["state"] == "succeeded", logs(server, new)
    text = logs(server, new)
    assert "resumed from step=20" in text
    assert f"read {len(rows) - 1} rows: training on" in text  # it reads its own pin, v2, never the inherited v1
    models = [m for m in api(server, "GET", "/api/v1/models", tokens["dpo1"]).json()["models"] if m["job"] == new]
    assert models and all(m["personal_data"] and m["residency"] == "BR" for m in models)
    assert all(sorted(t["version"] for t in m["trained_on"]) == [1, 2] for m in models)

    # Erase the customer: only v1 held them, and the new job's models derive from it through the old checkpoint.
    erasure = {"subject": customer, "dataset": "clientes", "retrain": False}
    report = api(server, "POST", "/api/v1/erasures", tokens["dpo1"], json=erasure).json()
    assert [p["version"] for p in report["datasets"][0]["purged"]] == [1]
    assert {m["id"] for m in models} <= set(report["models"])
    assert new in report["jobs"]
    # The old job's checkpoints carry the erased customer: it may be restarted, not continued.
    r = api(server, "POST", f"/api/v1/jobs/{old}/resubmit", eng, json={})
    assert r.status_code == 403 and r.json()["detail"]["rule"] == "erasure", r.text
    assert api(server, "POST", f"/api/v1/jobs/{old}/resubmit", eng, json={"from_scratch": True}).status_code == 201

    exported = api(server, "GET", "/api/v1/audit/export", tokens["dpo1"]).text
    records = [json.loads(x) for x in exported.splitlines() if '"job.continue"' in x]
    (continued,) = [r for r in records if r["job_id"] == new]
    assert continued["detail"]["from_job"] == old and continued["detail"]["step"] == 20


def customers() -> list[str]:
    with (DATA / "clientes.csv").open() as f:
        return [row["cpf"] for row in csv.DictReader(f)]


def models_of(server: ServerProcess, token: str, job_id: int) -> list[dict[str, Any]]:
    return [m for m in api(server, "GET", "/api/v1/models", token).json()["models"] if m["job"] == job_id]


def test_data_erased_while_a_continuation_waits_never_enters_its_models(
    sqlite_server: ServerProcess, tokens: dict[str, str]
) -> None:
    server = sqlite_server
    eng, dpo = tokens["eng1"], tokens["dpo1"]
    old = int(api(server, "POST", "/api/v1/jobs", eng, json=churn_job("churn-erased", steps=20)).json()["id"])
    assert wait(server, old, final)["state"] == "succeeded", logs(server, old)

    # Resubmitted while the slots are busy: the continuation waits in the queue, with no model yet.
    sleeper = [sys.executable, "-c", "import time; time.sleep(60)"]
    blocker = int(
        api(server, "POST", "/api/v1/jobs", json={"name": "blocker-e", "command": sleeper, "gpus": 2}).json()["id"]
    )
    wait(server, blocker, lambda j: j["state"] == "running")
    r = api(server, "POST", f"/api/v1/jobs/{old}/resubmit", eng, json={})
    assert r.status_code == 201 and r.json()["state"] == "queued", r.text
    waiting = int(r.json()["id"])

    # A customer of the version the old job trained on is erased: its checkpoint files stay on disk (an erasure
    # deletes dataset bytes, not models), and the waiting job has no model for the erasure to mark.
    erasure = {"subject": customers()[-1], "dataset": "clientes", "retrain": False}
    report = api(server, "POST", "/api/v1/erasures", dpo, json=erasure).json()
    assert report["datasets"] and waiting in report["jobs"] and models_of(server, dpo, waiting) == []
    assert list((server.data_dir / "jobs" / str(old) / "checkpoints").glob("step-*.pt"))

    # The slots free: it fails rather than carry the erased customer from the old checkpoint into new models.
    cancel(server, blocker)
    job = wait(server, waiting, final)
    assert (job["state"], job["failure_reason"], job["attempts"]) == ("failed", "erasure", 0)
    assert job["failure_detail"].startswith(f"Cannot continue job {old}: its checkpoint of step 20 was trained on")
    assert job["failure_detail"].endswith(f"To fix: treino resubmit {waiting} --from-scratch.")
    assert models_of(server, dpo, waiting) == [] and job["checkpoints"] == []
    assert not (server.data_dir / "jobs" / str(waiting) / "checkpoints").exists()  # nothing seeded


WAITS_FOR_THE_TEST = """
import os, pathlib, time
from treino import job
run = job.init()
run.dataset("clientes")
pathlib.Path(os.environ["READ_IT"]).touch()
while not pathlib.Path(os.environ["SAVE_NOW"]).exists():
    time.sleep(0.05)
run.save({"weights": [1.0]}, step=1)
run.finish()
"""


def test_a_running_jobs_models_saved_after_an_erasure_of_its_data_are_marked(
    sqlite_server: ServerProcess, tokens: dict[str, str], tmp_path: Path
) -> None:
    server = sqlite_server
    eng, dpo = tokens["eng1"], tokens["dpo1"]
    read_it, save_now = tmp_path / "read", tmp_path / "save"
    spec = {
        "name": "reads-then-saves",
        "command": [sys.executable, "-c", WAITS_FOR_THE_TEST],
        "datasets": ["clientes"],
        "purpose": "churn-model",
        "env": {"READ_IT": str(read_it), "SAVE_NOW": str(save_now)},
    }
    running = int(api(server, "POST", "/api/v1/jobs", eng, json=spec).json()["id"])
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while not read_it.exists():
        assert time.monotonic() < deadline and not final(api(server, "GET", f"/api/v1/jobs/{running}").json()), logs(
            server, running
        )
        time.sleep(0.1)
    erasure = {"subject": customers()[-2], "dataset": "clientes", "retrain": False}
    report = api(server, "POST", "/api/v1/erasures", dpo, json=erasure).json()
    assert running in report["jobs"] and models_of(server, dpo, running) == []
    save_now.touch()
    assert wait(server, running, final)["state"] == "succeeded", logs(server, running)
    models = models_of(server, dpo, running)
    assert sorted(m["kind"] for m in models) == ["checkpoint", "final"]
    assert all(m["affected_by_erasure"] == report["erasure"] for m in models), models
    assert all("held the erased subject" in m["erasure_note"] for m in models)
