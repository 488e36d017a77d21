"""The job page's metric charts in a real browser: every key the job logged charted, keys picked, a log scale,
smoothing, another job overlaid, the selection carried by the URL, and a job the visitor cannot see refused."""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx

from tests.web.conftest import DEMO_STEPS, Demo, login
from tests.web.test_dashboard import CSP_LISTENER

# What each drawn chart is, read from its uPlot (app code keeps it on its <figure> as .uplot).
CHARTS = """() => [...document.querySelectorAll('#metric-charts figure')].map((f) => ({
  key: f.dataset.key,
  labels: f.uplot ? f.uplot.series.slice(1).map((s) => s.label) : [],
  log: f.uplot ? f.uplot.scales.y.distr === 3 : null,
  data: f.uplot ? f.uplot.data.map((a) => Array.from(a, (v) => (v === undefined ? null : v))) : [],
}))"""


def charts(page: Any) -> dict[str, dict[str, Any]]:
    return {c["key"]: c for c in page.evaluate(CHARTS)}


def query(page: Any) -> dict[str, list[str]]:
    return parse_qs(urlsplit(page.url).query, keep_blank_values=True)


def wait_drawn(page: Any, keys: list[str]) -> dict[str, dict[str, Any]]:
    """The charts, once exactly `keys` are drawn (app.js redraws after each fetch)."""
    for _ in range(100):
        drawn = charts(page)
        if sorted(drawn) == sorted(keys) and all(c["labels"] for c in drawn.values()):
            return drawn
        page.wait_for_timeout(50)
    raise AssertionError(f"charts {sorted(charts(page))}, not {keys}")


def test_pick_keys_log_scale_smoothing_and_a_second_job_overlaid(browser: Any, demo: Demo) -> None:
    ddp, churn = demo.ddp_job, demo.churn_job
    page = login(browser, demo, "eng1")
    page.context.add_init_script(script=CSP_LISTENER)
    page.goto(f"{demo.server.url}/jobs/{ddp}")
    drawn = wait_drawn(page, ["loss", "lr"])  # every key ddp_train.py logs, no key picked yet
    name = f"#{ddp} ddp-example"
    api = demo.api("eng1", "GET", f"/api/v1/jobs/{ddp}/metrics/series", params={"key": "loss"}).json()["series"][0]
    assert drawn["loss"]["labels"] == [name] and drawn["loss"]["log"] is False
    assert drawn["loss"]["data"] == [api["step"], api["value"]] and len(api["step"]) == DEMO_STEPS
    rows = page.locator("#metric-keys tbody tr").all_inner_texts()
    assert [r.split("\t")[:2] for r in rows] == [["loss", str(DEMO_STEPS)], ["lr", str(DEMO_STEPS)]]

    page.uncheck("#metric-pick input[value=lr]")
    wait_drawn(page, ["loss"])
    page.check("#metric-log")
    assert charts(page)["loss"]["log"] is True
    page.fill("#metric-smooth", "0.9")
    loss = charts(page)["loss"]
    assert loss["labels"] == [f"{name} (raw)", name]
    raw, smooth = loss["data"][1], loss["data"][2]
    assert smooth[0] == raw[0] and smooth[1:] != raw[1:]  # debiased: the first point is the raw one
    assert query(page) == {"key": ["loss"], "log": ["1"], "smooth": ["0.9"]}

    page.fill("#compare-id", str(churn))
    page.click("#compare-add")
    page.wait_for_selector(f"#compare-list .chip[data-job='{churn}']")
    loss = wait_drawn(page, ["loss"])["loss"]
    assert loss["labels"] == [f"{name} (raw)", name, f"#{churn} churn (raw)", f"#{churn} churn"]
    page.check("#metric-pick input[value=accuracy]")  # a key only the compared job logged
    drawn = wait_drawn(page, ["accuracy", "loss"])
    assert drawn["accuracy"]["labels"] == [f"#{churn} churn (raw)", f"#{churn} churn"]
    assert query(page) == {"key": ["accuracy", "loss"], "log": ["1"], "smooth": ["0.9"], "compare": [str(churn)]}

    page.fill("#compare-id", "999999")
    page.click("#compare-add")
    page.wait_for_selector("#compare-error:not(:empty)")
    assert page.inner_text("#compare-error") == "#999999: no such job, or not yours to see"
    assert query(page)["compare"] == [str(churn)]

    shared = page.context.new_page()  # the URL is the selection: the same charts for whoever opens it
    shared.goto(page.url)
    drawn = wait_drawn(shared, ["accuracy", "loss"])
    assert drawn["loss"]["labels"] == loss["labels"] and drawn["loss"]["log"] is True
    assert shared.is_checked("#metric-log") and shared.input_value("#metric-smooth") == "0.9"
    assert page.evaluate("window.__csp") == [] and shared.evaluate("window.__csp") == []
    page.context.close()


def test_a_compared_job_is_read_with_the_visitors_own_rights(browser: Any, demo: Demo) -> None:
    # A shared link naming a job that does not exist (or that the visitor may not see) draws nothing of it.
    page = login(browser, demo, "view1")
    page.goto(f"{demo.server.url}/jobs/{demo.ddp_job}?key=loss&compare=999999&compare={demo.churn_job}")
    drawn = wait_drawn(page, ["loss"])
    assert [label.split()[0] for label in drawn["loss"]["labels"]] == [f"#{demo.ddp_job}", f"#{demo.churn_job}"]
    assert page.inner_text("#compare-error") == "#999999: no such job, or not yours to see"
    assert query(page)["compare"] == [str(demo.churn_job)]
    page.context.close()
    # the charts' data needs a session: without one, 401 and nothing of the job
    r = httpx.get(f"{demo.server.url}/jobs/{demo.ddp_job}/metrics.json?key=loss")
    assert r.status_code == 401 and "loss" not in r.text


def test_hostile_metric_keys_are_text_on_the_page(browser: Any, demo: Demo) -> None:
    # '<!--<script>' in the page's inline JSON would switch the HTML parser into a state where its </script> ends
    # nothing: the rest of the page would be swallowed. Every key must come back as the text it is.
    keys = ["<!--<script>", "</script><img src=x onerror=alert(1)>", "[/]", "a&b \u2028", "k" * 200]
    r = demo.api("admin", "POST", "/api/v1/jobs", json={"name": "hostile", "command": ["true"], "workdir": "/tmp"})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    points = [{"step": s, "time": float(s), "values": dict.fromkeys(keys, float(s))} for s in range(3)]
    r = demo.api("admin", "POST", f"/api/v1/jobs/{job_id}/metrics", json={"points": points})
    assert r.status_code == 204, r.text
    page = login(browser, demo, "admin")
    page.context.add_init_script(script=CSP_LISTENER)
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("dialog", lambda d: (errors.append("dialog " + d.message), d.dismiss()))
    page.goto(f"{demo.server.url}/jobs/{job_id}")
    drawn = wait_drawn(page, keys)
    assert all(c["data"][1] == [0, 1, 2] for c in drawn.values())
    cells = page.locator("#metric-keys tbody tr td:first-child").all_inner_texts()
    assert sorted(cells) == sorted(keys)
    shown = page.eval_on_selector_all("#metric-charts figure figcaption", "(els) => els.map((e) => e.textContent)")
    assert sorted(shown) == sorted(keys)
    assert page.locator("img[src=x]").count() == 0 and page.locator("#compare-form").count() == 1  # page whole
    assert errors == [] and page.evaluate("window.__csp") == []
    page.context.close()
