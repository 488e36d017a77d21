"""LGPD end to end on real servers: register, grant, train on CPU, refuse at a Miami site, erase a customer, retrain,
and a chain that still verifies. Plus the authorisation matrix: every endpoint x every role x bad tokens."""

from __future__ import annotations

import csv
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.people import churn_job, people_and_clientes
from treino.govern.access import PERMISSIONS
from treino.govern.models import Role

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
JOB_TIMEOUT_S = 120.0


def api(server: Any, token: str, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(method, server.url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30, **kw)


def ok(r: httpx.Response, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def wait_final(server: Any, token: str, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        job = ok(api(server, token, "GET", f"/api/v1/jobs/{job_id}"))
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return dict(job)
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish")


def setup_people_and_data(server: Any) -> dict[str, str]:
    return people_and_clientes(server.url, server.token)


def test_train_refuse_abroad_erase_retrain_and_verify(start_server: Callable[..., Any]) -> None:
    sp1 = start_server(extra_args=["--site", "eveo-sp1", "--import-root", str(DATA)])
    tokens = setup_people_and_data(sp1)

    # Train on CPU: the job reads the pinned version through run.dataset, and the read is audited.
    job = wait_final(
        sp1, tokens["eng1"], ok(api(sp1, tokens["eng1"], "POST", "/api/v1/jobs", json=churn_job()), 201)["id"]
    )
    assert job["state"] == "succeeded", api(sp1, tokens["eng1"], "GET", f"/api/v1/jobs/{job['id']}/logs").text
    # A job whose code does not ask for the memorisation check: its retraining is never handed the erased rows.
    plain_spec = {**churn_job("churn-plain", steps=2), "memorisation_check": False}
    plain = wait_final(
        sp1, tokens["eng1"], ok(api(sp1, tokens["eng1"], "POST", "/api/v1/jobs", json=plain_spec), 201)["id"]
    )
    models = ok(api(sp1, tokens["dpo1"], "GET", "/api/v1/models"))["models"]
    final = next(m for m in models if m["kind"] == "final" and m["job"] == job["id"])
    assert final["personal_data"] and final["residency"] == "BR"  # inherited from clientes: models memorise
    assert final["trained_on"] == [
        {
            "dataset": "clientes",
            "version": 1,
            "sha256": final["trained_on"][0]["sha256"],
            "erased": False,
            "purpose": "churn-model",
        }
    ]

    # Without a grant for the purpose, or without a purpose, the job is refused with the rule named.
    refused = api(sp1, tokens["eng1"], "POST", "/api/v1/jobs", json={**churn_job(), "purpose": "marketing"})
    assert refused.status_code == 403 and refused.json()["detail"]["rule"] == "purpose"
    admin_job = api(sp1, tokens["admin"], "POST", "/api/v1/jobs", json=churn_job())
    assert admin_job.status_code == 403 and admin_job.json()["detail"]["rule"] == "grant"

    # Erase one customer, with retraining.
    with (DATA / "clientes.csv").open() as f:
        customer = next(csv.DictReader(f))["cpf"]
    report = ok(api(sp1, tokens["dpo1"], "POST", "/api/v1/erasures", json={"subject": customer, "retrain": True}), 201)
    assert report["rows_removed"] == 1 and report["found"]
    assert report["deadline_at"] - report["requested_at"] == pytest.approx(15 * 86400)
    assert final["id"] in report["models"]
    (purged,) = report["datasets"][0]["purged"]
    assert not list((sp1.data_dir / "store").rglob(f"{purged['sha256']}*"))  # the old bytes are gone from disk
    dataset = ok(api(sp1, tokens["dpo1"], "GET", "/api/v1/datasets/clientes"))
    assert [v["purged_at"] is not None for v in dataset["versions"]] == [True, False]
    assert dataset["versions"][1]["rows"] == 1999
    marked = ok(api(sp1, tokens["dpo1"], "GET", f"/api/v1/lineage/models/{final['id']}"))
    assert marked["affected_by_erasure"] == report["erasure"] and marked["trained_on"][0]["erased"]

    retrain_id, plain_retrain_id = report["retrain_jobs"]  # in the order of the jobs retrained
    assert wait_final(sp1, tokens["eng1"], plain_retrain_id)["state"] == "succeeded"
    plain_logs = api(sp1, tokens["eng1"], "GET", f"/api/v1/jobs/{plain_retrain_id}/logs").json()["text"]
    assert "memorisation {" not in plain_logs and plain["state"] == "succeeded"
    retrained = wait_final(sp1, tokens["eng1"], retrain_id)
    assert retrained["state"] == "succeeded"
    logs = api(sp1, tokens["eng1"], "GET", f"/api/v1/jobs/{retrain_id}/logs").json()["text"]
    assert "read 1999 rows: training on" in logs
    new_final = [m for m in ok(api(sp1, tokens["dpo1"], "GET", "/api/v1/models"))["models"] if m["job"] == retrain_id]
    assert {m["trained_on"][0]["version"] for m in new_final} == {2}

    # An access request now finds nothing; the chain verifies and holds every step, with pseudonyms only.
    after = ok(api(sp1, tokens["dpo1"], "POST", "/api/v1/subjects/report", json={"subject": customer}))
    assert not after["found"] and after["erasures"]
    # A retraining from scratch checks what the new model remembers of the customer too (no model from before).
    (check,) = after["erasures"][0]["memorisation"]
    assert check["job"] == retrain_id and check["erased_rows"] == 1 and check["before"] is None, check
    assert check["after"]["gap"] == pytest.approx(check["after"]["erased_loss"] - check["after"]["holdout_loss"])
    assert "memorisation {" in logs and not list((sp1.data_dir / "jobs" / str(retrain_id)).glob("erased-rows-*"))
    assert ok(api(sp1, tokens["dpo1"], "GET", "/api/v1/audit/verify"))["ok"]
    exported = api(sp1, tokens["dpo1"], "GET", "/api/v1/audit/export").text
    actions = {json.loads(line)["action"] for line in exported.splitlines() if line.strip()}
    assert {
        "dataset.register",
        "grant.create",
        "job.admit",
        "job.deny",
        "dataset.read",
        "model.register",
        "erasure.request",
        "dataset.version",
        "model.mark",
        "erasure.complete",
        "subject.report",
    } <= actions
    assert customer not in exported and customer.replace(".", "").replace("-", "") not in exported
    records = api(sp1, tokens["dpo1"], "GET", "/api/v1/audit/records")
    assert records.status_code == 200 and "clientes" in records.text


def test_a_miami_site_refuses_brazilian_data_until_a_transfer_is_recorded(start_server: Callable[..., Any]) -> None:
    fl1 = start_server(extra_args=["--site", "eveo-fl1", "--import-root", str(DATA)])
    tokens = setup_people_and_data(fl1)
    refused = api(fl1, tokens["eng1"], "POST", "/api/v1/jobs", json=churn_job())
    assert refused.status_code == 403
    detail = refused.json()["detail"]
    assert detail["rule"] == "residency" and "Art. 33" in detail["message"] and "eveo-fl1" in detail["message"]
    transfer = {"site": "eveo-fl1", "mechanism": "anpd-scc", "reference": "SCC-2026-014", "signed_on": "2026-10-01"}
    ok(api(fl1, tokens["dpo1"], "POST", "/api/v1/transfers", json=transfer), 201)
    ok(api(fl1, tokens["eng1"], "POST", "/api/v1/jobs", json={**churn_job(), "args": ["--steps", "2"]}), 201)
    exported = api(fl1, tokens["dpo1"], "GET", "/api/v1/audit/export").text.splitlines()
    denials = [json.loads(line) for line in exported if line.strip() and json.loads(line)["action"] == "job.deny"]
    assert len(denials) == 1 and denials[0]["detail"]["rule"] == "residency"


# A job's logs: its owner (eng1 submits job 1 below), admins and DPOs (settings.LOGS_VISIBLE_TO); not viewers.
LOG_READERS = frozenset({Role.ADMIN, Role.ENGINEER, Role.DPO})
# Every governed route, with a body that passes validation: (method, path, body, permission or "logs").
ROUTES: list[tuple[str, str, dict[str, Any] | None, str]] = [
    ("GET", "/api/v1/inventory", None, "inventory.read"),
    ("GET", "/api/v1/jobs", None, "jobs.read"),
    ("GET", "/api/v1/jobs/1", None, "jobs.read"),
    ("GET", "/api/v1/jobs/1/logs", None, "logs"),
    ("GET", "/api/v1/jobs/1/metrics", None, "metrics.read"),
    ("GET", "/api/v1/jobs/1/metrics/keys", None, "metrics.read"),
    ("GET", "/api/v1/jobs/1/metrics/series?key=loss", None, "metrics.read"),
    ("GET", "/metrics", None, "metrics.read"),
    ("POST", "/api/v1/jobs", {"name": "m", "command": ["true"]}, "jobs.submit"),
    ("POST", "/api/v1/jobs/1/cancel", None, "jobs.cancel"),
    ("GET", "/api/v1/users", None, "users.manage"),
    ("POST", "/api/v1/users", {"name": "u-{role}", "role": "viewer"}, "users.manage"),
    ("POST", "/api/v1/users/u-admin/disable", None, "users.manage"),
    ("POST", "/api/v1/users/u-admin/enable", None, "users.manage"),
    ("GET", "/api/v1/tokens", None, "tokens.manage"),
    ("GET", "/api/v1/usage", None, "jobs.read"),  # each their own; an admin everyone's
    ("GET", "/api/v1/quotas", None, "users.manage"),
    ("PUT", "/api/v1/quotas", {"role": "viewer", "concurrent_gpus": 8}, "users.manage"),
    ("POST", "/api/v1/tokens", {"user": "view1"}, "tokens.manage"),
    ("GET", "/api/v1/grants", None, "grants.manage"),
    ("POST", "/api/v1/grants", {"user": "view1", "dataset": "clientes", "purposes": ["churn-model"]}, "grants.manage"),
    ("GET", "/api/v1/transfers", None, "transfers.manage"),
    (
        "POST",
        "/api/v1/transfers",
        {"site": "eveo-fl1", "mechanism": "anpd-scc", "reference": "r", "signed_on": "2026-01-01"},
        "transfers.manage",
    ),
    ("GET", "/api/v1/datasets", None, "datasets.read"),
    ("GET", "/api/v1/datasets/clientes", None, "datasets.read"),
    (
        "POST",
        "/api/v1/datasets/clientes/retention",
        {"days": 400, "legal_basis": "Art. 16 I", "reason": "r"},
        "erasure.run",
    ),
    ("GET", "/api/v1/audit/verify", None, "audit.read"),
    ("GET", "/api/v1/audit/export", None, "audit.read"),
    ("GET", "/api/v1/audit/records", None, "audit.read"),
    ("GET", "/api/v1/models", None, "lineage.read"),
    ("GET", "/api/v1/lineage/datasets/clientes", None, "lineage.read"),
    ("GET", "/api/v1/models/1/file", None, "lineage.read"),
    ("POST", "/api/v1/models/1/quarantine", None, "erasure.run"),
    ("POST", "/api/v1/models/1/delete", None, "erasure.run"),
    ("POST", "/api/v1/models/1/lift", {"reason": "r"}, "erasure.run"),
    ("POST", "/api/v1/subjects/report", {"subject": "000.000.001-91"}, "subject.report"),
    ("POST", "/api/v1/erasures", {"subject": "000.000.001-91"}, "erasure.run"),
]


def test_authorisation_matrix_every_route_every_role_and_bad_tokens(start_server: Callable[..., Any]) -> None:
    server = start_server(extra_args=["--site", "eveo-sp1", "--import-root", str(DATA)])
    tokens = setup_people_and_data(server)
    ok(api(server, tokens["eng1"], "POST", "/api/v1/jobs", json={"name": "j", "command": ["sleep", "30"]}), 201)
    by_role = {Role.ADMIN: "admin", Role.ENGINEER: "eng1", Role.DPO: "dpo1", Role.VIEWER: "view1"}
    for method, path, body, permission in ROUTES:
        for role, user in by_role.items():
            payload = {k: (v.format(role=role.value) if isinstance(v, str) else v) for k, v in (body or {}).items()}
            r = api(server, tokens[user], method, path, json=payload if body is not None else None)
            if role in (LOG_READERS if permission == "logs" else PERMISSIONS[permission]):
                assert r.status_code not in (401, 403), (method, path, role, r.text)
            else:
                assert r.status_code == 403, (method, path, role, r.status_code, r.text)
                assert permission in r.text
    # Missing, wrong, expired and revoked tokens: 401 everywhere.
    expiring = ok(
        api(server, server.token, "POST", "/api/v1/tokens", json={"user": "eng1", "expires_days": 0.00001}), 201
    )
    revoked = ok(api(server, server.token, "POST", "/api/v1/tokens", json={"user": "eng1"}), 201)
    ok(api(server, server.token, "POST", f"/api/v1/tokens/{revoked['id']}/revoke"))
    time.sleep(1.0)
    for method, path, body, _ in ROUTES:
        assert httpx.request(method, server.url + path, json=body, timeout=10).status_code == 401
        for bad in ("trn_wrong", expiring["token"], revoked["token"]):
            assert api(server, bad, method, path, json=body).status_code == 401, (path, bad)
    # An engineer may cancel only their own jobs; the job token reads only its own job's datasets.
    other = ok(
        api(server, tokens["admin"], "POST", "/api/v1/jobs", json={"name": "a", "command": ["sleep", "30"]}), 201
    )
    assert api(server, tokens["eng1"], "POST", f"/api/v1/jobs/{other['id']}/cancel").status_code == 403
    assert api(server, tokens["eng1"], "GET", "/api/v1/jobs/1/datasets/clientes").status_code == 401
