"""treino recommend: residency, deadline, budget, ranking and the reasons for rejections."""

from __future__ import annotations

import pytest

from treino import catalog
from treino.catalog import offers as offer_catalog
from treino.errors import PlanError
from treino.plan.cost import FxRate, Offer
from treino.plan.recommend import Candidate, recommend

FX = FxRate(5.0, "2026-11-29", "test rate")


def _offer(
    name: str, gpu: str, gpus: int, price: float, currency: str = "BRL", period: str = "month", site: str = "s"
) -> Offer:
    return Offer(
        name=name,
        kind="dedicated" if period == "month" else "cloud",
        provider="p",
        gpu=gpu,
        gpus=gpus,
        price=price,
        currency=currency,
        period=period,
        egress_usd_per_gb=0.0,
        source="test",
        as_of="2026-11-29",
        site=site,
    )  # type: ignore[arg-type]


def _cands(*rows: tuple[Offer, str]) -> list[Candidate]:
    return [Candidate(o, catalog.gpu(o.gpu), country) for o, country in rows]


def test_residency_ranks_and_rejects_with_reasons() -> None:
    cands = _cands(
        (_offer("br-h200", "h200-sxm", 8, 150_000), "BR"),
        (_offer("us-h200", "h200-sxm", 8, 100_000), "US"),
        (_offer("br-l4", "l4", 1, 1_700), "BR"),
    )
    r = recommend(catalog.model("llama-3-8b"), cands, FX, tokens=2e9, seq_len=4096, residency="BR", max_gpus=1)
    assert [c.offer for c in r.choices] == ["br-h200"]
    reasons = {x.offer: x.reason for x in r.rejected}
    assert "residency BR required; the offer is in s (US)" in reasons["us-h200"]
    assert reasons["br-l4"].startswith("does not fit")  # full fine-tune of 8B on one 24 GB card


def test_dedicated_months_and_cloud_hours() -> None:
    cloud = _offer("cloud", "h100-sxm", 8, 10.0, currency="USD", period="hour")
    r = recommend(catalog.model("llama-3-8b"), _cands((cloud, "US")), FX, tokens=2e9, seq_len=4096, max_gpus=8)
    c = r.choices[0]
    assert c.cost_brl == pytest.approx(10.0 * 5.0 * c.hours)  # USD/h x BRL/USD x hours, one instance
    ded = _offer("ded", "h100-sxm", 8, 100_000)
    r = recommend(catalog.model("llama-3-8b"), _cands((ded, "BR")), FX, tokens=2e9, seq_len=4096, max_gpus=8)
    assert r.choices[0].cost_brl == 100_000  # a month, however few hours are used


def test_impossible_deadline_returns_the_closest_and_says_by_how_much() -> None:
    cands = _cands((_offer("one-h200", "h200-sxm", 1, 20_000), "BR"))
    kw = {"tokens": 2e9, "seq_len": 4096, "max_gpus": 1, "precision": "bf16-true"}  # fits one H200
    r = recommend(catalog.model("llama-3-8b"), cands, FX, deadline_hours=1, **kw)  # type: ignore[arg-type]
    assert not r.choices and r.best_effort is not None
    assert "past the 1 h deadline" in r.miss
    r = recommend(catalog.model("llama-3-8b"), cands, FX, budget_brl=1000, **kw)  # type: ignore[arg-type]
    assert "R$ 19.000,00 over the budget" in r.miss


def test_bad_limits() -> None:
    with pytest.raises(PlanError, match="--tokens must be positive"):
        recommend(catalog.model("gpt2"), [], FX, tokens=0, seq_len=1024)


def test_catalog_search_for_the_demo() -> None:
    """The issue's demo: Llama-3-8B on 2 B tokens within 3 days under residency BR."""
    fx, cands = offer_catalog.fx_rate(), offer_catalog.candidates()
    r = recommend(catalog.model("llama-3-8b"), cands, fx, tokens=2e9, seq_len=4096, deadline_hours=72, residency="BR")
    assert r.choices and all(c.country == "BR" and c.hours <= 72 for c in r.choices)
    assert [c.cost_brl for c in r.choices] == sorted(c.cost_brl for c in r.choices)


def test_an_offer_without_a_network_is_planned_on_one_server() -> None:
    """The issue's "16× L4" built from sixteen 1-GPU servers with no network named: never again. Without a fabric
    the offer is one server, and a miss says why it was not multiplied; with one, servers are joined over it."""
    from dataclasses import replace

    one = _offer("l4-alone", "l4", 1, 0.5, currency="USD", period="hour")
    kw = {"tokens": 2e9, "seq_len": 2048, "max_gpus": 16, "deadline_hours": 10.0}
    r = recommend(catalog.model("qwen2.5-0.5b"), _cands((one, "US")), FX, **kw)  # type: ignore[arg-type]
    assert r.best_effort is not None and (r.best_effort.gpus, r.best_effort.servers) == (1, 1)
    assert "one server only: the offer names no network between servers" in r.rejected[0].reason
    joined = replace(one, name="l4-joined", fabric="2x100g-eth", fabric_price=0.0, fabric_source="test")
    r = recommend(catalog.model("qwen2.5-0.5b"), _cands((joined, "US")), FX, **kw)  # type: ignore[arg-type]
    c = r.choices[0] if r.choices else r.best_effort
    assert c is not None and c.servers > 1 and c.fabric == "2x100g-eth"
    assert c.network == f"{c.servers} servers joined by 2×100 GbE (TCP), included in the price"


def test_the_network_between_servers_is_priced_where_the_offer_gives_a_price() -> None:
    """A dedicated 8-GPU server with InfiniBand at R$ 10.000 a server a month: a run that needs 4 servers pays it 4
    times; a cloud offer naming its fabric without a price says so and leaves it out of the cost."""
    from dataclasses import replace

    ded = replace(
        _offer("ded-ib", "h100-sxm", 8, 100_000), fabric="8x400g-ib", fabric_price=10_000.0, fabric_source="quote"
    )
    kw = {"tokens": 2e10, "seq_len": 4096, "max_gpus": 64, "deadline_hours": 24 * 6.0}
    r = recommend(catalog.model("llama-3-70b"), _cands((ded, "BR")), FX, **kw)  # type: ignore[arg-type]
    c = r.choices[0]
    months = -(-c.hours // 730)
    assert c.servers > 1 and c.fabric_cost_brl == 10_000 * c.servers * months
    assert c.cost_brl == (100_000 + 10_000) * c.servers * months
    assert "servers joined by 8×400G InfiniBand NDR, R$ " in c.network
    cloud = replace(
        _offer("cloud-ib", "h100-sxm", 8, 20.0, currency="USD", period="hour"), fabric="8x400g-ib", fabric_source="doc"
    )
    r = recommend(catalog.model("llama-3-70b"), _cands((cloud, "US")), FX, **kw)  # type: ignore[arg-type]
    c = r.choices[0]
    assert c.servers > 1 and c.fabric_cost_brl is None
    assert c.cost_brl == pytest.approx(20.0 * 5.0 * c.servers * c.hours)  # the network's price is not in it
    assert c.network.endswith("the offer gives no price for it, not included")
