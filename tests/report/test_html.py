"""The HTML report: built from the real catalog, self-contained, and rendered by a real headless browser."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from treino import catalog
from treino.catalog import offers as offer_catalog
from treino.plan.recommend import Candidate, recommend
from treino.report import write_recommendation_report
from treino.report.html import REPORT_STEPS

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_TIMEOUT_S = 120
TOKENS = 2e9
SEQ_LEN = 4096
DEADLINE_HOURS = 72.0  # 3 days


STEPS_SEEN: list[str] = []  # what the report told its progress callback, in order


def _build(path: Path) -> Path:
    sites = offer_catalog.sites()
    candidates = [
        Candidate(o, catalog.gpu(o.gpu), sites[o.site].country if o.site and o.site in sites else None)
        for o in offer_catalog.offers().values()
    ]
    model = catalog.model("llama-3-8b")
    fx = offer_catalog.fx_rate()
    result = recommend(
        model, candidates, fx, tokens=TOKENS, seq_len=SEQ_LEN, deadline_hours=DEADLINE_HOURS, residency="BR"
    )
    return write_recommendation_report(
        path,
        model,
        result,
        candidates,
        fx,
        TOKENS,
        SEQ_LEN,
        deadline_hours=DEADLINE_HOURS,
        residency="BR",
        on_step=STEPS_SEEN.append,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("report") / "recommend.html")


def test_report_tells_each_step_and_cites_no_internal_codes(report: Path) -> None:
    assert len(STEPS_SEEN) == len(set(STEPS_SEEN)) == REPORT_STEPS, STEPS_SEEN
    page = report.read_text(encoding="utf-8")
    assert not re.findall(r"§\s?\d|\bS\d{2,3}\b", page)  # the docs are cited, not the internal reference's codes


def test_report_is_self_contained_with_four_captioned_figures(report: Path) -> None:
    page = report.read_text(encoding="utf-8")
    # nothing fetched: no remote src/href/url()/@import, no <script> or <link> at all
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert not re.search(r"url\(\s*['\"]?\s*(https?:)?//|@import", page, re.IGNORECASE)
    assert "<script" not in page.lower() and "<link" not in page.lower()
    assert page.count("<figure") == 4
    assert page.count('src="data:image/png;base64,') == 4
    captions = re.findall(r"<figcaption>(.*?)</figcaption>", page, re.DOTALL)
    assert len(captions) == 4
    fx = offer_catalog.fx_rate()
    assert fx.date in captions[2] and "BRL/USD" in captions[2]  # cost figure: prices in USD, converted
    assert "as of" in captions[2] and "as of" in captions[3]  # every priced figure dates its prices
    assert "llama-3-8b" in page and "R$ " in page


def test_report_importing_does_not_load_matplotlib() -> None:
    # `treino plan train` imports treino.cli.app; the report must not drag matplotlib into its cold start
    code = "import sys, treino.cli.app, treino.report; assert 'matplotlib' not in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=60)


def test_report_renders_in_headless_chromium(report: Path, tmp_path: Path) -> None:
    if not CHROMIUM.exists():
        pytest.skip(f"{CHROMIUM} is missing: install Debian's chromium (apt-get install -y chromium) to run this")
    shot = tmp_path / "shot.png"
    argv = [
        str(CHROMIUM),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        f"--screenshot={shot}",
        "--window-size=1280,2400",
        report.resolve().as_uri(),
    ]
    subprocess.run(argv, check=True, timeout=CHROMIUM_TIMEOUT_S, capture_output=True, start_new_session=True)
    assert shot.exists() and shot.stat().st_size > 0
    import matplotlib.image
    import numpy as np

    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[:2] == (2400, 1280)
    colours = np.unique((pixels[..., :3] * 255).astype(np.uint8).reshape(-1, 3), axis=0)
    # a blank or error page has a handful of colours; the figures' palette and anti-aliased text give hundreds
    assert len(colours) > 200, f"only {len(colours)} distinct colours: the page looks blank"
