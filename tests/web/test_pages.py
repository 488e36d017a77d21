"""The dashboard over plain HTTP (no browser): CSRF on form posts, permissions, languages, page weight."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

import httpx

from tests.web.conftest import Demo
from treino.server.web.i18n import Locale, negotiate
from treino.server.web.views import steps_target

PAGE_WEIGHT_MAX_BYTES = 500_000  # the budget, scripts and styles included


@contextmanager
def session(demo: Demo, who: str, lang: str = "en") -> Iterator[httpx.Client]:
    """A client logged in as `who` through POST /login (it keeps the session cookie)."""
    with httpx.Client(base_url=demo.server.url, headers={"Accept-Language": lang}, timeout=30) as client:
        r = client.post("/login", data={"token": demo.tokens[who], "next": "/"})
        assert r.status_code == 303 and r.headers["location"] == "/"
        yield client


def test_form_posts_need_the_csrf_token_of_the_session(demo: Demo) -> None:
    with session(demo, "admin") as client:
        r = client.post(f"/jobs/{demo.ddp_job}/resubmit", data={"csrf": "0" * 64})
        assert r.status_code == 403 and "CSRF" in r.text
        page = client.get(f"/jobs/{demo.ddp_job}").text
        csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', page)
        assert csrf is not None
        r = client.post(f"/jobs/{demo.ddp_job}/resubmit", data={"csrf": csrf.group(1)})
        assert r.status_code == 303 and r.headers["location"].startswith("/jobs/")
        new_id = int(r.headers["location"].split("/")[2].split("?")[0])
        assert new_id > demo.ddp_job
        assert (
            demo.api("admin", "GET", f"/api/v1/jobs/{new_id}").json()["spec"]
            == (demo.api("admin", "GET", f"/api/v1/jobs/{demo.ddp_job}").json()["spec"])
        )
        assert client.post(f"/jobs/{new_id}/cancel", data={"csrf": csrf.group(1)}).status_code == 303
        demo.wait(new_id)


def test_a_viewer_may_not_cancel_and_sees_no_buttons(demo: Demo) -> None:
    with session(demo, "view1") as client:
        page = client.get(f"/jobs/{demo.ddp_job}").text
        assert 'id="cancel"' not in page and 'id="resubmit"' not in page
        assert client.post(f"/jobs/{demo.ddp_job}/cancel", data={"csrf": "x"}).status_code == 403


def test_no_cookie_redirects_pages_to_login_and_json_gets_401(demo: Demo) -> None:
    r = httpx.get(demo.server.url + f"/jobs/{demo.ddp_job}")
    assert r.status_code == 303 and r.headers["location"] == f"/login?next=/jobs/{demo.ddp_job}"
    assert httpx.get(demo.server.url + "/overview.json").status_code == 401
    r = httpx.post(demo.server.url + "/login", data={"token": demo.tokens["admin"], "next": "//evil.example/"})
    assert r.headers["location"] == "/"  # no open redirect


def test_languages_follow_accept_language(demo: Demo) -> None:
    with session(demo, "admin", "pt-BR,pt;q=0.9,en;q=0.5") as client:
        page = client.get("/plan?model=llama-3-8b&gpu=h200-sxm&tokens=2e9").text
        assert "Visão geral" in page and re.search(r"R\$ \d{1,3}(\.\d{3})*,\d\d", page)
    with session(demo, "admin", "en-US,en;q=0.9") as client:
        page = client.get("/plan?model=llama-3-8b&gpu=h200-sxm&tokens=2e9").text
        assert "Overview" in page and re.search(r"R\$ \d{1,3}(\.\d{3})*,\d\d", page)  # reais in either language
    assert negotiate("de-DE, pt;q=0.4, en;q=0.8") == Locale("en")
    assert negotiate("fr") == Locale("en")
    assert Locale("pt-BR").money(1234.56) == "R$ 1.234,56"
    assert Locale("pt-BR").num(1234.5, 1) == "1.234,5"


def test_pages_weigh_under_the_budget(demo: Demo) -> None:
    with session(demo, "admin") as client:
        for path in ("/", f"/jobs/{demo.ddp_job}", "/plan", "/data"):
            html = client.get(path)
            assert html.status_code == 200, path
            assets = re.findall(r'(?:src|href)="(/static/[^"]+)"', html.text)
            total = len(html.content) + sum(len(client.get(a).content) for a in set(assets))
            assert total <= PAGE_WEIGHT_MAX_BYTES, (path, total)


def test_plan_rejects_a_config_path_instead_of_reading_it(demo: Demo) -> None:
    with session(demo, "admin") as client:
        r = client.get("/plan", params={"model": "/etc/passwd", "gpu": "l4"})
        assert r.status_code == 422 and "Unknown model" in r.text


def test_steps_target_reads_the_specs_steps_argument() -> None:
    assert steps_target({"args": ["--steps", "200", "--save-every", "20"]}) == 200
    assert steps_target({"args": ["--steps=50"]}) == 50
    assert steps_target({"args": ["--epochs", "3"]}) is None
