"""The job page's resubmit buttons in a real browser: a cancelled job continues from its last checkpoint after the
browser's confirmation dialog (dismissed: nothing happens), a succeeded one without the question. And the resubmit
route keeps the server answering while its submit runs (the trackers' check is a subprocess)."""

from __future__ import annotations

import re
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx

from tests.web.conftest import JOB_TIMEOUT_S, Demo, ddp_job, login

HOLD_MAX_S = 12  # the slow Python's own bound: below the check's TRACKER_CHECK_TIMEOUT_S (20 s), which would kill it


def test_a_cancelled_job_continues_after_a_confirmation(browser: Any, demo: Demo) -> None:
    old = demo.submit("eng1", ddp_job(steps=100_000, sleep_s=0.05, name="to-continue"))
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while (demo.api("eng1", "GET", f"/api/v1/jobs/{old}").json()["checkpoint_step"] or 0) < 10:
        assert time.monotonic() < deadline, "no checkpoint"
        time.sleep(0.2)
    assert demo.api("eng1", "POST", f"/api/v1/jobs/{old}/cancel").status_code == 200
    step = demo.wait(old)["checkpoint_step"]

    page = login(browser, demo, "eng1")
    page.goto(f"{demo.server.url}/jobs/{old}")
    assert page.inner_text("#resubmit") == "Resubmit (continue)"
    assert page.inner_text("#resubmit-scratch") == "Resubmit from scratch"
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.click("#resubmit")
    assert asked == [
        f"This job was cancelled. Resubmit it as a new job that continues from its checkpoint of step {step}?"
    ]
    assert (
        page.url.split("?")[0] == f"{demo.server.url}/jobs/{old}"
    )  # no navigation (the charts keep their keys in ?key=)
    assert demo.api("eng1", "GET", "/api/v1/jobs?limit=1").json()["jobs"][0]["id"] == old  # no job was made

    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation():
        page.click("#resubmit")
    new = int(page.url.split("/jobs/")[1].split("?")[0])
    assert new > old
    assert page.inner_text("#flash") == f"resubmitted from job {old}: continues job {old} from step {step}"
    assert page.inner_text("#continues-from") == f"continues #{old} from step {step}"
    job = demo.api("eng1", "GET", f"/api/v1/jobs/{new}").json()
    assert (job["continues_from"], job["continues_from_step"]) == (old, step)
    assert demo.api("eng1", "POST", f"/api/v1/jobs/{new}/cancel").status_code == 200
    demo.wait(new)

    # A succeeded job continues without the question; a viewer gets no button at all.
    page.goto(f"{demo.server.url}/jobs/{demo.churn_job}")
    assert page.locator("form:has(#resubmit)").get_attribute("data-confirm") is None
    page.context.close()
    viewer = login(browser, demo, "view1")
    viewer.goto(f"{demo.server.url}/jobs/{old}")
    assert viewer.locator("#resubmit, #resubmit-scratch").count() == 0
    viewer.context.close()


def test_the_server_answers_while_a_resubmit_checks_the_trackers(demo: Demo) -> None:
    """A Python that answers the trackers' check only once the test says so: while the dashboard's resubmit waits on
    it, another request is answered (the route runs its submit in a worker thread, not on the event loop)."""
    folder = Path(tempfile.mkdtemp(prefix="treino-slow-python-"))  # not pytest's 0700 tmp: the job user runs it
    try:
        folder.chmod(0o755)
        python = folder / "python"  # named like a Python: the check runs it as the job's interpreter
        python.write_text(
            "#!/bin/sh\n"
            f"if [ -e {folder}/hold ]; then\n"
            f"  touch {folder}/started; end=$(( $(date +%s) + {HOLD_MAX_S} ))\n"
            f"  while [ ! -e {folder}/release ] && [ $(date +%s) -lt $end ]; do sleep 0.05; done\n"
            f"  touch {folder}/finished\n"
            "fi\n"
            "echo '[]'\n"
        )
        python.chmod(0o755)
        old = demo.submit("eng1", {"name": "slow-check", "command": [str(python)], "trackers": ["wandb"]})
        assert demo.wait(old)["state"] == "succeeded"
        (folder / "hold").touch()

        answer: dict[str, httpx.Response] = {}
        with httpx.Client(base_url=demo.server.url, timeout=JOB_TIMEOUT_S) as client:
            assert client.post("/login", data={"token": demo.tokens["eng1"], "next": "/"}).status_code == 303
            csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', client.get(f"/jobs/{old}").text)
            assert csrf is not None
            form = {"csrf": csrf.group(1), "from_scratch": "1"}
            post = threading.Thread(target=lambda: answer.update(r=client.post(f"/jobs/{old}/resubmit", data=form)))
            post.start()
            deadline = time.monotonic() + JOB_TIMEOUT_S
            while not (folder / "started").exists():
                assert time.monotonic() < deadline, "the resubmit never ran the trackers' check"
                time.sleep(0.05)
            assert demo.api("eng1", "GET", f"/api/v1/jobs/{old}").status_code == 200
            assert not (folder / "finished").exists()  # answered while the check was still waiting
            (folder / "release").touch()
            post.join(JOB_TIMEOUT_S)
        assert answer["r"].status_code == 303, answer["r"].text
        new = int(answer["r"].headers["location"].split("/")[2].split("?")[0])
        assert demo.wait(new)["state"] == "succeeded"
    finally:
        shutil.rmtree(folder, ignore_errors=True)
