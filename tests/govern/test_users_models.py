"""On a real server: disabling a user makes every token and dashboard session of theirs fail at the next request,
enabling brings the tokens back; a model an erasure marked is quarantined (no longer served) and deleted (files gone,
a tombstone left); all audited."""

from __future__ import annotations

import csv
import json
import subprocess
import time
from pathlib import Path
from typing import Any

import httpx

from tests.govern.test_cli_govern import EXAMPLES as DATA
from tests.govern.test_cli_govern import ok, one_line, treino
from tests.server.conftest import ServerProcess, StartServer
from tests.server.people import call, people_and_clientes

RUNNING_WAIT_S = 20.0


def test_disable_kills_tokens_and_sessions_at_once_and_enable_restores_them(
    server: ServerProcess, tmp_path: Path
) -> None:
    def admin(*args: str) -> str:
        return ok(treino(*args, cwd=tmp_path, url=server.url, token=server.token))

    admin("users", "add", "eng9", "--role", "engineer")
    token = admin("tokens", "create", "eng9").splitlines()[1]
    bearer = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=server.url, timeout=10) as browser:
        assert browser.post("/login", data={"token": token, "next": "/"}).status_code == 303
        assert browser.get("/", follow_redirects=False).status_code == 200
        assert httpx.get(f"{server.url}/api/v1/jobs", headers=bearer).status_code == 200  # now in the auth cache

        assert admin("users", "disable", "eng9") == "User eng9 (engineer) disabled: every token of theirs now fails.\n"
        assert httpx.get(f"{server.url}/api/v1/jobs", headers=bearer).status_code == 401  # at once: no cache
        assert browser.get("/", follow_redirects=False).status_code != 200
        listed = json.loads(admin("users", "list", "--json"))
        assert [u["disabled"] for u in listed if u["name"] == "eng9"] == [True]

        assert admin("users", "enable", "eng9") == "User eng9 (engineer) enabled: their tokens work again.\n"
        assert httpx.get(f"{server.url}/api/v1/jobs", headers=bearer).status_code == 200
        # Only an admin may; and not themselves.
        assert httpx.post(f"{server.url}/api/v1/users/admin/disable", headers=bearer).status_code == 403
        own = call(server.url, server.token, "POST", "/api/v1/users/admin/disable")
        assert own.status_code == 409 and "their own account" in own.text
    records = [json.loads(line) for line in admin("audit", "export", "--actor", "admin").splitlines()]
    changes = [(r["action"], r["detail"]) for r in records if r["action"].startswith("user.") and "eng9" in str(r)]
    assert changes[1:] == [("user.disable", {"user": "eng9", "tokens": 1}), ("user.enable", {"user": "eng9"})]


def test_quarantine_then_delete_a_model_an_erasure_marked(start_server: StartServer, tmp_path: Path) -> None:
    server = start_server(extra_args=["--site", "eveo-sp1", "--import-root", str(DATA)])
    tokens = people_and_clientes(server.url, server.token)

    def as_(user: str, method: str, path: str, **kw: Any) -> httpx.Response:
        return call(server.url, tokens[user], method, path, **kw)

    def dpo(*args: str) -> subprocess.CompletedProcess[str]:
        return treino(*args, cwd=tmp_path, url=server.url, token=tokens["dpo1"])

    spec = {"name": "m", "command": ["sleep", "60"], "datasets": ["clientes"], "purpose": "churn-model"}
    job = as_("eng1", "POST", "/api/v1/jobs", json=spec).json()["id"]
    deadline = time.monotonic() + RUNNING_WAIT_S
    while as_("eng1", "GET", f"/api/v1/jobs/{job}").json()["state"] != "running":
        assert time.monotonic() < deadline, "the job did not start"
        time.sleep(0.1)
    checkpoints = server.data_dir / "jobs" / str(job) / "checkpoints"
    weights = checkpoints / "step-000000010.pt"
    weights.write_bytes(b"weights")
    body = {"step": 10, "path": str(weights), "bytes": 7}
    assert as_("admin", "POST", f"/api/v1/jobs/{job}/checkpoints", json=body).status_code == 201
    (model,) = [m["id"] for m in as_("dpo1", "GET", "/api/v1/models").json()["models"] if m["job"] == job]
    file = f"/api/v1/models/{model}/file"
    assert as_("eng1", "GET", file).content == b"weights"  # its job's owner reads it
    assert as_("dpo1", "GET", file).status_code == 403  # nobody else but an admin
    unmarked = dpo("lineage", "quarantine", str(model))
    assert unmarked.returncode == 1 and "is not marked by an erasure" in one_line(unmarked.stderr)

    with (DATA / "clientes.csv").open() as f:
        customer = next(csv.DictReader(f))["cpf"]
    erased = as_("dpo1", "POST", "/api/v1/erasures", json={"subject": customer})
    assert model in erased.json()["models"]
    assert ok(dpo("lineage", "quarantine", str(model))) == (
        f"Model {model} quarantined by dpo1: its file is no longer served.\n"
    )
    refused = as_("eng1", "GET", file)
    assert refused.status_code == 403 and refused.json()["detail"]["rule"] == "quarantine"
    assert f"erasure #{erased.json()['erasure']}" in refused.json()["detail"]["message"]
    assert weights.exists()  # quarantined, not deleted

    running = dpo("lineage", "delete", str(model))
    assert running.returncode == 1 and f"cancel it first (treino cancel {job})" in one_line(running.stderr)
    assert as_("eng1", "POST", f"/api/v1/jobs/{job}/cancel").status_code == 200
    while as_("eng1", "GET", f"/api/v1/jobs/{job}").json()["state"] != "cancelled":
        assert time.monotonic() < deadline + RUNNING_WAIT_S, "the job did not stop"
        time.sleep(0.1)
    assert ok(dpo("lineage", "delete", str(model))) == (
        f"Model {model} deleted by dpo1: its files and job {job}'s checkpoints gone.\n"
    )
    assert not weights.exists() and not checkpoints.exists()
    assert as_("eng1", "GET", file).status_code == 410
    tombstone = as_("dpo1", "GET", f"/api/v1/lineage/models/{model}").json()
    assert tombstone["deleted_by"] == "dpo1" and tombstone["path"] == str(weights)
    exported = [json.loads(line) for line in as_("dpo1", "GET", "/api/v1/audit/export").text.splitlines()]
    done = [(r["action"], r["actor"], r["detail"]["model"]) for r in exported if r["action"] in (
        "model.quarantine", "model.delete")]  # fmt: skip
    assert done == [("model.quarantine", "dpo1", model), ("model.delete", "dpo1", model)]
