"""Every dashboard page, as a pt-BR visitor sees it from a real server: no English word (tests/test_i18n.py's
ENGLISH_WORDS) in its visible text or in the attributes a person reads (title, aria-label, confirmations). Names,
code, logs and the spec (<code>, <pre>, translate="no") are the user's, not treino's, and are left out."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from tests.test_i18n import ENGLISH_WORDS
from tests.web.conftest import Demo
from tests.web.test_pages import session

READ_ATTRIBUTES = ("title", "aria-label", "data-confirm", "placeholder", "alt")
SKIPPED = ("script", "style", "pre", "code")
VOID = {"br", "hr", "img", "input", "link", "meta", "source", "wbr"}


class Visible(HTMLParser):
    """The text a reader sees, and the attributes they read, outside SKIPPED elements and translate="no"."""

    def __init__(self) -> None:
        super().__init__()
        self.skipping: list[str] = []  # open tags inside a skipped element (its own tag first)
        self.texts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in VOID:
            if not self.skipping:
                self.texts += [v or "" for k, v in attrs if k in READ_ATTRIBUTES]
            return
        if self.skipping or tag in SKIPPED or dict(attrs).get("translate") == "no":
            self.skipping.append(tag)
            return
        self.texts += [v or "" for k, v in attrs if k in READ_ATTRIBUTES or k.startswith("data-t-")]

    def handle_endtag(self, tag: str) -> None:
        if self.skipping and tag not in VOID:
            self.skipping.pop()

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.texts.append(data)


def english_in(html: str) -> list[str]:
    parser = Visible()
    parser.feed(html)
    text = re.sub(r"--[a-z0-9-]+", " ", " ".join(parser.texts))  # command-line flags, as the CLI's check
    words = re.findall(r"[A-Za-zÀ-ÿ]+", text)
    return sorted({w for w in words if w.lower() in ENGLISH_WORDS})


def test_every_page_is_in_portuguese_for_a_pt_br_visitor(demo: Demo) -> None:
    with session(demo, "admin", "pt-BR,pt;q=0.9") as client:
        home = client.get("/")
        csrf = re.search(r'name="csrf" value="([0-9a-f]{64})"', home.text)
        assert csrf is not None, (home.status_code, home.text[-3000:])
        cancelled = client.post(f"/jobs/{demo.ddp_job}/cancel", data={"csrf": csrf.group(1)})  # already finished
        assert cancelled.status_code == 303
        pages = {
            "overview": client.get("/"),
            "job": client.get(f"/jobs/{demo.ddp_job}"),
            "job read a dataset": client.get(f"/jobs/{demo.churn_job}"),
            "job with a flash": client.get(cancelled.headers["location"]),
            "plan that fits": client.get("/plan?model=llama-3-8b&gpu=h200-sxm&tokens=2e9"),
            "plan that does not fit": client.get("/plan?model=llama-3-70b&gpu=h200-sxm&gpus=2&tokens=2e9"),
            "plan with bad input": client.get("/plan?model=nope&gpus=x"),
            "data and audit": client.get("/data"),
            "usage": client.get("/usage"),
            "usage by job": client.get("/usage?by=job&since=30d"),
            "no such job": client.get("/jobs/999999"),
        }
    with session(demo, "view1", "pt-BR") as client:
        pages["forbidden"] = client.get("/data")
    with session(demo, "admin", "pt-BR") as client:
        client.cookies.clear()
        pages["login"] = client.get("/login")
    assert [name for name, r in pages.items() if r.headers.get("content-language") != "pt-BR"] == []
    english = {name: english_in(r.text) for name, r in pages.items() if english_in(r.text)}
    assert english == {}, english
    assert "Como corrigir" in pages["no such job"].text and "R$ " in pages["plan that fits"].text
    assert "checkpointing completo" in pages["plan that does not fit"].text
    assert "já está concluído; nada a cancelar" in pages["job with a flash"].text


def test_treino_jobs_and_show_in_pt_br(demo: Demo) -> None:
    from tests.cli.test_cli_i18n import english_in, treino

    where = ["--url", demo.server.url, "--token", demo.tokens["admin"]]
    listed = treino("--lang", "pt-BR", "jobs", *where)
    assert listed.returncode == 0, listed.stderr
    assert "concluído" in listed.stdout and english_in(listed.stdout) == []
    shown = treino("show", str(demo.ddp_job), *where, lang="pt_BR.UTF-8")
    assert shown.returncode == 0, shown.stderr
    assert "tentativas" in shown.stdout and english_in(shown.stdout) == []
    missing = treino("show", "999999", *where, lang="pt_BR.UTF-8")
    assert missing.returncode == 1 and "Como corrigir:" in missing.stderr  # a runtime failure (treino.errors)
    usage = treino("--lang", "pt-BR", "usage", "--by", "job", "--since", "30d", *where)
    assert usage.returncode == 0, usage.stderr
    assert "GPU-horas" in usage.stdout and "Fonte: os registros do servidor" in usage.stdout
    assert english_in(usage.stdout) == []
