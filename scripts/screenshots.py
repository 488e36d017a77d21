"""The dashboard's screenshots in docs/screenshots/ (overview, job, plan, data-audit), from a real server with
demo data: a `treino server` on 2 CPU slots, the people and the synthetic `clientes` dataset of the LGPD demo, the
example DDP job and the churn job run to their end, an erasure request, and two jobs left running plus one queued
so the overview has something live. Debian's chromium (headless, through Playwright) takes the pictures.

    .venv/bin/python scripts/screenshots.py [--out docs/screenshots]
"""

from __future__ import annotations

import argparse
import csv
import os
import pwd
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data"
sys.path.insert(0, str(ROOT))
from tests.server.people import churn_job, people_and_clientes  # noqa: E402 (the tests' demo data, one copy)

CHROMIUM = "/usr/bin/chromium"
VIEWPORT = {"width": 1280, "height": 900}
PNG_BYTES_MAX = 300_000
JOB_TIMEOUT_S = 120.0
SERVER_START_S = 30.0


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Demo:
    def __init__(self, data_dir: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.data_dir = data_dir
        env = {k: v for k, v in os.environ.items() if not k.startswith("TREINO_")}
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "/usr/bin:/bin")])
        argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(data_dir), "--devices", "cpu:2"]
        argv += ["--port", str(self.port), "--site", "eveo-sp1", "--import-root", str(DATA)]
        argv += ["--job-user", pwd.getpwuid(os.geteuid()).pw_name]  # its jobs' files are in a 0700 temporary folder
        self.log = (data_dir.parent / "server.log").open("wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, env=env)
        deadline = time.monotonic() + SERVER_START_S
        while True:
            try:
                if httpx.get(self.url + "/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"treino server did not start; see {data_dir.parent / 'server.log'}")
            time.sleep(0.2)
        self.tokens = {"admin": (data_dir / "admin-token").read_text().strip()}

    def api(self, who: str, method: str, path: str, **kw: Any) -> Any:
        r = httpx.request(
            method, self.url + path, headers={"Authorization": f"Bearer {self.tokens[who]}"}, timeout=30, **kw
        )
        if r.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {r.status_code} {r.text}")
        return r.json() if r.content else None

    def wait(self, job_id: int, states: tuple[str, ...]) -> None:
        deadline = time.monotonic() + JOB_TIMEOUT_S
        while self.api("admin", "GET", f"/api/v1/jobs/{job_id}")["state"] not in states:
            if time.monotonic() > deadline:
                raise RuntimeError(f"job {job_id} not in {states}")
            time.sleep(0.3)

    def stop(self) -> None:
        for job in self.api("admin", "GET", "/api/v1/jobs?limit=100")["jobs"]:
            if job["state"] in ("queued", "running"):
                self.api("admin", "POST", f"/api/v1/jobs/{job['id']}/cancel")
        time.sleep(1)
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


def ddp(name: str, steps: int, sleep_s: float, gpus: int = 1) -> dict[str, Any]:
    return {
        "name": name,
        "script": str(ROOT / "examples" / "ddp_train.py"),
        "args": ["--steps", str(steps), "--save-every", "20", "--sleep", str(sleep_s)],
        "workdir": str(ROOT / "examples"),
        "gpus": gpus,
        "env": {"OMP_NUM_THREADS": "1"},
    }


def populate(demo: Demo) -> int:
    """People, the dataset and its grant, finished jobs, an erasure, live jobs; the id of the finished DDP job."""
    demo.tokens.update(people_and_clientes(demo.url, demo.tokens["admin"]))
    ddp_id = demo.api("admin", "POST", "/api/v1/jobs", json=ddp("ddp-example", 120, 0.05, gpus=2))["id"]
    demo.wait(ddp_id, ("succeeded", "failed"))
    churn = churn_job(steps=40)
    churn_id = demo.api("eng1", "POST", "/api/v1/jobs", json=churn)["id"]
    demo.wait(churn_id, ("succeeded", "failed"))
    with (DATA / "clientes.csv").open() as f:
        subject = next(csv.DictReader(f))["cpf"]
    demo.api("dpo1", "POST", "/api/v1/erasures", json={"subject": subject, "retrain": False})
    for name, steps in (("llm-sft", 20_000), ("vision-ft", 12_000)):
        job_id = demo.api("eng1", "POST", "/api/v1/jobs", json=ddp(name, steps, 0.1))["id"]
        demo.wait(job_id, ("running",))
    demo.api("eng1", "POST", "/api/v1/jobs", json=ddp("eval-sweep", 500, 0.1))
    deadline = time.monotonic() + JOB_TIMEOUT_S  # until the running jobs report steps/s: the overview's ETA
    while time.monotonic() < deadline:
        running = demo.api("admin", "GET", "/api/v1/jobs?state=running")["jobs"]
        if running and all(j["steps_per_s"] for j in running):
            break
        time.sleep(0.5)
    return int(ddp_id)


def shoot(demo: Demo, out: Path, ddp_id: int) -> list[Path]:
    from playwright.sync_api import sync_playwright

    shots = [
        ("overview.png", "admin", "/", "en"),
        ("job.png", "admin", f"/jobs/{ddp_id}", "en"),
        ("plan.png", "eng1", "/plan?model=llama-3-8b&gpu=l4&precision=bf16-true&seq_len=4096&tokens=2e9", "pt-BR"),
        ("data-audit.png", "dpo1", "/data", "en"),
    ]
    out.mkdir(parents=True, exist_ok=True)
    written = []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox", "--disable-gpu"])
        for name, who, path, lang in shots:
            context = browser.new_context(viewport=VIEWPORT, locale=lang, extra_http_headers={"Accept-Language": lang})
            page = context.new_page()
            page.goto(demo.url + "/login")
            page.fill("input[name=token]", demo.tokens[who])
            page.click("form[action='/login'] button[type=submit]")
            page.goto(demo.url + path)
            page.wait_for_load_state("networkidle")
            page.wait_for_timeout(500)
            target = out / name
            page.screenshot(path=str(target), full_page=True)
            if target.stat().st_size > PNG_BYTES_MAX:  # keep the repo light: the first screenful only
                page.screenshot(path=str(target), full_page=False)
            written.append(target)
            context.close()
        browser.close()
    return written


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "screenshots")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="treino-shots-") as tmp:
        demo = Demo(Path(tmp) / "data")
        try:
            ddp_id = populate(demo)
            for path in shoot(demo, args.out, ddp_id):
                print(f"{path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}: {path.stat().st_size:,} bytes")
        finally:
            demo.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
