"""Limits a client meets: job lists as summaries a keyset page at a time, `treino submit` refusing hostile YAML
before building it, and submits made idempotent by an Idempotency-Key, with the real CLI retrying through a
connection that drops the server's first answer. A real server on SQLite and on PostgreSQL."""

from __future__ import annotations

import contextlib
import json
import re
import socket
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import ServerProcess
from tests.server.test_cli_client import treino, write_spec
from treino.errors import JobError
from treino.server.schemas import JobSummary
from treino.server.settings import SPEC_FILE_BYTES_MAX, SPEC_FILE_DEPTH_MAX, SPEC_FILE_NODES_MAX
from treino.server.spec import load_spec_file

BILLION_LAUGHS = """\
a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
h: &h [*g, *g, *g, *g, *g, *g, *g, *g, *g]
i: &i [*h, *h, *h, *h, *h, *h, *h, *h, *h]
name: laughs
command: *i
"""


def names(server: ServerProcess, name: str) -> list[int]:
    """The ids of the jobs called `name`, from every page of the list."""
    ids, before = [], None
    with server.client() as c:
        while True:
            page = c.get("/api/v1/jobs", params={"limit": 1000, **({"before_id": before} if before else {})}).json()
            ids += [j["id"] for j in page["jobs"] if j["name"] == name]
            if (before := page["next"]) is None:
                return ids


# --- lists ----------------------------------------------------------------------------------------------------------
def test_the_job_list_is_summaries_a_keyset_page_at_a_time(shared: ServerProcess) -> None:
    with shared.client() as c:
        big = {"name": "pages", "command": ["sleep", "60"], "gpus": 2, "env": {"BLOB": "x" * 100_000}}
        ids = [c.post("/api/v1/jobs", json=big).json()["id"] for _ in range(5)]  # one runs, four wait
        for job_id in ids[1:3]:
            assert c.post(f"/api/v1/jobs/{job_id}/cancel").json()["state"] == "cancelled"
        first = c.get("/api/v1/jobs", params={"limit": 2})
        page = first.json()
        assert [j["id"] for j in page["jobs"]] == [ids[4], ids[3]] and page["next"] == ids[3]
        assert set(page["jobs"][0]) == set(JobSummary.model_fields)  # never the spec
        assert len(first.content) < 2_000  # the 100 kB specs stayed behind
        page = c.get("/api/v1/jobs", params={"limit": 2, "before_id": page["next"]}).json()
        assert [j["id"] for j in page["jobs"]] == [ids[2], ids[1]]
        rest = c.get("/api/v1/jobs", params={"limit": 1000, "before_id": page["next"]}).json()
        assert rest["jobs"][0]["id"] == ids[0] and rest["next"] is None
        cancelled = c.get("/api/v1/jobs", params={"state": "cancelled", "limit": 1}).json()
        assert [j["id"] for j in cancelled["jobs"]] == [ids[2]] and cancelled["next"] == ids[2]
        cancelled = c.get("/api/v1/jobs", params={"state": "cancelled", "before_id": ids[2]}).json()
        assert [j["id"] for j in cancelled["jobs"]] == [ids[1]] and cancelled["next"] is None
        assert "BLOB" in c.get(f"/api/v1/jobs/{ids[0]}").json()["spec"]["env"]  # one job: its full detail
        for job_id in ids:
            c.post(f"/api/v1/jobs/{job_id}/cancel")
    out = treino("jobs", "--limit", "2", cwd=Path(shared.data_dir).parent, server=shared)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == f"Older jobs: treino jobs --before-id {ids[3]}"


def fresh_list(c: httpx.Client) -> None:
    """Empties the list's page cache: a submit (and a cancel) clears it, so the next listing is the route's read."""
    job = c.post("/api/v1/jobs", json={"name": "clears", "command": ["sleep", "60"], "gpus": 2}).json()["id"]
    assert c.post(f"/api/v1/jobs/{job}/cancel").status_code == 200


def headers(r: httpx.Response) -> list[tuple[str, str]]:
    """An answer's headers but its Date (the second may differ between two answers)."""
    return sorted((k, v) for k, v in r.headers.items() if k != "date")


def test_a_cached_list_page_is_the_routes_answer_byte_for_byte(shared: ServerProcess) -> None:
    # The second asking within JOBS_CACHE_S is answered from the cache before the routes (CachedJobList): the same
    # bytes and headers as the route's own answer, the security headers included.
    with shared.client() as c:
        for query in ("", "?state=cancelled&limit=2", "?limit=2&state=cancelled", "?limit=1000&before_id=1"):
            fresh_list(c)
            first, again = c.get("/api/v1/jobs" + query), c.get("/api/v1/jobs" + query)
            assert first.status_code == again.status_code == 200, (query, first.text)
            assert again.content == first.content, query
            assert headers(again) == headers(first), query
            assert again.headers["content-type"] == "application/json"
            assert again.headers["x-frame-options"] == "DENY"
        # Spelled otherwise, the route parses it: the same page, or the route's 422.
        c.get("/api/v1/jobs?limit=2")
        assert c.get("/api/v1/jobs?limit=02").content == c.get("/api/v1/jobs?limit=2").content
        for bad in ("limit=0", "limit=1001", "limit=-1", "state=QUEUED", "before_id=9223372036854775808", "limit=1e3"):
            assert c.get(f"/api/v1/jobs?{bad}").status_code == 422, bad


def test_a_cached_list_page_is_refused_to_a_revoked_token_and_a_wrong_scheme(shared: ServerProcess) -> None:
    with shared.client() as c:
        made = c.post("/api/v1/users", json={"name": "lister", "role": "viewer"})
        assert made.status_code == 201, made.text
        new = c.post("/api/v1/tokens", json={"user": "lister"}).json()
        viewer = {"Authorization": f"Bearer {new['token']}"}
        assert c.get("/api/v1/jobs", headers=viewer).status_code == 200
        assert c.get("/api/v1/jobs", headers=viewer).status_code == 200  # the page is cached now
        assert c.get("/api/v1/jobs", headers={"Authorization": f"Basic {new['token']}"}).status_code == 401
        assert c.get("/api/v1/jobs", headers={"Authorization": f"Bearer {new['token']}x"}).status_code == 401
        two = [("Authorization", "Bearer trn_wrong"), ("Authorization", f"Bearer {new['token']}")]
        assert httpx.get(shared.url + "/api/v1/jobs", headers=two).status_code == 401  # the first one counts
        assert c.post(f"/api/v1/tokens/{new['id']}/revoke").status_code == 200
        assert c.get("/api/v1/jobs", headers=viewer).status_code == 401  # at once, though its page is cached
        assert c.get("/api/v1/jobs").status_code == 200


def test_the_overview_reads_jobs_without_their_specs_but_with_their_steps(shared: ServerProcess) -> None:
    spec = {"name": "stepper", "script": "train.py", "args": ["--steps", "200"], "workdir": "/", "gpus": 2}
    with shared.client() as c:
        job = c.post("/api/v1/jobs", json=spec).json()["id"]
        assert c.post("/login", data={"token": shared.token}).status_code == 303  # the session cookie
        o = c.get("/overview.json").json()
        c.post(f"/api/v1/jobs/{job}/cancel")
    [row] = [r for r in o["running"] + o["queue"] + o["recent"] if r["id"] == job]
    assert row["steps"] == 200 and row["name"] == "stepper"


def test_the_model_list_is_a_keyset_page_at_a_time(shared: ServerProcess, tmp_path: Path) -> None:
    with shared.client() as c:
        job = c.post("/api/v1/jobs", json={"name": "saver", "command": ["sleep", "60"]}).json()["id"]
        folder = shared.data_dir / "jobs" / str(job) / "checkpoints"
        for step in (1, 2, 3):
            body = {"step": step, "path": str(folder / f"step-{step}.pt"), "bytes": 1}
            assert c.post(f"/api/v1/jobs/{job}/checkpoints", json=body).status_code == 201
        c.post(f"/api/v1/jobs/{job}/cancel")
        page = c.get("/api/v1/models", params={"limit": 2}).json()
        mine = [m["step"] for m in page["models"] if m["job"] == job]
        assert mine == [3, 2] and page["next"] is not None
        rest = c.get("/api/v1/models", params={"limit": 1000, "before_id": page["next"]}).json()
        assert [m["step"] for m in rest["models"] if m["job"] == job] == [1] and rest["next"] is None
        assert c.get("/api/v1/datasets", params={"limit": 1}).json() == {"datasets": [], "next": None}
    out = treino("lineage", "models", "--json", cwd=tmp_path, server=shared)  # the CLI follows `next`
    assert out.returncode == 0, out.stderr
    assert [m["step"] for m in json.loads(out.stdout) if m["job"] == job] == [3, 2, 1]


# --- `treino submit`: the spec file ---------------------------------------------------------------------------------
def test_submit_refuses_a_billion_laughs_file_at_once(shared: ServerProcess, tmp_path: Path) -> None:
    """Through the real CLI: within the subprocess's own timeout (treino() raises TimeoutExpired), never built."""
    (tmp_path / "laughs.yaml").write_text(BILLION_LAUGHS)
    out = treino("submit", "laughs.yaml", cwd=tmp_path, server=shared)
    assert (out.returncode, out.stdout) == (1, "")
    assert out.stderr.startswith("error: laughs.yaml has more than 32 YAML aliases (*name)"), out.stderr
    assert "To fix" in out.stderr
    assert names(shared, "laughs") == []


def test_spec_file_limits(tmp_path: Path) -> None:
    wide = tmp_path / "wide.yaml"  # few aliases, each of a large list: too many values once expanded
    wide.write_text(f"a: &a [{', '.join(['1'] * (SPEC_FILE_NODES_MAX // 4))}]\nname: w\nargs: [*a, *a, *a, *a, *a]\n")
    with pytest.raises(JobError, match=r"would expand to over 100,000 values .* To fix"):
        load_spec_file(wide)
    deep = tmp_path / "deep.yaml"
    deep.write_text("name: d\nargs: " + "[" * (SPEC_FILE_DEPTH_MAX + 1) + "]" * (SPEC_FILE_DEPTH_MAX + 1) + "\n")
    with pytest.raises(JobError, match=r"more than 32 deep"):
        load_spec_file(deep)
    deep_json = tmp_path / "deep.json"
    deep_json.write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(JobError, match=r"nested too deeply"):
        load_spec_file(deep_json)
    big = tmp_path / "big.yaml"
    big.write_text("name: b\nargs: [" + "x, " * (SPEC_FILE_BYTES_MAX // 3) + "]\n")
    with pytest.raises(JobError, match=r"is over 1024 KiB"):
        load_spec_file(big)
    ok = tmp_path / "ok.yaml"  # aliases a spec may use
    ok.write_text("common: &env {A: '1'}\nname: ok\ncommand: [true]\nenv: *env\n")
    assert load_spec_file(ok)["env"] == {"A": "1"}


# --- idempotent submit ----------------------------------------------------------------------------------------------
def test_the_same_idempotency_key_makes_one_job(shared: ServerProcess) -> None:
    spec = {"name": "idem", "command": ["true"]}
    with shared.client() as c:
        first = c.post("/api/v1/jobs", json=spec, headers={"Idempotency-Key": "k-1"})
        again = c.post("/api/v1/jobs", json=spec, headers={"Idempotency-Key": "k-1"})
        assert (first.status_code, again.status_code) == (201, 200)
        assert again.json()["id"] == first.json()["id"]
        other = c.post(
            "/api/v1/jobs", json={**spec, "args": []} | {"command": ["false"]}, headers={"Idempotency-Key": "k-1"}
        )
        assert other.status_code == 409
        assert other.json()["detail"].startswith(
            f"The Idempotency-Key 'k-1' was sent with another job spec (job {first.json()['id']})"
        )
        assert "To fix" in other.json()["detail"]
        r = c.post("/api/v1/jobs", json=spec, headers={"Idempotency-Key": "x" * 201})
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "idempotency-key"
        assert c.post("/api/v1/jobs", json=spec).json()["id"] != first.json()["id"]  # no key: a new job each time
        # a key is the user's own: another user's same key is another job
        c.post("/api/v1/users", json={"name": "eng", "role": "engineer"})
        eng = c.post("/api/v1/tokens", json={"user": "eng"}).json()["token"]
    theirs = httpx.post(
        f"{shared.url}/api/v1/jobs", json=spec, headers={"Authorization": f"Bearer {eng}", "Idempotency-Key": "k-1"}
    )
    assert theirs.status_code == 201 and theirs.json()["id"] != first.json()["id"]
    assert len(names(shared, "idem")) == 3


def test_concurrent_requests_with_one_key_make_one_job(shared: ServerProcess) -> None:
    spec = {"name": "racing", "command": ["true"]}

    def post(_: int) -> httpx.Response:
        with shared.client() as c:
            return c.post("/api/v1/jobs", json=spec, headers={"Idempotency-Key": "race-1"})

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(post, range(16)))
    assert sorted(r.status_code for r in answers) == [200] * 15 + [201]
    assert len({r.json()["id"] for r in answers}) == 1
    assert len(names(shared, "racing")) == 1
    assert "Traceback" not in shared.log()


class DroppingProxy:
    """A TCP relay to the server that cuts its first `drops` connections once the server has answered, before a
    byte of the answer reaches the client: the request was done, and the client cannot know."""

    def __init__(self, port: int, drops: int) -> None:
        self.target, self.drops, self.connections = port, drops, 0
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._relay, args=(client, self.connections <= self.drops), daemon=True).start()

    def _relay(self, client: socket.socket, drop: bool) -> None:
        upstream = socket.create_connection(("127.0.0.1", self.target))

        def forward() -> None:
            with contextlib.suppress(OSError):
                while data := client.recv(65536):
                    upstream.sendall(data)

        threading.Thread(target=forward, daemon=True).start()
        with contextlib.suppress(OSError):
            while data := upstream.recv(65536):
                if drop:
                    break
                client.sendall(data)
        client.close()
        upstream.close()

    def close(self) -> None:
        self.listener.close()


def test_submit_retries_a_dropped_connection_with_its_key_and_makes_one_job(
    shared: ServerProcess, tmp_path: Path
) -> None:
    proxy = DroppingProxy(shared.port, drops=1)
    try:
        write_spec(tmp_path / "dropped.yaml", name="dropped", command=["true"])
        out = treino("submit", "dropped.yaml", "--url", f"http://127.0.0.1:{proxy.port}", cwd=tmp_path, server=shared)
    finally:
        proxy.close()
    assert out.returncode == 0, out.stderr
    found = re.fullmatch(r"Submitted job (\d+) \(dropped\), \w+\.\n", out.stdout)
    assert found, out.stdout
    assert proxy.connections == 2  # the first answer was lost; the retry got the same job
    assert names(shared, "dropped") == [int(found[1])]


def test_the_list_cache_takes_only_plainly_spelled_queries() -> None:
    from treino.server.api.routes.jobs import page_key
    from treino.server.settings import INT_MAX, JOBS_PAGE_DEFAULT, JOBS_PAGE_MAX

    assert page_key(b"") == (None, JOBS_PAGE_DEFAULT, None)
    assert page_key(b"state=queued") == ("queued", JOBS_PAGE_DEFAULT, None)
    assert page_key(b"limit=7&state=running&before_id=12") == ("running", 7, 12)
    assert page_key(f"limit={JOBS_PAGE_MAX}&before_id={INT_MAX}".encode()) == (None, JOBS_PAGE_MAX, INT_MAX)
    assert page_key(b"limit=1&before_id=1") == (None, 1, 1)
    # Anything else goes to the route, which parses it its own way (or answers 422).
    for query in (
        b"limit=0", b"limit=07", f"limit={JOBS_PAGE_MAX + 1}".encode(), b"limit=-1", b"limit=+1", b"limit=1.0",
        f"before_id={INT_MAX + 1}".encode(), b"before_id=" + b"9" * 5000, b"before_id=0", b"state=QUEUED",
        b"state=", b"state", b"limit=1&limit=2", b"limit=1&", b"&limit=1", b"page=2", b"state=queued%00",
        b"limit=%31", "limit=\u0661".encode(), b"limit=1 ",
    ):  # fmt: skip
        assert page_key(query) is None, query
