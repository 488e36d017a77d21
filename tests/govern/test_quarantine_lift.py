"""On a real server: a DPO lifts a model's quarantine with a reason, only once the erasure that marked it has been
carried through to it (its job retrained, the retraining succeeded) or on a named legal basis (LGPD Art. 16);
engineers, unknown models and missing reasons are refused; each lift is in the audit chain, which still verifies,
and in the model's lineage, the CLI and the subject report."""

from __future__ import annotations

import csv
import json
import time
from pathlib import Path
from typing import Any

import httpx

from tests.govern.test_cli_govern import EXAMPLES as DATA
from tests.govern.test_cli_govern import ok, one_line, treino
from tests.server.conftest import StartServer
from tests.server.people import call, people_and_clientes

JOB_WAIT_S = 60.0
REASON_1 = "The credit committee must re-run the decisions it took in November (BCB audit)."
BASIS_1 = "Art. 16 I: obrigação regulatória (auditoria do BCB)"
REASON_2 = "Retrained without the subject; kept in use to compare with its successor."


def test_lift_only_once_the_erasure_is_carried_through_or_on_a_legal_basis(
    start_server: StartServer, tmp_path: Path
) -> None:
    server = start_server(extra_args=["--site", "eveo-sp1", "--import-root", str(DATA)])
    tokens = people_and_clientes(server.url, server.token)

    def as_(user: str, method: str, path: str, **kw: Any) -> httpx.Response:
        return call(server.url, tokens[user], method, path, **kw)

    def lift(user: str, model: int, **body: str) -> httpx.Response:
        return as_(user, "POST", f"/api/v1/models/{model}/lift", json=body)

    def finished(job: int) -> str:
        deadline = time.monotonic() + JOB_WAIT_S
        while (state := as_("eng1", "GET", f"/api/v1/jobs/{job}").json()["state"]) not in ("succeeded", "failed"):
            assert time.monotonic() < deadline, f"job {job} is still {state}"
            time.sleep(0.2)
        return str(state)

    def final_model(job: int) -> int:
        models = as_("dpo1", "GET", "/api/v1/models").json()["models"]
        (model,) = [m["id"] for m in models if m["job"] == job and m["kind"] == "final"]
        return int(model)

    # A job that saves one checkpoint and ends once `gate` exists (so its retraining can be held running).
    gate = tmp_path / "go"
    gate.touch()
    script = f'echo w > "$TREINO_CHECKPOINT_DIR/step-000000010.pt"; while [ ! -e {gate} ]; do sleep 0.1; done'
    spec = {"name": "m", "command": ["sh", "-c", script], "datasets": ["clientes"], "purpose": "churn-model"}
    with (DATA / "clientes.csv").open() as f:
        rows = csv.DictReader(f)
        first, second = next(rows)["cpf"], next(rows)["cpf"]

    # 1. Erased without retraining: not carried through; lifted only on a legal basis.
    job1 = as_("eng1", "POST", "/api/v1/jobs", json=spec).json()["id"]
    assert finished(job1) == "succeeded"
    model1 = final_model(job1)
    erasure1 = as_("dpo1", "POST", "/api/v1/erasures", json={"subject": first}).json()
    assert model1 in erasure1["models"]
    not_yet = lift("dpo1", model1, reason=REASON_1)
    assert not_yet.status_code == 409 and "is not quarantined" in not_yet.text
    assert as_("dpo1", "POST", f"/api/v1/models/{model1}/quarantine").status_code == 200

    engineer = lift("eng1", model1, reason=REASON_1)
    assert engineer.status_code == 403 and "erasure.run" in engineer.text
    assert lift("dpo1", 999_999, reason=REASON_1).status_code == 404
    assert as_("dpo1", "POST", f"/api/v1/models/{model1}/lift", json={}).status_code == 422
    assert lift("dpo1", model1, reason="   ").status_code == 422
    refused = lift("dpo1", model1, reason=REASON_1)
    assert refused.status_code == 409
    message = refused.json()["detail"]
    assert message == (
        f"Model {model1} still holds data of erasure #{erasure1['erasure']}, which has not been carried through to "
        f"it: its job {job1} was not retrained by that erasure. Lifting its quarantine would put the erased "
        f"subject's data back in use (LGPD Art. 18 VI). To fix: retrain it (treino resubmit {job1} --from-scratch) "
        f"and use the new model, or delete this one (treino lineage delete {model1}); or, where the law requires "
        "keeping this model in use despite the erasure (LGPD Art. 16), name that basis with --legal-basis."
    )
    file = f"/api/v1/models/{model1}/file"
    assert as_("eng1", "GET", file).status_code == 403  # still quarantined after the refusals

    def dpo(*args: str) -> str:
        return ok(treino(*args, cwd=tmp_path, url=server.url, token=tokens["dpo1"]))

    lifted = dpo("lineage", "lift", str(model1), "--reason", REASON_1, "--legal-basis", BASIS_1)
    assert lifted == f"Model {model1}'s quarantine lifted by dpo1: its file is served again.\n"
    assert as_("eng1", "GET", file).content == b"w\n"  # served again
    shown = one_line(dpo("lineage", "model", str(model1)))
    assert f"by dpo1 (legal basis: {BASIS_1}): {REASON_1}" in shown and "quarantined" not in shown

    # 2. Erased with retraining: refused while the retraining runs, lifted with a reason once it has succeeded.
    job2 = as_("eng1", "POST", "/api/v1/jobs", json={**spec, "name": "m2"}).json()["id"]
    assert finished(job2) == "succeeded"
    model2 = final_model(job2)
    gate.unlink()  # the retraining will wait
    erasure2 = as_("dpo1", "POST", "/api/v1/erasures", json={"subject": second, "retrain": True}).json()
    (retraining,) = erasure2["retrain_jobs"]
    assert as_("dpo1", "POST", f"/api/v1/models/{model2}/quarantine").status_code == 200
    running = lift("dpo1", model2, reason=REASON_2)
    assert running.status_code == 409, running.text
    assert f"its retraining, job {retraining}, is " in running.text
    assert f"To fix: wait for job {retraining} to succeed, then lift it" in running.text
    gate.touch()
    assert finished(retraining) == "succeeded"
    done = lift("dpo1", model2, reason=REASON_2)
    assert done.status_code == 200, done.text
    out = done.json()
    assert out["quarantined_at"] is None and out["affected_by_erasure"] == erasure2["erasure"]  # still marked
    assert {k: out["quarantine_lifted"][k] for k in ("by", "reason", "legal_basis", "erasure", "retraining")} == {
        "by": "dpo1",
        "reason": REASON_2,
        "legal_basis": "",
        "erasure": erasure2["erasure"],
        "retraining": retraining,
    }
    again = lift("dpo1", model2, reason=REASON_2)
    assert again.status_code == 409 and "is not quarantined" in again.text

    # The chain: one model.lift per lift, by whom, why, under the erasure's subject; and it still verifies.
    exported = [json.loads(line) for line in as_("dpo1", "GET", "/api/v1/audit/export").text.splitlines()]
    lifts = [(r["actor"], r["subject"], r["detail"]) for r in exported if r["action"] == "model.lift"]
    assert [(actor, subject) for actor, subject, _ in lifts] == [
        ("dpo1", erasure1["subject_pseudonym"]),
        ("dpo1", erasure2["subject_pseudonym"]),
    ]
    assert [(d["model"], d["reason"], d["legal_basis"], d["retraining"]) for _, _, d in lifts] == [
        (model1, REASON_1, BASIS_1, None),
        (model2, REASON_2, "", retraining),
    ]
    assert as_("dpo1", "GET", "/api/v1/audit/verify").json()["ok"] is True

    # The subject report tells what became of the models each erasure marked.
    report = as_("dpo1", "POST", "/api/v1/subjects/report", json={"subject": second}).json()
    (story,) = report["erasures"]
    marked = {m["id"]: m for m in story["models"]}
    assert marked[model2]["state"] == "lifted" and marked[model2]["lift"]["reason"] == REASON_2
    assert {m["state"] for i, m in marked.items() if i != model2} == {"marked"}  # job2's checkpoint, never quarantined
    told = one_line(dpo("subject", "report", "--subject", second))
    assert f"model #{model2} (final) of job #{job2}: quarantine lifted" in told and REASON_2 in told
    listing = {line.split("│")[1].strip(): line for line in dpo("lineage", "models").splitlines() if "│" in line}
    assert "lifted" in listing[str(model1)] and "by dpo1" in listing[str(model1)]
    assert "lifted" not in listing[str(model1 - 1)]  # job1's checkpoint: marked, never quarantined

    # The dashboard: the job's page shows the lift, and the data page's lineage tags it.
    with httpx.Client(base_url=server.url, timeout=10) as browser:
        assert browser.post("/login", data={"token": tokens["dpo1"], "next": "/"}).status_code == 303
        page = browser.get(f"/jobs/{job2}").text
        assert "quarantine lifted" in page and REASON_2 in page
        assert f"carried through by retraining job {retraining}" in page
        assert "quarantine lifted" in browser.get("/data").text
