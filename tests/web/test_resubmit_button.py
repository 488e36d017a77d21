"""The job page's resubmit buttons in a real browser: a cancelled job continues from its last checkpoint after the
browser's confirmation dialog (dismissed: nothing happens), a succeeded one without the question."""

from __future__ import annotations

import time
from typing import Any

from tests.web.conftest import JOB_TIMEOUT_S, Demo, ddp_job, login


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
