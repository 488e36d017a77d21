"""The dashboard in a real browser (headless chromium) against a real server: log in, the loss curve drawn from
the job's metric points, cancel from the job page, the plan form's verdict, and the data page closed to a viewer."""

from __future__ import annotations

import re
import time
from typing import Any

from tests.web.conftest import DEMO_STEPS, Demo, ddp_job, login

GIB = 2**30


def test_login_sets_an_httponly_strict_cookie_and_a_bad_token_is_refused(browser: Any, demo: Demo) -> None:
    context = browser.new_context()
    page = context.new_page()
    page.goto(demo.server.url + "/plan")
    assert page.url.endswith("/login?next=/plan")
    page.fill("input[name=token]", "trn_not-a-token")
    page.click("form[action='/login'] button[type=submit]")
    assert "Invalid, expired or revoked token." in page.inner_text("#login-error")
    page.fill("input[name=token]", demo.tokens["view1"])
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_url(demo.server.url + "/plan")  # back where the login was asked for
    (cookie,) = context.cookies()
    assert (cookie["name"], cookie["httpOnly"], cookie["sameSite"], cookie["secure"]) == (
        "treino_session",
        True,
        "Strict",
        False,  # plain http here; https requests get Secure
    )
    assert page.evaluate("document.cookie") == ""  # scripts cannot read the token
    context.close()


def test_overview_shows_the_slots_and_the_finished_jobs(browser: Any, demo: Demo) -> None:
    page = login(browser, demo, "admin")
    assert page.locator(".card").count() == 2  # cpu:2
    assert "CPU 0 · CPU slot" in page.inner_text(".card >> nth=0")
    recent = page.inner_text("#recent")
    assert f"#{demo.ddp_job}" in recent and f"#{demo.churn_job}" in recent
    page.context.close()


def test_the_job_page_draws_the_loss_curve_from_the_metric_points(browser: Any, demo: Demo) -> None:
    page = login(browser, demo, "admin")
    page.goto(f"{demo.server.url}/jobs/{demo.ddp_job}")
    page.wait_for_selector("#loss-chart canvas")
    # uPlot drew the curve: count painted pixels on its canvas (an empty chart with axes only has far fewer)
    painted = page.evaluate(
        """() => { const c = document.querySelector('#loss-chart canvas');
                   const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
                   let n = 0; for (let i = 3; i < d.length; i += 4) if (d[i]) n++; return n; }"""
    )
    assert painted > 1500, painted
    points = demo.api("admin", "GET", f"/api/v1/jobs/{demo.ddp_job}/metrics").json()["points"]
    assert len(points) == DEMO_STEPS
    # the server-drawn fallback (what a browser without JavaScript shows) has one path command per point
    html = page.context.request.get(f"{demo.server.url}/jobs/{demo.ddp_job}").text()
    path = re.search(r'<svg class="fallback"[^>]*aria-label="loss"><path d="([^"]+)"', html)
    assert path is not None and len(re.findall(r"[ML]", path.group(1))) == DEMO_STEPS
    assert page.inner_text("#job-state") == "succeeded"
    assert page.locator("#checkpoints tbody tr").count() == 3  # --save-every 10 over 30 steps
    page.context.close()


def test_the_churn_job_page_lists_the_dataset_version_it_read(browser: Any, demo: Demo) -> None:
    page = login(browser, demo, "eng1", lang="pt-BR")
    page.goto(f"{demo.server.url}/jobs/{demo.churn_job}")
    row = page.inner_text("#datasets tbody tr")
    assert row.startswith("clientes\tv1") and "churn-model" in row and row.endswith("não")
    page.context.close()


def test_an_engineer_cancels_their_running_job_from_its_page(browser: Any, demo: Demo) -> None:
    job_id = demo.submit("eng1", ddp_job(steps=100_000, sleep_s=0.05, name="long"))
    demo.wait(job_id, ("running",))
    page = login(browser, demo, "eng1")
    page.goto(f"{demo.server.url}/jobs/{job_id}")
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.click("#cancel")  # dismissed: the job runs on
    assert asked and asked[0].startswith("Cancel this job?")
    assert demo.api("eng1", "GET", f"/api/v1/jobs/{job_id}").json()["state"] == "running"
    page.once("dialog", lambda d: d.accept())
    with page.expect_navigation():
        page.click("#cancel")
    assert page.inner_text("#flash") in ("Cancellation requested.", "Job cancelled.")
    assert demo.wait(job_id)["state"] == "cancelled"
    page.reload()
    assert page.locator("#cancel").count() == 0  # nothing left to cancel
    page.context.close()


def test_the_plan_form_gives_the_planners_verdict(browser: Any, demo: Demo) -> None:
    from treino import catalog
    from treino.plan import TrainSetup, plan_training

    page = login(browser, demo, "view1", lang="pt-BR")
    page.goto(demo.server.url + "/plan")
    page.select_option("select[name=model]", "llama-3-8b")
    page.select_option("select[name=gpu]", "l4")
    page.fill("input[name=micro_batch]", "1")
    page.fill("input[name=seq_len]", "4096")
    page.select_option("select[name=precision]", "bf16-true")
    page.click("#plan-submit")
    page.wait_for_selector("#verdict")
    expected = plan_training(
        catalog.model("llama-3-8b"), catalog.gpu("l4"), TrainSetup(micro_batch=1, seq_len=4096, precision="bf16-true")
    )
    peak = f"{expected.memory.peak_bytes / GIB:,.2f}".translate(str.maketrans(",.", ".,"))
    assert page.inner_text("#verdict") == f"NÃO CABE: precisa de {peak} GiB por GPU, a NVIDIA L4 tem 22,49 GiB."
    assert page.locator("#advice tbody tr").count() == len(expected.advice())
    assert "R$ " in page.inner_text("#cost")  # BRL as Brazilians write it
    page.wait_for_selector("#scale-chart canvas")
    page.context.close()


def test_a_viewer_has_no_data_link_and_gets_403_while_a_dpo_sees_the_chain(browser: Any, demo: Demo) -> None:
    page = login(browser, demo, "view1")
    assert page.locator("#nav-data").count() == 0
    response = page.goto(demo.server.url + "/data")
    assert response is not None and response.status == 403
    assert "may not read the audit log" in page.inner_text("#error")
    page.context.close()

    page = login(browser, demo, "dpo1")
    page.click("#nav-data")
    assert page.inner_text("#chain").startswith("Chain intact: ")
    assert "clientes" in page.inner_text("#datasets") and f"#{demo.churn_job} churn" in page.inner_text("#lineage")
    page.select_option("select[name=action]", "job.admit")
    page.click("#audit-search button")
    actions = page.locator("#audit tbody tr td:nth-child(4)").all_inner_texts()
    assert actions and set(actions) == {"job.admit"}
    page.context.close()


# Every CSP violation a page causes, as the browser reports it (an init script runs before the page's own).
OVERVIEW_REFRESH_WAIT_S = 10.0  # POLL_MS is 2 s
CSP_LISTENER = """window.__csp = [];
document.addEventListener("securitypolicyviolation",
                          (e) => window.__csp.push(e.violatedDirective + " " + e.blockedURI));"""


def test_no_page_breaks_the_content_security_policy(browser: Any, demo: Demo) -> None:
    context = browser.new_context()
    context.add_init_script(script=CSP_LISTENER)
    page = context.new_page()
    console: list[str] = []
    page.on("console", lambda m: console.append(m.text) if "Content Security Policy" in m.text else None)
    violations: list[str] = []
    page.goto(demo.server.url + "/login")
    violations += page.evaluate("window.__csp")
    page.fill("input[name=token]", demo.tokens["admin"])
    page.click("form[action='/login'] button[type=submit]")
    page.wait_for_url(demo.server.url + "/")
    page.evaluate("document.querySelector('#overview .card').stale = true")
    # app.js refreshes the overview every POLL_MS (page.wait_for_function would eval a string: the CSP forbids it)
    deadline = time.monotonic() + OVERVIEW_REFRESH_WAIT_S
    while page.evaluate("document.querySelector('#overview .card').stale === true"):
        assert time.monotonic() < deadline, "the overview was not refreshed"
        page.wait_for_timeout(100)
    violations += page.evaluate("window.__csp")
    page.goto(f"{demo.server.url}/jobs/{demo.ddp_job}")
    page.wait_for_selector("#loss-chart canvas")  # uPlot, from /static, ran and drew
    violations += page.evaluate("window.__csp")
    page.goto(demo.server.url + "/plan?model=llama-3-8b&gpu=l4&micro_batch=1&seq_len=4096")
    page.wait_for_selector("#scale-chart canvas")
    assert page.locator("i[style*='width']").count() > 0  # the memory bars: style attributes the CSP allows
    violations += page.evaluate("window.__csp")
    page.goto(demo.server.url + "/data")
    violations += page.evaluate("window.__csp")
    assert violations == [] and console == [], (violations, console)
    # and the page may not be framed by another site
    csp = page.context.request.get(demo.server.url + "/").headers["content-security-policy"]
    assert "frame-ancestors 'none'" in csp
    context.close()
