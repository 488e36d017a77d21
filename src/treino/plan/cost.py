"""What a training project costs on a dedicated server or a cloud instance, in BRL.

Pure functions over frozen dataclasses: the catalog (treino.catalog.offers) builds `Offer` and `FxRate`
from data files; nothing here reads files. Every price and rate carries its source and date, and a
missing one is a `PlanError`, never a silent zero.

Billing model:
* dedicated: the monthly price is paid whatever the use; the runs must fit in the month's hours.
* cloud: billed per hour used (on-demand), plus internet egress per GB.

Egress: the cloud rows use the first-tier internet egress price (AWS us-east-1 0.09 USD/GB,
GCP Premium 0.12 USD/GB; hardware-and-prices.md §6.2, S100-S103); free allowances (AWS 100 GB/month)
and cheaper higher tiers are ignored, so egress is a slight overestimate. The seed provider says it
charges no egress fee and that this "reduces total cost by 20 % to 40 % compared to public cloud"
(seed article, 'Sem Egress Fee'): a vendor claim, which `project_cost` lets you check for your own
transfer volumes rather than assume.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from decimal import ROUND_HALF_UP, Decimal
from typing import Literal

from treino.errors import PlanError
from treino.i18n import Msg

# 8760 h a year / 12 months = 730 h a month: the convention AWS and GCP use to turn hourly prices into
# monthly ones (GCP's calculator: a2-highgpu-1g 2736 USD/month = 3.748 USD/h x 730, S90).
HOURS_PER_MONTH = 730

OfferKind = Literal["dedicated", "cloud"]
Currency = Literal["BRL", "USD"]
Period = Literal["month", "hour"]


@dataclass(frozen=True)
class FxRate:
    """How many BRL one USD buys on `date` (e.g. the Banco Central PTAX), with where that came from."""

    brl_per_usd: float
    date: str  # YYYY-MM-DD
    source: str

    def __post_init__(self) -> None:
        if not (math.isfinite(self.brl_per_usd) and self.brl_per_usd > 0):
            raise PlanError(
                Msg("Exchange rate must be a positive number of BRL per USD, got {rate}.", rate=self.brl_per_usd)
            )

    def shifted(self, pct: float) -> FxRate:
        """This rate moved by `pct` percent (+10: the real weakens, one USD buys 10 % more BRL)."""
        return replace(self, brl_per_usd=self.brl_per_usd * (1 + pct / 100), source=f"{self.source} {pct:+g} %")


@dataclass(frozen=True)
class Offer:
    """A server or instance with a price. `price` is per `period` in `currency`."""

    name: str
    kind: OfferKind
    provider: str
    gpu: str  # a name from gpus.csv
    gpus: int
    price: float
    currency: Currency
    period: Period
    egress_usd_per_gb: float | None  # None: not known, which is an error once any GB leave
    source: str
    as_of: str  # YYYY-MM-DD
    site: str | None = None
    example: bool = False  # an illustrative price, not a quote
    pricing: str = "on-demand"
    cpu_cores: int | None = None
    ram_gb: float | None = None
    storage: str | None = None
    storage_read_gb_s: float | None = None
    interconnect: str | None = None  # "nvlink" | "pcie"
    fabric: str = "none"  # the network between servers (treino.plan.fabric spec); "none": one server only
    fabric_price: float | None = None  # per server, in `currency` per `period`; 0: included; None: not given
    fabric_source: str | None = None  # where the offer's fabric (and its price) is stated
    nvlink_domain: int | None = None  # GPUs one NVLink domain joins (8 HGX, 72 NVL72); None: the server's

    def __post_init__(self) -> None:
        if not (math.isfinite(self.price) and self.price > 0):
            raise PlanError(
                Msg(
                    "Offer {name!r} has no valid price ({price}). To fix: give its price.",
                    name=self.name,
                    price=self.price,
                )
            )
        if self.gpus < 1:
            raise PlanError(
                Msg("Offer {name!r} must have at least one GPU, got {gpus}.", name=self.name, gpus=self.gpus)
            )


@dataclass(frozen=True)
class CostBreakdown:
    """A project's cost on one offer, in BRL, with the figures it was computed from."""

    offer: str
    months: int
    compute_brl: float
    egress_brl: float
    hours_per_month: float  # hours the runs use each month
    utilisation: float  # hours_per_month / 730
    fx_brl_per_usd: float | None  # None when nothing was priced in USD
    fx_date: str | None
    price_source: str
    price_as_of: str

    @property
    def total_brl(self) -> float:
        return self.compute_brl + self.egress_brl

    @property
    def per_month_brl(self) -> float:
        return self.total_brl / self.months


@dataclass(frozen=True)
class FxSensitivity:
    """The same project costed at the rate moved down by `pct` %, at the rate, and moved up by `pct` %."""

    pct: float
    low: CostBreakdown
    base: CostBreakdown
    high: CostBreakdown


def _to_brl(amount: float, currency: Currency, fx: FxRate | None, what: str) -> float:
    if currency == "BRL":
        return amount
    if fx is None:
        raise PlanError(
            Msg(
                "{what} is priced in USD but no BRL/USD rate was given. To fix: add a dated row to fx.csv or pass a "
                "rate; treino never assumes one.",
                what=what,
            )
        )
    return amount * fx.brl_per_usd


def hourly_brl(offer: Offer, fx: FxRate | None) -> float:
    """The offer's price per hour in BRL; a monthly price is spread over 730 h (HOURS_PER_MONTH)."""
    per_hour = offer.price / HOURS_PER_MONTH if offer.period == "month" else offer.price
    return _to_brl(per_hour, offer.currency, fx, f"Offer {offer.name!r}")


def monthly_brl(offer: Offer, fx: FxRate | None) -> float:
    """The offer's price for a whole month (730 h) in BRL."""
    return hourly_brl(offer, fx) * HOURS_PER_MONTH


def fabric_brl(offer: Offer, fx: FxRate | None, servers: int, hours: float) -> float | None:
    """What the network between `servers` servers costs for `hours`, in BRL, billed like the offer (dedicated: whole
    months); 0 on one server or where it is included; None where the offer names a fabric but gives no price."""
    if servers <= 1:
        return 0.0
    if offer.fabric_price is None:
        return None
    per_hour = offer.fabric_price / HOURS_PER_MONTH if offer.period == "month" else offer.fabric_price
    if per_hour == 0:
        return 0.0
    brl_per_hour = _to_brl(per_hour, offer.currency, fx, f"The fabric of {offer.name!r}")
    if offer.kind == "dedicated":
        return brl_per_hour * HOURS_PER_MONTH * servers * max(1, math.ceil(hours / HOURS_PER_MONTH))
    return brl_per_hour * servers * hours


def egress_brl(offer: Offer, fx: FxRate | None, gb: float) -> float:
    """What `gb` gigabytes leaving the provider cost, at its first-tier USD/GB price (§6.2)."""
    if gb < 0:
        raise PlanError(Msg("Transfer must be zero or more GB, got {gb}.", gb=gb))
    if gb == 0:
        return 0.0
    if offer.egress_usd_per_gb is None:
        raise PlanError(
            Msg(
                "Offer {name!r} has no egress price, and {gb:g} GB would leave it. To fix: add egress_usd_per_gb to "
                "the offer (a local offers file), or plan with no transfer.",
                name=offer.name,
                gb=gb,
            )
        )
    if offer.egress_usd_per_gb == 0:  # a known zero (no egress fee) needs no exchange rate
        return 0.0
    return _to_brl(gb * offer.egress_usd_per_gb, "USD", fx, f"Egress from {offer.name!r}")


def project_cost(
    offer: Offer,
    fx: FxRate | None,
    hours_per_run: float,
    runs_per_month: float,
    months: int,
    dataset_gb: float = 0.0,
    checkpoint_gb_per_run: float = 0.0,
) -> CostBreakdown:
    """Cost of `runs_per_month` runs of `hours_per_run` each, for `months` months, in BRL.

    Transfer: `dataset_gb` leaves the provider once (moving the dataset or its processed form out;
    upload into the cloud is free ingress, so pass 0 if it only goes in) and each run's
    `checkpoint_gb_per_run` is downloaded once. A dedicated server costs its monthly price whatever
    the use; a cloud instance costs the hours used.
    """
    if hours_per_run <= 0 or runs_per_month < 0 or months < 1:
        raise PlanError(
            Msg(
                "Need hours_per_run > 0, runs_per_month >= 0 and months >= 1; got {hours}, {runs}, {months}.",
                hours=hours_per_run,
                runs=runs_per_month,
                months=months,
            )
        )
    hours_per_month = hours_per_run * runs_per_month
    if offer.kind == "dedicated":
        if hours_per_month > HOURS_PER_MONTH:
            raise PlanError(
                Msg(
                    "{runs:g} runs of {hours:g} h need {month_hours:g} h a month, more than the {limit} h one "
                    "dedicated server {name!r} has. To fix: rent more servers, or run fewer or shorter jobs.",
                    runs=runs_per_month,
                    hours=hours_per_run,
                    month_hours=hours_per_month,
                    limit=HOURS_PER_MONTH,
                    name=offer.name,
                )
            )
        compute = monthly_brl(offer, fx) * months
    else:
        compute = hourly_brl(offer, fx) * hours_per_month * months
    transfer_gb = dataset_gb + checkpoint_gb_per_run * runs_per_month * months
    egress = egress_brl(offer, fx, transfer_gb)
    uses_usd = offer.currency == "USD" or egress > 0
    return CostBreakdown(
        offer=offer.name,
        months=months,
        compute_brl=compute,
        egress_brl=egress,
        hours_per_month=hours_per_month,
        utilisation=hours_per_month / HOURS_PER_MONTH,
        fx_brl_per_usd=fx.brl_per_usd if uses_usd and fx else None,
        fx_date=fx.date if uses_usd and fx else None,
        price_source=offer.source,
        price_as_of=offer.as_of,
    )


def break_even_utilisation(
    dedicated: Offer, cloud: Offer, fx: FxRate | None, egress_gb_per_month: float = 0.0
) -> float:
    """The fraction of a month's 730 h above which the dedicated server is cheaper than the cloud one.

    Solves  dedicated_month + egress_dedicated = cloud_hour x 730 x u + egress_cloud  for u. Hours are
    compared one for one, so compare like hardware (or cost each with its own run time via
    `project_cost`). A result above 1 means the cloud instance is cheaper even when used all month.
    """
    if dedicated.kind != "dedicated" or cloud.kind != "cloud":
        raise PlanError(
            Msg(
                "break_even_utilisation compares a dedicated offer with a cloud one; got {dedicated!r} "
                "({dedicated_kind}) and {cloud!r} ({cloud_kind}).",
                dedicated=dedicated.name,
                dedicated_kind=dedicated.kind,
                cloud=cloud.name,
                cloud_kind=cloud.kind,
            )
        )
    fixed = monthly_brl(dedicated, fx) + egress_brl(dedicated, fx, egress_gb_per_month)
    return (fixed - egress_brl(cloud, fx, egress_gb_per_month)) / (hourly_brl(cloud, fx) * HOURS_PER_MONTH)


def fx_sensitivity(
    offer: Offer,
    fx: FxRate,
    pct: float,
    hours_per_run: float,
    runs_per_month: float,
    months: int,
    dataset_gb: float = 0.0,
    checkpoint_gb_per_run: float = 0.0,
) -> FxSensitivity:
    """`project_cost` at the BRL/USD rate moved by -pct %, 0 and +pct %: what a currency move does.

    A BRL-priced dedicated server moves only through its USD egress (zero at the seed provider);
    a USD-priced instance moves one for one with the rate.
    """
    if not (0 <= pct < 100):
        raise PlanError(Msg("Exchange-rate move must be between 0 and 100 %, got {pct}.", pct=pct))

    def at(rate: FxRate) -> CostBreakdown:
        return project_cost(offer, rate, hours_per_run, runs_per_month, months, dataset_gb, checkpoint_gb_per_run)

    return FxSensitivity(pct=pct, low=at(fx.shifted(-pct)), base=at(fx), high=at(fx.shifted(pct)))


def format_brl(amount: float) -> str:
    """Money as Brazilians write it: 1234.5 -> 'R$ 1.234,50', -1234.5 -> '-R$ 1.234,50'.

    Rounds half up to the centavo from the number's shortest decimal form (2.675 -> 'R$ 2,68').
    """
    if not math.isfinite(amount):
        raise PlanError(Msg("Cannot show {amount} as money.", amount=amount))
    cents = Decimal(repr(amount)).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
    sign = "-" if cents < 0 else ""
    whole, frac = f"{abs(cents):.2f}".split(".")
    grouped = f"{int(whole):,}".replace(",", ".")
    return f"{sign}R$ {grouped},{frac}"
