"""plan/cost.py against hand arithmetic with the catalog's cited prices (hardware-and-prices.md §6)."""

from __future__ import annotations

import pytest

from treino.catalog.offers import fx_rate, offer
from treino.errors import PlanError
from treino.plan.cost import (
    HOURS_PER_MONTH,
    FxRate,
    Offer,
    break_even_utilisation,
    format_brl,
    fx_sensitivity,
    hourly_brl,
    project_cost,
)

# BCB PTAX selling rate for 2026-02-04 (fx.csv); prices from offers.csv.
FX = FxRate(brl_per_usd=5.2359, date="2026-02-04", source="BCB PTAX")


@pytest.mark.parametrize(
    ("amount", "shown"),
    [
        (1234.56, "R$ 1.234,56"),
        (0, "R$ 0,00"),
        (-1234.5, "-R$ 1.234,50"),
        (1234567.891, "R$ 1.234.567,89"),
        (0.005, "R$ 0,01"),  # half up, not to even
        (2.675, "R$ 2,68"),  # the float is 2.67499..., the number typed is 2.675
        (999.995, "R$ 1.000,00"),
        (-0.004, "R$ 0,00"),  # no '-R$ 0,00'
    ],
)
def test_format_brl(amount: float, shown: str) -> None:
    assert format_brl(amount) == shown


def test_format_brl_refuses_nan() -> None:
    with pytest.raises(PlanError):
        format_brl(float("nan"))


def test_catalog_rate_is_the_cited_ptax() -> None:
    assert fx_rate() == FxRate(5.2359, "2026-02-04", fx_rate().source)
    assert "PTAX" in fx_rate().source


def test_dedicated_hourly_is_monthly_over_730_hours() -> None:
    ded = offer("example-eveo-sp1-8x-h200")
    assert HOURS_PER_MONTH == 730  # 8760 h / 12
    assert hourly_brl(ded, None) == pytest.approx(165_100 / 730)


def test_break_even_8x_h200_dedicated_vs_aws_p5en() -> None:
    # Hand: 8x H200 example R$ 165.100/month vs AWS p5en.48xlarge 63.296 USD/h (S84) at 5.2359 BRL/USD:
    # 63.296 x 5.2359 = 331.4115 BRL/h; x 730 h = 241 930.4 BRL for a full month; 165 100 / 241 930.4 = 0.6824.
    u = break_even_utilisation(offer("example-eveo-sp1-8x-h200"), offer("aws-p5en-48xlarge"), fx_rate())
    assert u == pytest.approx(0.6824, abs=1e-4)


def test_break_even_counts_egress_against_the_cloud() -> None:
    # 1000 GB/month out of AWS at 0.09 USD/GB = 471.231 BRL, free at the dedicated site:
    # (165 100 - 471.231) / 241 930.4 = 0.6805
    u = break_even_utilisation(
        offer("example-eveo-sp1-8x-h200"), offer("aws-p5en-48xlarge"), FX, egress_gb_per_month=1000
    )
    assert u == pytest.approx(0.6805, abs=1e-4)


def test_project_cost_cloud_by_hand() -> None:
    # 10 runs x 24 h x 3 months x 63.296 USD/h x 5.2359 = 238 616.30 BRL
    # egress: (500 GB dataset + 10 x 3 x 80 GB checkpoints) x 0.09 USD/GB x 5.2359 = 1 366.57 BRL
    c = project_cost(offer("aws-p5en-48xlarge"), FX, 24, 10, 3, dataset_gb=500, checkpoint_gb_per_run=80)
    assert c.compute_brl == pytest.approx(238_616.30, abs=0.01)
    assert c.egress_brl == pytest.approx(1_366.57, abs=0.01)
    assert c.total_brl == pytest.approx(239_982.87, abs=0.01)
    assert c.per_month_brl == pytest.approx(239_982.87 / 3, abs=0.01)
    assert c.utilisation == pytest.approx(240 / 730)
    assert (c.fx_brl_per_usd, c.fx_date) == (5.2359, "2026-02-04")
    assert format_brl(c.total_brl) == "R$ 239.982,87"


def test_project_cost_dedicated_pays_the_month_whatever_the_use() -> None:
    ded = offer("example-eveo-sp1-8x-h200")
    light = project_cost(ded, None, 1, 1, 3, dataset_gb=500, checkpoint_gb_per_run=80)
    heavy = project_cost(ded, None, 24, 30, 3, dataset_gb=500, checkpoint_gb_per_run=80)
    assert light.total_brl == heavy.total_brl == 3 * 165_100
    assert heavy.egress_brl == 0  # seed: no egress fee
    assert light.fx_brl_per_usd is None  # nothing priced in USD


def test_dedicated_runs_beyond_a_month_raise() -> None:
    with pytest.raises(PlanError, match="744 h a month, more than the 730 h"):
        project_cost(offer("example-eveo-sp1-8x-h200"), FX, 24, 31, 1)


def test_missing_rate_raises_for_usd_prices() -> None:
    with pytest.raises(PlanError, match="no BRL/USD rate"):
        project_cost(offer("aws-p5en-48xlarge"), None, 24, 1, 1)


def test_missing_egress_price_raises_once_data_leaves() -> None:
    lam = offer("lambda-gpu-8x-h100-sxm5")
    assert lam.egress_usd_per_gb is None
    assert project_cost(lam, FX, 10, 1, 1).egress_brl == 0  # nothing leaves: nothing to price
    with pytest.raises(PlanError, match="no egress price"):
        project_cost(lam, FX, 10, 1, 1, checkpoint_gb_per_run=50)


def test_missing_price_raises() -> None:
    with pytest.raises(PlanError, match="no valid price"):
        Offer("q", "cloud", "X", "h100-sxm", 8, float("nan"), "USD", "hour", 0.09, "quote", "2026-11-29")
    with pytest.raises(PlanError, match="no valid price"):
        Offer("q", "cloud", "X", "h100-sxm", 8, 0.0, "USD", "hour", 0.09, "quote", "2026-11-29")


def test_fx_sensitivity_moves_usd_prices_not_brl_ones() -> None:
    cloud = fx_sensitivity(offer("aws-p5en-48xlarge"), FX, 10, 24, 10, 3)
    assert cloud.high.total_brl == pytest.approx(cloud.base.total_brl * 1.10)
    assert cloud.low.total_brl == pytest.approx(cloud.base.total_brl * 0.90)
    assert cloud.high.fx_brl_per_usd == pytest.approx(5.2359 * 1.10)
    ded = fx_sensitivity(offer("example-eveo-sp1-8x-h200"), FX, 10, 24, 10, 3)
    assert ded.low.total_brl == ded.base.total_brl == ded.high.total_brl == 3 * 165_100


def test_break_even_needs_one_of_each_kind() -> None:
    with pytest.raises(PlanError, match="dedicated offer with a cloud one"):
        break_even_utilisation(offer("aws-p5en-48xlarge"), offer("aws-p5-48xlarge"), FX)
