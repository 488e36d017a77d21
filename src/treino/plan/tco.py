"""Dedicated server against cloud instances for one job run N times a month over M months: total cost in BRL,
the break-even utilisation, and what a move of the BRL/USD rate does.

The seed article's claims this lets users check: cloud bills in dollars carry exchange-rate risk, and
egress fees add 20-40 % (hardware-and-prices.md §6.2 lists the per-GB prices; the share depends on how much
leaves). Dedicated servers are paid by the month whatever the use (plan/cost.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from treino.errors import PlanError
from treino.i18n import Msg
from treino.plan.cost import HOURS_PER_MONTH, CostBreakdown, FxRate, fabric_brl, project_cost
from treino.plan.model import ModelSpec
from treino.plan.recommend import Candidate, Choice, Rejection, best_for_offer


@dataclass(frozen=True)
class OfferCost:
    choice: Choice  # the configuration the job runs in on this offer
    servers: int
    cost: CostBreakdown  # for one server; totals below multiply by servers
    total_brl: float
    per_month_brl: float
    egress_share: float  # egress / total
    fabric_brl: float | None = 0.0  # the network between the servers, in total; None: the offer gives no price


@dataclass(frozen=True)
class Comparison:
    dedicated: OfferCost
    cloud: OfferCost
    cheaper: str  # "dedicated" or "cloud"
    break_even_runs_per_month: float  # runs a month above which the dedicated server is cheaper
    fx_move_pct: float
    cloud_total_low_brl: float  # the rate moved down by fx_move_pct (the real strengthens)
    cloud_total_high_brl: float


def offer_cost(
    model: ModelSpec,
    cand: Candidate,
    fx: FxRate | None,
    *,
    tokens: float,
    seq_len: int,
    precision: str,
    runs_per_month: float,
    months: int,
    dataset_gb: float,
    checkpoint_gb: float,
    max_gpus: int = 64,
) -> OfferCost:
    found = best_for_offer(
        model,
        cand,
        fx,
        tokens=tokens,
        seq_len=seq_len,
        precision=precision,
        max_gpus=max_gpus,
        deadline_hours=None,
        budget_brl=None,
    )
    if isinstance(found, Rejection):
        raise PlanError(Msg("{offer}: {reason}.", offer=found.offer, reason=found.reason))  # the views translate it
    choice = found[0]
    servers = choice.servers
    hours = choice.hours
    if cand.offer.kind == "dedicated" and hours * runs_per_month > HOURS_PER_MONTH:
        raise PlanError(
            Msg(
                "{runs:g} runs of {hours:,.1f} h do not fit in a month on {offer}. To fix: fewer runs a month, or more "
                "servers.",
                runs=runs_per_month,
                hours=hours,
                offer=cand.offer.name,
            )
        )
    one = project_cost(cand.offer, fx, hours, runs_per_month, months, dataset_gb, checkpoint_gb)
    # the network between servers: by the month on a dedicated server (the runs fit in one), by the hour in a cloud
    used = HOURS_PER_MONTH if cand.offer.kind == "dedicated" else hours * runs_per_month
    network = fabric_brl(cand.offer, fx, servers, used)
    network = None if network is None else network * months
    total = one.compute_brl * servers + one.egress_brl + (network or 0.0)
    return OfferCost(choice, servers, one, total, total / months, one.egress_brl / total if total else 0.0, network)


def compare(
    model: ModelSpec,
    dedicated: Candidate,
    cloud: Candidate,
    fx: FxRate,
    *,
    tokens: float,
    seq_len: int,
    precision: str = "bf16-mixed",
    runs_per_month: float = 1,
    months: int = 12,
    dataset_gb: float = 0.0,
    checkpoint_gb: float = 0.0,
    fx_move_pct: float = 20.0,
) -> Comparison:
    if dedicated.offer.kind != "dedicated" or cloud.offer.kind != "cloud":
        raise PlanError(Msg("Compare a dedicated offer (--dedicated) with a cloud one (--cloud)."))
    kwargs = {
        "tokens": tokens,
        "seq_len": seq_len,
        "precision": precision,
        "runs_per_month": runs_per_month,
        "months": months,
        "dataset_gb": dataset_gb,
        "checkpoint_gb": checkpoint_gb,
    }
    ded = offer_cost(model, dedicated, fx, **kwargs)  # type: ignore[arg-type]
    cl = offer_cost(model, cloud, fx, **kwargs)  # type: ignore[arg-type]
    # Cloud cost grows with runs; the dedicated server's is flat while the runs fit in its month.
    cloud_per_run = cl.per_month_brl / runs_per_month if runs_per_month else math.inf
    break_even = ded.per_month_brl / cloud_per_run if cloud_per_run else math.inf
    low = offer_cost(model, cloud, fx.shifted(-fx_move_pct), **kwargs).total_brl  # type: ignore[arg-type]
    high = offer_cost(model, cloud, fx.shifted(fx_move_pct), **kwargs).total_brl  # type: ignore[arg-type]
    return Comparison(
        ded, cl, "dedicated" if ded.total_brl <= cl.total_brl else "cloud", break_even, fx_move_pct, low, high
    )
