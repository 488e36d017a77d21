"""Erased stays erased, and retention enforced, on a real server (SQLite: the database does not change what is
checked here; tests/govern/test_identity.py runs the migration on both): a re-import that types an erased subject's
CPF otherwise and changes the rest of their row is stripped of it, counted and audited; a dataset past its retention
period is refused to a new job and to a running job's read, with the date and the fix; an extension is audited; and
`--retention-erase` erases what expired."""

from __future__ import annotations

import csv
import datetime as dt
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import Database
from tests.govern.test_cli_govern import treino
from tests.server.test_webhooks import Receiver
from treino.govern.cpf import make_cpf

SUBJECT_FULL, SUBJECT_BARE = "063.469.421-90", "6346942190"  # one CPF, as a form and as a numeric column types it
OTHERS = [make_cpf(f"{n:09d}") for n in (123456789, 987654321, 111222333, 444555666)]
DAY_S = 86_400.0
JOB_TIMEOUT_S = 60.0

# A job that waits until its dataset's retention period is over, then reads it.
READ_LATE = """
import sys, time
from treino import job
run = job.init()
time.sleep(max(0.0, float(sys.argv[1]) - time.time()))
try:
    run.dataset("soon")
except Exception as e:
    print("refused:", e, flush=True)
    raise SystemExit(3)
"""


def api(server: Any, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(
        method, server.url + path, headers={"Authorization": f"Bearer {server.token}"}, timeout=30, **kw
    )


def ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def write(path: Path, rows: list[tuple[str, str, str]]) -> Path:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["cpf", "nome", "cidade"])
        w.writerows(rows)
    return path


def dataset(name: str, path: Path, **kw: Any) -> dict[str, Any]:
    return {
        "name": name,
        "path": str(path),
        "legal_basis": "art7-v",
        "purposes": ["crm"],
        "personal_data": True,
        "retention_days": 365,
        "subject_column": "cpf",
    } | kw


@pytest.fixture
def sqlite_only(database: Database) -> None:
    if database.kind != "sqlite":
        pytest.skip("end to end on SQLite only; the migration runs on both databases in test_identity.py")


def test_an_erased_subject_is_stripped_from_a_reimport_and_audited(
    sqlite_only: None, start_server: Callable[..., Any], tmp_path: Path
) -> None:
    server = start_server(extra_args=["--import-root", str(tmp_path)])
    first = [(SUBJECT_FULL, "Ana Souza", "Recife"), (SUBJECT_FULL, "Ana Souza", "Olinda")]
    first += [(c, "Outro", "Natal") for c in OTHERS]
    ok(api(server, "POST", "/api/v1/datasets", json=dataset("crm", write(tmp_path / "a.csv", first))), 201)
    erased = ok(api(server, "POST", "/api/v1/erasures", json={"subject": SUBJECT_BARE, "retrain": False}), 201)
    assert erased["rows_removed"] == 2

    # The same person comes back with their CPF typed without mask or leading zero, and another name and city.
    again = [(SUBJECT_BARE, "Ana S. Lima", "Caruaru"), *((c, "Outro", "Natal") for c in OTHERS[:3])]
    path = write(tmp_path / "b.csv", again)
    added = ok(api(server, "POST", "/api/v1/datasets", json=dataset("crm-2026", path)), 201)
    assert added["erased_rows_stripped"] == 1 and added["versions"][0]["rows"] == 3
    assert any("1 row(s) of 1 subject(s) erased earlier were stripped" in w for w in added["warnings"])
    refused = api(server, "POST", "/api/v1/datasets", json=dataset("crm-strict", path, strict=True))
    assert refused.status_code == 403 and refused.json()["detail"]["rule"] == "LGPD Art. 18 VI", refused.text
    assert "1 row(s) of this import belong to 1 subject(s) erased earlier" in refused.json()["detail"]["message"]

    exported = api(server, "GET", "/api/v1/audit/export").text
    records = [json.loads(line) for line in exported.splitlines()]
    kept_out = [r for r in records if r["action"] == "erasure.reimport"]
    assert [(r["dataset"], r["subject"], r["detail"]) for r in kept_out] == [
        ("crm-2026", None, {"version": 1, "rows": 1, "subjects": 1, "strict": False}),
        ("crm-strict", None, {"rows": 1, "subjects": 1, "strict": True}),
    ]
    assert not any(s in exported for s in (SUBJECT_FULL, SUBJECT_BARE, "06346942190"))
    report = ok(api(server, "POST", "/api/v1/subjects/report", json={"subject": SUBJECT_FULL}))
    assert not report["found"] and [e["id"] for e in report["erasures"]] == [erased["erasure"]]
    assert report["audit_records"] == 3  # erasure.request, dataset.version, erasure.complete: found by either spelling
    assert ok(api(server, "GET", "/api/v1/audit/verify"))["ok"]


def wait_final(server: Any, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        job = ok(api(server, "GET", f"/api/v1/jobs/{job_id}"))
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return dict(job)
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish")


def test_an_expired_dataset_is_refused_to_jobs_and_reads_and_erased_when_enabled(
    sqlite_only: None, start_server: Callable[..., Any], tmp_path: Path
) -> None:
    server = start_server(extra_args=["--import-root", str(tmp_path)])
    rows = write(tmp_path / "c.csv", [(c, "Outro", "Natal") for c in OTHERS])
    collected = time.time() - 40 * DAY_S
    old = ok(
        api(
            server,
            "POST",
            "/api/v1/datasets",
            json=dataset("old", rows, retention_days=30, collected_at=collected, residency="any"),
        ),
        201,
    )
    expired_on = dt.datetime.fromtimestamp(collected + 30 * DAY_S, dt.UTC).strftime("%Y-%m-%d")
    assert old["expired"]
    # "soon" expires a few seconds from now: a job admitted before that reads after it.
    soon_at = time.time() + 6.0
    body = dataset("soon", rows, retention_days=1, collected_at=soon_at - DAY_S, residency="any")
    assert not ok(api(server, "POST", "/api/v1/datasets", json=body), 201)["expired"]
    for name in ("old", "soon"):
        ok(api(server, "POST", "/api/v1/grants", json={"user": "admin", "dataset": name, "purposes": ["crm"]}), 201)
    script = tmp_path / "read_late.py"
    script.write_text(READ_LATE)
    job = {"name": "late", "script": str(script), "args": [str(soon_at + 0.5)], "workdir": str(tmp_path)}
    late = ok(api(server, "POST", "/api/v1/jobs", json={**job, "datasets": ["soon"], "purpose": "crm"}), 201)

    refused = api(server, "POST", "/api/v1/jobs", json={**job, "datasets": ["old"], "purpose": "crm"})
    assert refused.status_code == 403 and refused.json()["detail"]["rule"] == "retention", refused.text
    message = refused.json()["detail"]["message"]
    assert f"retention period (30 days) expired on {expired_on}" in message and "To fix:" in message

    assert wait_final(server, late["id"])["state"] == "failed"
    logs = ok(api(server, "GET", f"/api/v1/jobs/{late['id']}/logs"))["text"]
    assert "refused:" in logs and "dataset soon's retention period (1 days) expired on" in logs
    listed = {d["name"]: d["expired"] for d in ok(api(server, "GET", "/api/v1/datasets"))["datasets"]}
    assert listed == {"old": True, "soon": True}
    shown = treino("data", "list", cwd=tmp_path, url=server.url, token=server.token)
    assert shown.returncode == 0, shown.stderr
    assert "30 d, EXPIRED" in next(line for line in shown.stdout.splitlines() if " old " in line)

    extension = {"days": 30, "legal_basis": "Art. 16 I: legal obligation", "reason": "tax audit of 2026"}
    assert not ok(api(server, "POST", "/api/v1/datasets/old/retention", json=extension))["expired"]
    server.stop()

    # Restarted with --retention-erase: what expired is notified and erased at once (the purge of an erasure).
    receiver = Receiver()
    extra = ["--import-root", str(tmp_path), "--retention-erase", "--webhook", receiver.url]
    again = start_server(extra_args=extra, data_dir=server.data_dir)
    try:
        ((headers, body),) = receiver.wait(1)
        assert headers["x-treino-event"] == "retention.expired" and json.loads(body)["dataset"] == "soon"
        # One registered now whose period ends in a few seconds: noticed when it ends, not at the next hourly check.
        brief_at = time.time() + 3.0
        fresh = write(tmp_path / "b.csv", [(c, "Outra", "Recife") for c in OTHERS])  # not content purged before
        body = dataset("brief", fresh, retention_days=1, collected_at=brief_at - DAY_S, residency="any")
        assert not ok(api(again, "POST", "/api/v1/datasets", json=body), 201)["expired"]
        (_, (headers, body)) = receiver.wait(2)
        assert json.loads(body)["dataset"] == "brief" and time.time() < brief_at + 15
    finally:
        receiver.close()
    deadline = time.monotonic() + 20
    for name in ("soon", "brief"):
        while not all(v["purged_at"] for v in ok(api(again, "GET", f"/api/v1/datasets/{name}"))["versions"]):
            assert time.monotonic() < deadline, f"the expired dataset {name} was not erased"
            time.sleep(0.2)
    assert not any(v["purged_at"] for v in ok(api(again, "GET", "/api/v1/datasets/old"))["versions"])
    records = [json.loads(line) for line in api(again, "GET", "/api/v1/audit/export").text.splitlines()]
    assert [(r["action"], r["dataset"], r["actor"]) for r in records if r["action"].startswith("retention.")] == [
        ("retention.extend", "old", "admin"),
        ("retention.erase", "soon", "treino"),
        ("retention.erase", "brief", "treino"),
    ]
    assert ok(api(again, "GET", "/api/v1/audit/verify"))["ok"]
