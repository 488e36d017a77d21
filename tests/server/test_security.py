"""The server against a hostile client, on real servers: bad tokens spend a failure budget per client address (429
with Retry-After), the dashboard's cookie holds a session id (not the API token) that dies at logout, at its
expiry and with its token, every answer carries the security headers, and a job's logs are its owner's, admins'
and DPOs' by default (--logs-visible-to).

Client addresses on one machine: the server listens on 127.0.0.1, and a client connects from 127.0.0.2 or
127.0.0.3 (the whole 127.0.0.0/8 is loopback on Linux) by binding its socket there (httpx's local_address).
"""

from __future__ import annotations

import re
import time
from typing import Any

import httpx
import pytest

from tests.server.conftest import ServerProcess, StartServer
from tests.server.people import DATA, call, people_and_clientes

WINDOW_S = 4.0  # --auth-failure-window-s: long enough for 11 requests on a loaded machine, short for the test
BUDGET = 10  # settings.AUTH_FAILURES_MAX
SESSION_S = 3.0  # --session-max-age-s of the session test's server
JOB_WAIT_S = 60.0
PEOPLE = ["--site", "eveo-sp1", "--import-root", str(DATA)]  # what people_and_clientes' dataset needs


def client_from(address: str, server: ServerProcess, token: str | None = None) -> httpx.Client:
    """A client whose connections come from `address` (a loopback address other than 127.0.0.1)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx.HTTPTransport(local_address=address)
    return httpx.Client(base_url=server.url, headers=headers, transport=transport, timeout=10)


def problem_429(r: httpx.Response) -> int:
    """The Retry-After of a 429 with treino's body, checked."""
    assert r.status_code == 429, (r.status_code, r.text)
    assert "To fix:" in r.json()["detail"] and "bad tokens" in r.json()["detail"]
    retry_after = int(r.headers["Retry-After"])
    assert 1 <= retry_after <= WINDOW_S
    return retry_after


def test_bad_tokens_spend_the_budget_of_their_address_then_429_until_the_window_passes(
    start_server: StartServer,
) -> None:
    server = start_server(extra_args=["--auth-failure-window-s", str(WINDOW_S)])
    with (
        client_from("127.0.0.1", server) as here,
        client_from("127.0.0.2", server, server.token) as elsewhere,
        client_from("127.0.0.3", server) as browser,
    ):
        # The same stale token over and over is no guess: it never spends more than one failure.
        for _ in range(3 * BUDGET):
            assert here.get("/api/v1/jobs", headers={"Authorization": "Bearer trn_stale"}).status_code == 401
        # No token at all is no guess either, nor a job token (trj_...: a finished attempt's retried, or a guess).
        assert here.get("/api/v1/jobs").status_code == 401
        for i in range(2 * BUDGET):
            assert here.get("/api/v1/jobs", headers={"Authorization": f"Bearer trj_dead-{i}"}).status_code == 401
        for i in range(BUDGET - 2):  # naming another address in X-Forwarded-For changes nothing (no trusted proxy)
            spoof = {"X-Forwarded-For": f"10.0.0.{i}"}
            r = here.get("/api/v1/jobs", headers={"Authorization": f"Bearer trn_guess-{i}", **spoof})
            assert r.status_code == 401, r.text
        assert here.get("/api/v1/jobs", headers={"Authorization": "Bearer trn_guess-last"}).status_code == 401
        # The 11th bad token: 429, and now a good token from that address too (a valid guess must not tell).
        problem_429(here.get("/api/v1/jobs", headers={"Authorization": "Bearer trn_guess-11"}))
        problem_429(here.post("/api/v1/jobs", headers={"Authorization": f"Bearer {server.token}"}, json={}))
        problem_429(here.get("/metrics", headers={"Authorization": f"Bearer {server.token}"}))
        # Nor is a list page just cached (asked from another address) a way round the budget.
        assert elsewhere.get("/api/v1/jobs").status_code == 200
        problem_429(here.get("/api/v1/jobs", headers={"Authorization": f"Bearer {server.token}"}))
        assert here.get("/healthz").status_code == 200  # no token, no budget
        assert here.get("/api/v1/jobs", headers={"Authorization": "Bearer trj_x"}).status_code == 401  # a job's
        # Another address is not affected.
        assert elsewhere.get("/api/v1/jobs").status_code == 200
        # The dashboard's login spends the same budget, per address, and answers with its page.
        for i in range(BUDGET):
            r = browser.post("/login", data={"token": f"trn_typed-{i}", "next": "/"})
            assert r.status_code == 401 and 'id="login-error"' in r.text
        r = browser.post("/login", data={"token": server.token, "next": "/"})
        assert r.status_code == 429 and 'id="login-wait"' in r.text and 'name="token"' in r.text
        assert 1 <= int(r.headers["Retry-After"]) <= WINDOW_S
        assert elsewhere.post("/login", data={"token": server.token, "next": "/"}).status_code == 303
        # After the window, the address may try again, and a good token just works.
        wait_api_s = problem_429(here.get("/api/v1/jobs", headers={"Authorization": "Bearer trn_x"}))
        wait_login_s = int(browser.post("/login", data={"token": server.token}).headers["Retry-After"])
        time.sleep(max(wait_api_s, wait_login_s) + 0.5)
        assert here.get("/api/v1/jobs", headers={"Authorization": f"Bearer {server.token}"}).status_code == 200
        assert browser.post("/login", data={"token": server.token, "next": "/"}).status_code == 303
    spec = httpx.get(f"{server.url}/openapi.json").json()
    jobs = spec["paths"]["/api/v1/jobs"]["get"]["responses"]
    assert "Retry-After" in jobs["429"]["headers"]  # documented where it can happen, and only there
    assert "429" not in spec["paths"]["/healthz"]["get"]["responses"]


def login(server: ServerProcess, token: str) -> tuple[httpx.Client, str]:
    """A client logged in through POST /login, and its session cookie's value."""
    client = httpx.Client(base_url=server.url, timeout=10)
    r = client.post("/login", data={"token": token, "next": "/"})
    assert r.status_code == 303 and r.headers["location"] == "/", r.text
    cookie = client.cookies["treino_session"]
    return client, cookie


def page_status(server: ServerProcess, cookie: str, path: str = "/") -> tuple[int, str]:
    """A page asked with `cookie` set by hand (not by a cookie jar that may have dropped it): status and Location."""
    r = httpx.get(server.url + path, cookies={"treino_session": cookie}, timeout=10)
    return r.status_code, r.headers.get("location", "")


def test_the_cookie_holds_a_session_that_is_no_token_and_dies_at_logout_expiry_and_revocation(
    start_server: StartServer,
) -> None:
    server = start_server(extra_args=[*PEOPLE, "--session-max-age-s", str(SESSION_S)])
    tokens = people_and_clientes(server.url, server.token)
    client, cookie = login(server, tokens["eng1"])
    assert cookie != tokens["eng1"] and tokens["eng1"] not in cookie
    assert page_status(server, cookie) == (200, "")
    # The session id is no API token, whatever way it is sent.
    for bearer in (cookie, "session:" + cookie):
        assert call(server.url, bearer, "GET", "/api/v1/jobs").status_code == 401
    # Nor is the API token a session.
    assert page_status(server, tokens["eng1"]) == (303, "/login?next=/")
    # The CSRF token follows the session: another login, another token.
    csrf = re.findall(r'name="csrf" value="([0-9a-f]{64})"', client.get("/").text)
    other, other_cookie = login(server, tokens["eng1"])
    assert other_cookie != cookie
    assert csrf and csrf[0] not in other.get("/").text
    # The sessions are listed as tokens named after their API token, with the session's expiry.
    listed = call(server.url, server.token, "GET", "/api/v1/tokens").json()["tokens"]
    eng1_token = next(t["id"] for t in listed if t["user"] == "eng1" and not t["name"].startswith("session:"))
    sessions = [t for t in listed if t["name"] == f"session:{eng1_token}"]
    assert len(sessions) == 2 and all(t["expires_at"] - t["created_at"] == pytest.approx(SESSION_S) for t in sessions)
    refused = call(server.url, server.token, "POST", "/api/v1/tokens", json={"user": "eng1", "name": "session:1"})
    assert refused.status_code == 422

    # Logout ends the session on the server: the old cookie, sent again, is useless.
    assert client.post("/logout", data={"csrf": csrf[0]}).status_code == 303
    assert page_status(server, cookie) == (303, "/login?next=/")
    assert page_status(server, other_cookie)[0] == 200  # the other session lives on
    listed = call(server.url, server.token, "GET", "/api/v1/tokens").json()["tokens"]
    assert len([t for t in listed if t["name"] == f"session:{eng1_token}"]) == 1

    # An expired session redirects to /login, even if the browser still sends it.
    time.sleep(SESSION_S + 0.5)
    assert page_status(server, other_cookie) == (303, "/login?next=/")
    assert httpx.get(server.url + "/overview.json", cookies={"treino_session": other_cookie}).status_code == 401

    # Revoking the API token ends its sessions at once.
    _, cookie = login(server, tokens["dpo1"])
    assert page_status(server, cookie)[0] == 200
    dpo_token = next(t["id"] for t in listed if t["user"] == "dpo1" and not t["name"].startswith("session:"))
    assert call(server.url, server.token, "POST", f"/api/v1/tokens/{dpo_token}/revoke").status_code == 200
    assert page_status(server, cookie) == (303, "/login?next=/")


def test_every_answer_carries_the_security_headers(server: ServerProcess) -> None:
    expected = {
        "x-frame-options": "DENY",
        "x-content-type-options": "nosniff",
        "referrer-policy": "same-origin",
    }
    answers = [
        httpx.get(server.url + "/login"),
        httpx.get(server.url + "/"),  # the redirect to /login
        httpx.get(server.url + "/static/app.js"),
        httpx.get(server.url + "/api/v1/jobs", headers={"Authorization": f"Bearer {server.token}"}),
        httpx.get(server.url + "/api/v1/jobs"),  # 401
    ]
    for r in answers:
        assert {k: r.headers.get(k) for k in expected} == expected, (r.request.url, r.headers)
        csp = r.headers["content-security-policy"]
        assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp and "default-src 'none'" in csp
        assert "'unsafe-inline'" not in csp.split("script-src")[1].split(";")[0]


def wait_final(server: ServerProcess, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_WAIT_S
    while time.monotonic() < deadline:
        job = call(server.url, server.token, "GET", f"/api/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return dict(job)
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} did not finish in {JOB_WAIT_S} s")


def test_a_jobs_logs_are_its_owners_admins_and_dpos_not_a_viewers_or_another_engineers(
    start_server: StartServer,
) -> None:
    server = start_server(extra_args=PEOPLE)
    tokens = people_and_clientes(server.url, server.token)
    assert call(server.url, server.token, "POST", "/api/v1/users", json={"name": "eng2", "role": "engineer"}).is_success
    tokens["eng2"] = call(server.url, server.token, "POST", "/api/v1/tokens", json={"user": "eng2"}).json()["token"]
    # not in the spec; failing, so that its last line is also the failure's detail
    body = {"name": "talker", "command": ["sh", "-c", "echo line-$((40 + 2))-for-its-readers; exit 3"]}
    r = call(server.url, tokens["eng1"], "POST", "/api/v1/jobs", json={**body, "max_restarts": 0})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    assert wait_final(server, job_id)["state"] == "failed"
    for who in ("eng1", "admin", "dpo1"):
        r = call(server.url, tokens[who], "GET", f"/api/v1/jobs/{job_id}/logs")
        assert r.status_code == 200 and "line-42-for-its-readers" in r.json()["text"], (who, r.text)
    for who, role in (("view1", "viewer"), ("eng2", "engineer")):
        r = call(server.url, tokens[who], "GET", f"/api/v1/jobs/{job_id}/logs")
        assert r.status_code == 403, (who, r.text)
        detail = r.json()["detail"]
        assert {k: detail[k] for k in ("rule", "message")} == {
            "rule": "role",
            "message": f"The logs of job {job_id} are visible to its owner (eng1) and roles admin, dpo, not to "
            f"{who} ({role}). To fix: ask eng1 or an admin for them, or have the server started with "
            "--logs-visible-to all.",
        }
        assert detail["message_msg"]["template"].startswith("The logs of job {job_id} are visible to {whom}")
        r = call(server.url, tokens[who], "GET", f"/api/v1/jobs/{job_id}")  # the job itself, not its output
        assert r.status_code == 200 and "line-42" not in r.text and r.json()["failure_reason"] == "user_error"
    r = call(server.url, tokens["dpo1"], "GET", f"/api/v1/jobs/{job_id}")
    assert r.json()["failure_detail"] == "line-42-for-its-readers"
    # The dashboard's job page: the log for its readers, a note instead for the others, and none in the live poll.
    for who, may in (("eng1", True), ("dpo1", True), ("view1", False), ("eng2", False)):
        client, _ = login(server, tokens[who])
        page = client.get(f"/jobs/{job_id}").text
        live = client.get(f"/jobs/{job_id}/live.json").json()
        if may:
            assert 'id="log"' in page and "line-42-for-its-readers" in page and "line-42" in live["log"], who
        else:
            assert 'id="log-hidden"' in page and "line-42-for-its-readers" not in page, who
            assert live["log"] is None
        client.close()


def test_logs_visible_to_all_and_a_wrong_value_refused_at_start(start_server: StartServer) -> None:
    server = start_server(extra_args=[*PEOPLE, "--logs-visible-to", "all"])
    tokens = people_and_clientes(server.url, server.token)
    r = call(server.url, tokens["eng1"], "POST", "/api/v1/jobs", json={"name": "t", "command": ["echo", "hi"]})
    job_id = r.json()["id"]
    assert wait_final(server, job_id)["state"] == "succeeded"
    assert "hi" in call(server.url, tokens["view1"], "GET", f"/api/v1/jobs/{job_id}/logs").json()["text"]
    with pytest.raises(RuntimeError, match=r"ownr is not 'owner', 'all' or a role"):
        start_server(extra_args=["--logs-visible-to", "ownr,admin"])
