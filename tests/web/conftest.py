"""One real server for the dashboard tests (module scope: the jobs it runs are shared), the people of
tests/govern/test_lgpd_e2e.py, a finished DDP job, a finished churn job on the governed dataset `clientes`, and a
headless Debian chromium driven by Playwright (the browser tests skip, saying why, without either)."""

from __future__ import annotations

import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import ServerProcess, Servers
from tests.server.people import churn_job, people_and_clientes

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
CHROMIUM = "/usr/bin/chromium"
JOB_TIMEOUT_S = 180.0  # generous: a loaded machine starts jobs slowly (only a failing test waits this long)
DEMO_STEPS = 30


@dataclass
class Demo:
    server: ServerProcess
    tokens: dict[str, str]  # admin, eng1 (engineer), dpo1 (dpo), view1 (viewer)
    ddp_job: int  # finished, DEMO_STEPS loss points
    churn_job: int  # finished, read clientes v1

    def api(self, who: str, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {self.tokens[who]}"}
        return httpx.request(method, self.server.url + path, headers=headers, timeout=30, **kw)

    def submit(self, who: str, body: dict[str, Any]) -> int:
        r = self.api(who, "POST", "/api/v1/jobs", json=body)
        assert r.status_code == 201, r.text
        return int(r.json()["id"])

    def wait(self, job_id: int, states: tuple[str, ...] = ("succeeded", "failed", "cancelled")) -> dict[str, Any]:
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while time.monotonic() < deadline:
            job = self.api("admin", "GET", f"/api/v1/jobs/{job_id}").json()
            if job["state"] in states:
                return dict(job)
            time.sleep(0.2)
        raise AssertionError(f"job {job_id} not in {states} after {JOB_TIMEOUT_S} s")


def ddp_job(steps: int = DEMO_STEPS, sleep_s: float = 0.0, name: str = "ddp-example") -> dict[str, Any]:
    return {
        "name": name,
        "script": str(ROOT / "examples" / "ddp_train.py"),
        "args": ["--steps", str(steps), "--save-every", "10", "--sleep", str(sleep_s)],
        "workdir": str(ROOT / "examples"),
        "gpus": 1,
        "env": {"OMP_NUM_THREADS": "1"},
    }


def setup_demo(server: ServerProcess) -> Demo:
    demo = Demo(server, people_and_clientes(server.url, server.token), 0, 0)
    demo.ddp_job = demo.submit("admin", ddp_job())
    demo.churn_job = demo.submit("eng1", churn_job(steps=20))
    for job_id in (demo.ddp_job, demo.churn_job):
        assert demo.wait(job_id)["state"] == "succeeded", demo.api("admin", "GET", f"/api/v1/jobs/{job_id}/logs").text
    return demo


@pytest.fixture(scope="package")
def demo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Demo]:
    servers = Servers(tmp_path_factory)
    try:
        yield setup_demo(servers.start(extra_args=["--site", "eveo-sp1", "--import-root", str(DATA)]))
    finally:
        servers.close()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.skip("playwright is not installed (pip install -e '.[dev]'); the dashboard's browser tests need it")
    if not shutil.which(CHROMIUM):
        pytest.skip(f"{CHROMIUM} is missing (apt-get install chromium); the dashboard's browser tests need it")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield b
        finally:
            b.close()


def login(browser: Any, demo: Demo, who: str, lang: str = "en") -> Any:
    """A fresh browser context logged in as `who` through the login form; its page."""
    context = browser.new_context(locale=lang, extra_http_headers={"Accept-Language": lang})
    page = context.new_page()
    page.goto(demo.server.url + "/")
    assert "/login" in page.url
    page.fill("input[name=token]", demo.tokens[who])
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_url(demo.server.url + "/")
    return page
