"""Disabling a user on a real server: every token and dashboard session of theirs fails at the next request, enabling
brings the tokens back, both audited."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from tests.govern.test_cli_govern import ok, treino
from tests.server.conftest import ServerProcess


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
        own = httpx.post(f"{server.url}/api/v1/users/admin/disable", headers={"Authorization": f"Bearer {server.token}"})
        assert own.status_code == 409 and "their own account" in own.text
    records = [json.loads(line) for line in admin("audit", "export", "--actor", "admin").splitlines()]
    assert [(r["action"], r["detail"]) for r in records if r["action"].startswith("user.") and r["detail"].get(
        "user") == "eng9"][1:] == [("user.disable", {"user": "eng9", "tokens": 1}), ("user.enable", {"user": "eng9"})]  # fmt: skip
