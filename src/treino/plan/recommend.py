"""Which server to rent: search offers x GPU count x training strategy for the cheapest run that fits, meets
the deadline and budget, and sits in an allowed country. SkyPilot's optimizer does the same for cloud
instances priced in USD; this one also knows monthly dedicated servers priced in BRL and data residency.

Pure: offers, GPUs and sites come in as arguments; nothing is read here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from treino.errors import PlanError
from treino.i18n import Joined, Msg
from treino.plan.calibration import MeasuredStep
from treino.plan.cost import HOURS_PER_MONTH, FxRate, Offer, fabric_brl, format_brl, hourly_brl, monthly_brl
from treino.plan.fabric import parse_fabric
from treino.plan.hardware import GpuSpec
from treino.plan.memory import TrainSetup, estimate_training_memory
from treino.plan.model import ModelSpec
from treino.plan.performance import estimate_time

# Tokens per optimizer step the search aims at (micro-batches are accumulated up to it): ~1M tokens is the
# order of published LLM fine-tuning and pre-training batches (Llama 2: 4M; torchtitan 8B: 64 x 8k = 0.5M).
TARGET_TOKENS_PER_STEP = 2**20
STRATEGIES = tuple((ckpt, mb) for ckpt in ("none", "selective", "full") for mb in (8, 4, 2, 1))


@dataclass(frozen=True)
class Candidate:
    offer: Offer
    gpu: GpuSpec
    country: str | None  # ISO-2 of the offer's site; None when the offer names no site


@dataclass(frozen=True)
class Choice:
    offer: str
    gpu: str
    gpus: int
    servers: int
    site: str | None
    country: str | None
    setup: str  # the strategy, as CLI flags (derived from train_setup)
    hours: float
    cost_brl: float
    peak_gib: float
    tokens_per_second: float
    example_price: bool
    price_source: str
    price_as_of: str
    train_setup: TrainSetup
    fabric: str = "none"  # the network joining the servers (treino.plan.fabric spec); "none" on one server
    fabric_cost_brl: float | None = 0.0  # its part of cost_brl; None: the offer gives no price (not in cost_brl)
    network: str = ""  # in words (a Msg): how the servers are joined and what that costs; "" on one server
    mfu: float = 0.0  # the MFU the time was estimated with
    mfu_source: str = ""  # a Msg: the prior, or "measured on DEVICE, date ..." (plan.calibration)


@dataclass(frozen=True)
class Rejection:
    offer: str
    reason: str
    kind: str  # "residency", "memory" (fits nowhere) or "limits" (misses the deadline or budget)


def flags(setup: TrainSetup) -> str:
    """A setup as the CLI flags that plan it."""
    zero = f" --zero {setup.zero}" if setup.zero else ""
    return (
        f"--gpus {setup.gpus}{zero} --micro-batch {setup.micro_batch} --grad-accum {setup.grad_accum} "
        f"--checkpointing {setup.checkpointing}"
    )


@dataclass(frozen=True)
class Recommendation:
    choices: tuple[Choice, ...]
    rejected: tuple[Rejection, ...]
    best_effort: Choice | None  # when nothing meets the deadline and budget: the best that fits
    miss: str  # how best_effort misses, in words


def _cost(offer: Offer, fx: FxRate | None, servers: int, hours: float) -> float:
    """Dedicated servers are rented by the whole month; cloud instances by the hour. The network between servers
    is added by `_network`."""
    if offer.kind == "dedicated":
        return monthly_brl(offer, fx) * servers * max(1, math.ceil(hours / HOURS_PER_MONTH))
    return hourly_brl(offer, fx) * servers * hours


def _network(offer: Offer, fx: FxRate | None, servers: int, hours: float) -> tuple[float | None, str]:
    """The fabric's cost for `servers` servers (None: the offer gives no price) and the sentence that says so."""
    if servers == 1:
        return 0.0, ""
    cost = fabric_brl(offer, fx, servers, hours)
    label = parse_fabric(offer.fabric).label
    if cost is None:
        return None, Msg(
            "{servers} servers joined by {fabric}; the offer gives no price for it, not included",
            servers=servers,
            fabric=label,
        )
    if cost == 0:
        return 0.0, Msg("{servers} servers joined by {fabric}, included in the price", servers=servers, fabric=label)
    return cost, Msg(
        "{servers} servers joined by {fabric}, {cost} of the cost", servers=servers, fabric=label, cost=format_brl(cost)
    )


def recommend(
    model: ModelSpec,
    candidates: list[Candidate],
    fx: FxRate | None,
    *,
    tokens: float,
    seq_len: int,
    precision: str = "bf16-mixed",
    deadline_hours: float | None = None,
    budget_brl: float | None = None,
    residency: str | None = None,
    max_gpus: int = 64,
    top: int = 5,
    calibration: Sequence[MeasuredStep] = (),
) -> Recommendation:
    """`calibration`: training steps measured by `treino bench --train-step`; an offer whose GPU has a close one
    is timed with its measured MFU (plan.calibration), the others with the prior."""
    if tokens <= 0:
        raise PlanError(Msg("--tokens must be positive."))
    if deadline_hours is not None and deadline_hours <= 0:
        raise PlanError(Msg("--deadline must be positive."))
    if budget_brl is not None and budget_brl <= 0:
        raise PlanError(Msg("--budget must be positive."))
    feasible: list[Choice] = []
    fitting: list[Choice] = []
    rejected: list[Rejection] = []
    for cand in candidates:
        offer = cand.offer
        if residency and cand.country != residency.upper():
            where = (
                Msg("is in {site} ({country})", site=offer.site, country=cand.country)
                if cand.country
                else Msg("has no site on record")
            )
            rejected.append(
                Rejection(
                    offer.name,
                    Msg("residency {country} required; the offer {where}", country=residency.upper(), where=where),
                    "residency",
                )
            )
            continue
        best = best_for_offer(
            model,
            cand,
            fx,
            tokens=tokens,
            seq_len=seq_len,
            precision=precision,
            max_gpus=max_gpus,
            deadline_hours=deadline_hours,
            budget_brl=budget_brl,
            calibration=calibration,
        )
        if isinstance(best, Rejection):
            rejected.append(best)
            continue
        choice, ok, why = best
        fitting.append(choice)
        if ok:
            feasible.append(choice)
        else:
            rejected.append(Rejection(offer.name, why, "limits"))
    feasible.sort(key=lambda c: (c.cost_brl, c.hours))
    best_effort, miss = None, ""
    if not feasible and fitting:
        best_effort = min(fitting, key=lambda c: (_miss_ratio(c, deadline_hours, budget_brl), c.cost_brl))
        miss = _miss_text(best_effort, deadline_hours, budget_brl)
    return Recommendation(tuple(feasible[:top]), tuple(rejected), best_effort, miss)


def _miss_ratio(c: Choice, deadline: float | None, budget: float | None) -> float:
    return max(c.hours / deadline if deadline else 0.0, c.cost_brl / budget if budget else 0.0)


def _miss_text(c: Choice, deadline: float | None, budget: float | None) -> str:
    parts = []
    if deadline and c.hours > deadline:
        parts.append(
            Msg(
                "takes {hours:,.1f} h, {late:,.1f} h past the {deadline:,.0f} h deadline",
                hours=c.hours,
                late=c.hours - deadline,
                deadline=deadline,
            )
        )
    if budget and c.cost_brl > budget:
        parts.append(
            Msg(
                "costs {cost}, {over} over the budget",
                cost=format_brl(c.cost_brl),
                over=format_brl(c.cost_brl - budget),
            )
        )
    return Joined("; ", parts)  # Msg and Joined (treino.i18n): the CLI shows them in the user's language


def best_for_offer(
    model: ModelSpec,
    cand: Candidate,
    fx: FxRate | None,
    *,
    tokens: float,
    seq_len: int,
    precision: str,
    max_gpus: int,
    deadline_hours: float | None,
    budget_brl: float | None,
    calibration: Sequence[MeasuredStep] = (),
) -> tuple[Choice, bool, str] | Rejection:
    """The cheapest (then fastest) configuration of one offer; whether it meets the limits, and why not."""
    offer, gpu = cand.offer, cand.gpu
    interconnect = offer.interconnect or gpu.interconnect
    fabric = parse_fabric(offer.fabric)
    best: tuple[float, float, Choice] | None = None
    leanest_gib = math.inf
    servers = 1
    # Several servers only over a network the offer names; without one it is one server.
    while servers * offer.gpus <= max(max_gpus, offer.gpus) and (servers == 1 or fabric.kind != "none"):
        gpus = servers * offer.gpus
        for ckpt, micro_batch in STRATEGIES:
            grad_accum = max(1, math.ceil(TARGET_TOKENS_PER_STEP / (micro_batch * seq_len * gpus)))
            setup = TrainSetup(
                micro_batch=micro_batch,
                seq_len=seq_len,
                grad_accum=grad_accum,
                precision=precision,
                checkpointing=ckpt,
                gpus=gpus,
                zero=3 if gpus > 1 or precision == "bf16-fsdp" else 0,  # bf16-fsdp: FSDP2 even on one GPU
            )
            memory = estimate_training_memory(model, setup)
            leanest_gib = min(leanest_gib, memory.peak_bytes / 2**30)
            if memory.peak_bytes > gpu.memory_bytes:
                continue
            timing = estimate_time(
                model,
                gpu,
                setup,
                tokens=tokens,
                interconnect=interconnect,
                gpus_per_server=offer.gpus,
                fabric=fabric,
                nvlink_domain=offer.nvlink_domain,
                calibration=calibration,
            )
            hours = timing.total_seconds / 3600
            fabric_cost, network = _network(offer, fx, servers, hours)
            cost = _cost(offer, fx, servers, hours) + (fabric_cost or 0.0)
            choice = Choice(
                offer=offer.name,
                gpu=gpu.name,
                gpus=gpus,
                servers=servers,
                site=offer.site,
                country=cand.country,
                setup=flags(setup),
                hours=hours,
                cost_brl=cost,
                peak_gib=memory.peak_bytes / 2**30,
                tokens_per_second=timing.tokens_per_second,
                example_price=offer.example,
                price_source=offer.source,
                price_as_of=offer.as_of,
                train_setup=setup,
                fabric=offer.fabric if servers > 1 else "none",
                fabric_cost_brl=fabric_cost,
                network=network,
                mfu=timing.mfu,
                mfu_source=timing.mfu_source,
            )
            meets = (deadline_hours is None or hours <= deadline_hours) and (budget_brl is None or cost <= budget_brl)
            # prefer configurations that meet the limits, then the cheapest, then the fastest
            key = (0.0 if meets else 1.0, cost, hours)
            if best is None or key < (best[0], best[1], best[2].hours):
                best = (key[0], cost, choice)
            break  # the first strategy that fits at this size is the fastest of this size's strategies
        servers *= 2
    if best is None:
        reason: str = Msg(
            "does not fit: the leanest strategy needs {need:,.1f} GiB per GPU, the {gpu} has {have:,.1f}",
            need=leanest_gib,
            gpu=gpu.display_name,
            have=gpu.memory_bytes / 2**30,
        )
        if fabric.kind == "none" and offer.gpus < max_gpus:
            reason = Joined("; ", [reason, Msg("one server only: the offer names no network between servers")])
        return Rejection(offer.name, reason, "memory")
    _, _, choice = best
    meets = best[0] == 0.0
    if meets:
        return choice, True, ""
    why = _miss_text(choice, deadline_hours, budget_brl)
    if fabric.kind == "none" and offer.gpus < max_gpus:
        why = Joined("; ", [why, Msg("one server only: the offer names no network between servers")])
    return choice, False, why
