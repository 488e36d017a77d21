"""Usage and quotas on a real server (2 CPU slots as GPUs, priced at --gpu-hour-brl 12.50): GPU-hours per user,
purpose and job from the attempts' times, in BRL; an engineer sees only their own; `treino usage --csv`; a monthly
quota refuses a submit (403, rule quota) and a concurrent one keeps a job queued while another of its owner's runs.

The attempts' start and end times are set in the database after the jobs ran (a few seconds each), so the figures
are hand-computed: hours x GPUs x R$ 12,50."""

from __future__ import annotations

import csv
import io
import math
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from sqlalchemy import create_engine, text

from tests.conftest import Database
from tests.server.conftest import ServerProcess, Servers, clean_env
from tests.server.people import call

PRICE_BRL = 12.50
HOUR_S = 3600.0


@pytest.fixture(scope="module")
def priced(tmp_path_factory: pytest.TempPathFactory, database: Database) -> Iterator[ServerProcess]:
    servers = Servers(tmp_path_factory, database)
    try:
        yield servers.start(extra_args=["--gpu-hour-brl", str(PRICE_BRL)])
    finally:
        servers.close()


def ok(r: Any, status: int = 200) -> Any:
    assert r.status_code == status, r.text
    return r.json()


def user(server: ServerProcess, name: str) -> str:
    ok(call(server.url, server.token, "POST", "/api/v1/users", json={"name": name, "role": "engineer"}), 201)
    return str(ok(call(server.url, server.token, "POST", "/api/v1/tokens", json={"user": name}), 201)["token"])


def submit(server: ServerProcess, token: str, name: str, gpus: int, purpose: str, argv: list[str], **more: Any) -> int:
    spec = {"name": name, "command": argv, "gpus": gpus, "purpose": purpose, **more}
    return int(ok(call(server.url, token, "POST", "/api/v1/jobs", json=spec), 201)["id"])


def state_of(server: ServerProcess, job_id: int, want: set[str], timeout_s: float = 20) -> str:
    deadline = time.monotonic() + timeout_s
    while True:
        state = str(ok(call(server.url, server.token, "GET", f"/api/v1/jobs/{job_id}"))["state"])
        if state in want or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def set_times(server: ServerProcess, job_id: int, started_at: float, ended_at: float | None) -> None:
    """The job's one attempt ran from `started_at` to `ended_at` (None: it still runs). A running attempt is first
    seen placed by the engine (which sets its start then: treino.server.service.Service._place)."""
    engine = create_engine(server.database_url)
    deadline = time.monotonic() + 10
    while ended_at is None and time.monotonic() < deadline:
        with engine.connect() as c:
            handle = c.execute(text("SELECT handle FROM attempts WHERE job_id = :j"), {"j": job_id}).scalar_one()
        if "placement" in str(handle):
            break
        time.sleep(0.1)
    with engine.begin() as c:
        done = c.execute(
            text("UPDATE attempts SET started_at = :s, ended_at = COALESCE(:e, ended_at) WHERE job_id = :j"),
            {"s": started_at, "e": ended_at, "j": job_id},
        )
        assert done.rowcount == 1
    engine.dispose()


def usage(server: ServerProcess, token: str, **params: str) -> Any:
    return ok(call(server.url, token, "GET", "/api/v1/usage", params=params))


def test_usage_in_gpu_hours_and_brl_and_quotas(priced: ServerProcess) -> None:
    server = priced
    ana, bia = user(server, "ana"), user(server, "bia")
    a1 = submit(server, ana, "a1", 2, "churn-model", ["true"])
    a2 = submit(server, ana, "a2", 1, "forecast", ["true"])
    b1 = submit(server, bia, "b1", 1, "forecast", ["true"])
    for job in (a1, a2, b1):
        assert state_of(server, job, {"succeeded", "failed"}) == "succeeded"
    b2 = submit(server, bia, "b2", 1, "forecast", ["sleep", "60"])  # still running: counts up to now
    assert state_of(server, b2, {"running"}) == "running"
    now = time.time()
    set_times(server, a1, now - 3 * HOUR_S, now - 1 * HOUR_S)  # 2 h x 2 GPUs = 4 GPU-h
    set_times(server, a2, now - 2 * HOUR_S, now - 1.5 * HOUR_S)  # 0.5 h x 1 GPU = 0.5 GPU-h
    set_times(server, b1, now - 26 * HOUR_S, now - 22 * HOUR_S)  # 4 h, of which 2 h inside the last 24 h
    set_times(server, b2, now - 1 * HOUR_S, None)  # running for 1 h (and the seconds this test takes)

    # An admin sees everyone, by user: hand-computed hours x GPUs, and BRL at R$ 12,50 per GPU-hour.
    by_user = usage(server, server.token, since="1d")
    assert by_user["scope"] == "everyone" and by_user["source"] == "treino"
    assert by_user["brl_per_gpu_hour"] == PRICE_BRL and "R$ 12,50" in by_user["price_basis"]
    rows = {r["key"]: r for r in by_user["rows"]}
    assert set(rows) == {"ana", "bia"}
    assert rows["ana"]["jobs"] == 2 and math.isclose(rows["ana"]["gpu_hours"], 4.5, abs_tol=1e-6)
    assert math.isclose(rows["ana"]["cost_brl"], 56.25, abs_tol=1e-6)
    assert rows["bia"]["jobs"] == 2 and 3.0 <= rows["bia"]["gpu_hours"] < 3.0 + 120 / HOUR_S
    assert math.isclose(by_user["cost_brl"], (rows["ana"]["gpu_hours"] + rows["bia"]["gpu_hours"]) * PRICE_BRL)
    by_purpose = {r["key"]: r["gpu_hours"] for r in usage(server, server.token, since="1d", by="purpose")["rows"]}
    assert math.isclose(by_purpose["churn-model"], 4.0, abs_tol=1e-6) and set(by_purpose) == {"churn-model", "forecast"}
    # Over the last 2 days, bia's first job counts whole (4 h).
    by_job = {r["job_id"]: r for r in usage(server, server.token, since="2d", by="job")["rows"]}
    assert math.isclose(by_job[b1]["gpu_hours"], 4.0, abs_tol=1e-6) and by_job[b1]["user"] == "bia"

    # An engineer sees their own usage only; asking for another's is refused.
    mine = usage(server, ana, since="1d")
    assert mine["scope"] == "ana" and [r["key"] for r in mine["rows"]] == ["ana"]
    refused = call(server.url, ana, "GET", "/api/v1/usage", params={"user": "bia"})
    assert refused.status_code == 403 and "Only admins" in refused.text

    # treino usage --csv parses, one row per user, with the figures above.
    cli = [sys.executable, "-m", "treino", "usage", "--since", "1d", "--url", server.url]
    out = subprocess.run(
        [*cli, "--csv", "--token", server.token],
        capture_output=True,
        text=True,
        env=clean_env(),
        timeout=60,
        check=True,
    ).stdout
    parsed = {r["key"]: r for r in csv.DictReader(io.StringIO(out))}
    assert float(parsed["ana"]["gpu_hours"]) == 4.5 and parsed["ana"]["cost_brl"] == "56.25"
    table = subprocess.run(
        [*cli, "--token", ana],
        capture_output=True,
        text=True,
        env=clean_env(COLUMNS="120"),
        timeout=60,
        check=True,
    ).stdout
    assert "R$ 56,25" in table and "bia" not in table

    # The dashboard's page, in pt-BR: the engineer's own usage in reais.
    with httpx.Client(base_url=server.url, headers={"Accept-Language": "pt-BR"}, timeout=30) as browser:
        assert browser.post("/login", data={"token": ana, "next": "/"}).status_code == 303
        page = browser.get("/usage", params={"since": "1d"}).text
    assert "Uso de GPUs" in page and 'id="nav-usage"' in page
    assert '<td class="num" id="usage-total"><b>R$ 56,25</b></td>' in page and "bia" not in page

    # A monthly quota: spent, a submit is refused with what was used, the limit, the reset and the fix.
    month = usage(server, server.token)["rows"]  # the default window: this calendar month
    used = next((r["gpu_hours"] for r in month if r["key"] == "ana"), 0.0)
    quota = {"user": "ana", "gpu_hours_month": math.floor(used * 100) / 100}
    ok(call(server.url, server.token, "PUT", "/api/v1/quotas", json=quota))
    refusal = call(server.url, ana, "POST", "/api/v1/jobs", json={"name": "a3", "command": ["true"]})
    assert refusal.status_code == 403, refusal.text
    detail = refusal.json()["detail"]
    assert detail["rule"] == "quota"
    said = f"ana has used {used:.2f} of {quota['gpu_hours_month']:g} GPU-hours this month (user ana)"
    assert said in detail["message"]
    assert "resets on" in detail["message"] and "To fix:" in detail["message"]
    # One GPU-hour left: a job that may run 2 h on 1 GPU is refused, one of 30 minutes admitted.
    ok(call(server.url, server.token, "PUT", "/api/v1/quotas", json={"user": "ana", "gpu_hours_month": used + 1}))
    long = {"name": "a4", "command": ["true"], "timeout_minutes": 120}
    refusal = call(server.url, ana, "POST", "/api/v1/jobs", json=long)
    assert refusal.status_code == 403 and "may use up to 2.00 more" in refusal.json()["detail"]["message"]
    submit(server, ana, "a5", 1, "forecast", ["true"], timeout_minutes=30)

    # A concurrent quota of 1 GPU for engineers: bia's second job waits (reason quota) while b2 runs, and does not
    # keep ana's later job (her own quota has no concurrent limit) from the free slot; it starts once b2 ends.
    ok(call(server.url, server.token, "PUT", "/api/v1/quotas", json={"role": "engineer", "concurrent_gpus": 1}))
    too_big = call(server.url, bia, "POST", "/api/v1/jobs", json={"name": "b4", "command": ["true"], "gpus": 2})
    assert too_big.status_code == 403 and "could never start" in too_big.json()["detail"]["message"]
    b3 = submit(server, bia, "b3", 1, "forecast", ["sleep", "60"])
    a6 = submit(server, ana, "a6", 1, "forecast", ["sleep", "60"])
    assert state_of(server, a6, {"running"}) == "running"
    assert state_of(server, b3, {"running"}, timeout_s=1) == "queued"
    held = usage(server, bia)["held"]
    assert [h["job_id"] for h in held] == [b3]
    reason = held[0]["reason"]
    assert reason.startswith("quota: bia's jobs hold 1 of the 1 GPU(s)") and "(role engineer)" in reason
    assert usage(server, ana)["held"] == []  # not another user's
    with httpx.Client(base_url=server.url, headers={"Accept-Language": "pt-BR"}, timeout=30) as browser:
        assert browser.post("/login", data={"token": server.token, "next": "/"}).status_code == 303
        page = browser.get("/").text  # the queue's wait, the quota's sentence in the page's language
    assert "retido por uma cota: cota: os jobs de bia ocupam 1 das 1 GPU(s)" in page, page
    standing = usage(server, bia)["quota"]
    assert standing["set_for"] == "role engineer" and standing["concurrent_gpus"] == 1
    assert standing["gpus_running"] == 1 and standing["gpu_hours_month"] is None
    listed = ok(call(server.url, server.token, "GET", "/api/v1/quotas"))["quotas"]
    assert [(q["kind"], q["name"]) for q in listed] == [("role", "engineer"), ("user", "ana")]
    ok(call(server.url, server.token, "POST", f"/api/v1/jobs/{a6}/cancel"))
    ok(call(server.url, server.token, "POST", f"/api/v1/jobs/{b2}/cancel"))
    assert state_of(server, b3, {"running"}) == "running"
    ok(call(server.url, server.token, "POST", f"/api/v1/jobs/{b3}/cancel"))
