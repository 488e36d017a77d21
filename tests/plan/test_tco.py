"""Dedicated vs cloud for one job: totals, break-even runs a month, exchange-rate move."""

from __future__ import annotations

import pytest

from treino import catalog
from treino.errors import PlanError
from treino.plan.cost import HOURS_PER_MONTH, FxRate, Offer
from treino.plan.recommend import Candidate
from treino.plan.tco import compare

FX = FxRate(5.0, "2026-11-29", "test rate")


def _cand(kind: str, price: float) -> Candidate:
    offer = Offer(
        name=kind,
        kind=kind,
        provider="p",
        gpu="h200-sxm",
        gpus=8,
        price=price,  # type: ignore[arg-type]
        currency="BRL" if kind == "dedicated" else "USD",
        period="month" if kind == "dedicated" else "hour",
        egress_usd_per_gb=0.0 if kind == "dedicated" else 0.09,
        source="test",
        as_of="2026-11-29",
        site="s",
    )
    return Candidate(offer, catalog.gpu("h200-sxm"), "BR")


def test_break_even_and_fx_move_by_hand() -> None:
    model = catalog.model("llama-3-8b")
    result = compare(
        model,
        _cand("dedicated", 100_000),
        _cand("cloud", 60.0),
        FX,
        tokens=2e9,
        seq_len=4096,
        runs_per_month=2,
        months=12,
        checkpoint_gb=30,
        fx_move_pct=20,
    )
    hours = result.cloud.choice.hours
    cloud_month = 2 * hours * 60.0 * 5.0 + 2 * 30 * 0.09 * 5.0  # compute + checkpoint egress, BRL
    assert result.cloud.per_month_brl == pytest.approx(cloud_month)
    assert result.dedicated.total_brl == 12 * 100_000
    assert result.break_even_runs_per_month == pytest.approx(100_000 / (cloud_month / 2))
    assert result.cloud_total_high_brl == pytest.approx(12 * cloud_month * 1.2)
    assert result.cheaper == "cloud"


def test_runs_that_overflow_the_dedicated_month_are_refused() -> None:
    with pytest.raises(PlanError, match="do not fit in a month"):
        compare(
            catalog.model("llama-3-8b"),
            _cand("dedicated", 1),
            _cand("cloud", 1),
            FX,
            tokens=2e9,
            seq_len=4096,
            runs_per_month=HOURS_PER_MONTH,
        )


def test_a_job_too_big_for_one_server_needs_a_named_network_and_pays_for_it() -> None:
    """Llama-3-70B full fine-tune needs more than one 8 x H200 server. Without a fabric the dedicated offer is one
    server and is refused, saying why; with InfiniBand at R$ 10.000 a server a month, the network is in its total."""
    from dataclasses import replace

    from treino.plan.tco import offer_cost

    model, ded = catalog.model("llama-3-70b"), _cand("dedicated", 100_000)
    kw = {"tokens": 2e9, "seq_len": 4096, "precision": "bf16-mixed", "runs_per_month": 1, "months": 2}
    kw |= {"dataset_gb": 0.0, "checkpoint_gb": 0.0}
    with pytest.raises(PlanError, match="one server only: the offer names no network between servers"):
        offer_cost(model, ded, FX, **kw)  # type: ignore[arg-type]
    joined = replace(ded.offer, fabric="8x400g-ib", fabric_price=10_000.0, fabric_source="quote")
    cost = offer_cost(model, Candidate(joined, ded.gpu, "BR"), FX, **kw)  # type: ignore[arg-type]
    assert cost.servers > 1 and cost.fabric_brl == 10_000 * cost.servers * 2
    assert cost.total_brl == (100_000 + 10_000) * cost.servers * 2
