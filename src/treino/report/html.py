"""`treino recommend --html FILE`: one self-contained HTML page with four figures and where their numbers
come from. Figures are base64 PNGs and the CSS is inline, so the page opens offline and fetches nothing.

    1. memory per GPU by component, against each GPU's memory  (plan.estimate_training_memory)
    2. step time and scaling efficiency vs GPU count, NVLink vs PCIe  (plan.performance.scale)
    3. cumulative cost over 1-12 months, dedicated vs cloud  (plan.cost.project_cost)
    4. time vs cost of every offer that fits  (plan.recommend.recommend)

No planning happens here: offers rejected by the limits are priced by calling `recommend` again without
those limits, so their points are the numbers `recommend` itself would give.
"""

from __future__ import annotations

import base64
import html
import io
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treino.errors import PlanError
from treino.i18n import Msg
from treino.plan.cost import FxRate, Offer, format_brl, project_cost
from treino.plan.hardware import GpuSpec
from treino.plan.memory import TrainSetup, estimate_training_memory
from treino.plan.model import ModelSpec
from treino.plan.performance import scale
from treino.plan.recommend import Candidate, Choice, Recommendation, recommend

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SCALE_GPU_COUNTS = [1, 2, 4, 8, 16, 32, 64]  # GPUs in figure 2 (weak scaling, powers of two up to 64)
COST_MONTHS = 12  # months in figure 3
FIGURE_DPI = 110  # PNG resolution; 8 in x 110 dpi = 880 px, sharp in a 960 px column
FIGURE_WIDTH_IN = 8.0
# Okabe-Ito colour-blind-safe palette (Okabe & Ito 2008, https://jfly.uni-koeln.de/color/)
COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
GIB = 2**30

_CSS = """
body { font-family: system-ui, sans-serif; max-width: 960px; margin: 2em auto; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; font-size: 0.9em; }
td, th { border-bottom: 1px solid #ddd; padding: 0.3em 0.6em; text-align: left; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
figure { margin: 1.5em 0; } figure img { max-width: 100%; }
figcaption { font-size: 0.85em; color: #444; margin-top: 0.4em; }
.note { font-size: 0.85em; color: #666; }
code { font-size: 0.9em; }
"""


@dataclass(frozen=True)
class _Figure:
    title: str
    png: bytes
    caption: str  # HTML, already escaped


def _esc(text: object) -> str:
    return html.escape(str(text))


def _png(fig: Figure) -> bytes:
    import matplotlib.pyplot as plt

    buf = io.BytesIO()
    # metadata Software=None: no matplotlib version string, so the same plan gives the same bytes
    fig.savefig(buf, format="png", dpi=FIGURE_DPI, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return buf.getvalue()


def _brl_axis(axis: Any) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda value, _pos: format_brl(float(value)).removesuffix(",00")))


def _price_note(offers: list[Offer], fx: FxRate | None, *, brief: bool = False) -> str:
    """'Prices: <offer> from <source> (as of <date>); ... BRL/USD <rate> on <date> (<source>).' With `brief`,
    only the dates, pointing to the page's table of price sources."""
    seen: dict[str, Offer] = {o.name: o for o in offers}
    dates = sorted({o.as_of for o in seen.values()})
    parts = (
        [
            f"{len(seen)} offers priced as of {_esc(dates[0])} to {_esc(dates[-1])} (each offer's source in "
            "the table of price sources below)"
        ]
        if brief and seen
        else [
            f"<code>{_esc(o.name)}</code> from {_esc(o.source)} (as of {_esc(o.as_of)})"
            + (", an illustrative example price, not a quote" if o.example else "")
            for o in seen.values()
        ]
    )
    text = "Prices: " + "; ".join(parts) + "."
    if any(o.currency == "USD" for o in seen.values()) and fx is not None:
        text += f" USD converted at {fx.brl_per_usd:.4f} BRL/USD on {_esc(fx.date)} ({_esc(fx.source)})."
    return text


def _memory_figure(
    model: ModelSpec, choices: list[Choice], gpus: dict[str, GpuSpec], seq_len: int, precision: str
) -> _Figure:
    import matplotlib.pyplot as plt

    parts = [
        ("weights", "weights_bytes"),
        ("gradients", "gradients_bytes"),
        ("optimizer", "optimizer_bytes"),
        ("activations", "activations_bytes"),
        ("logits", "logits_bytes"),
        ("temporaries", "temporary_bytes"),
        ("overhead", "overhead_bytes"),
    ]
    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 4.2))
    labels = []
    for i, choice in enumerate(choices):
        memory = estimate_training_memory(model, choice.train_setup)
        bottom = 0.0
        for j, (name, attr) in enumerate(parts):
            gib = getattr(memory, attr) / GIB
            ax.bar(i, gib, bottom=bottom, color=COLOURS[j], label=name if i == 0 else None, width=0.6)
            bottom += gib
        capacity = gpus[choice.gpu].memory_bytes / GIB
        # One legend entry for all the capacity lines: matplotlib leaves labels that start with "_" out of it.
        label = "GPU memory" if i == 0 else "_nolegend_"
        ax.hlines(capacity, i - 0.4, i + 0.4, colors="#000", linestyles="--", label=label)
        ax.text(i, capacity, f"{capacity:,.0f} GiB", ha="center", va="bottom", fontsize=8)
        labels.append(f"{'top: ' if i == 0 else ''}{choice.gpus}× {choice.gpu}\n{choice.offer}")
    ax.set_xticks(range(len(choices)), labels, fontsize=7, rotation=12, ha="right")
    ax.set_ylabel("GiB per GPU")
    ax.set_title(f"Memory per GPU at the peak ({model.name}, seq {seq_len}, {precision})")
    ax.legend(fontsize=8, ncols=4, loc="upper center", bbox_to_anchor=(0.5, -0.22))
    fig.tight_layout()
    sources = sorted({(gpus[c.gpu].display_name, gpus[c.gpu].source, gpus[c.gpu].as_of) for c in choices})
    caption = (
        "Bytes per GPU (identical on every GPU of a configuration: ZeRO-3 shards evenly) from "
        "<code>treino.plan.estimate_training_memory</code> (analytic) for each recommended configuration's "
        f"strategy; the top choice is <code>{_esc(choices[0].setup)}</code>. GPU memory from the GPU catalog: "
        + "; ".join(f"{_esc(n)}: {_esc(s)} (as of {_esc(a)})" for n, s, a in sources)
        + "."
    )
    return _Figure("Memory breakdown", _png(fig), caption)


def _scale_figure(model: ModelSpec, gpu: GpuSpec, setup: TrainSetup) -> _Figure:
    import matplotlib.pyplot as plt

    points = scale(model, gpu, setup, SCALE_GPU_COUNTS)
    fig, (left, right) = plt.subplots(1, 2, figsize=(FIGURE_WIDTH_IN, 3.6))
    for k, link in enumerate(("nvlink", "pcie")):
        rows = [p for p in points if p.interconnect == link]
        if not rows:
            continue
        name = "NVLink" if link == "nvlink" else "PCIe"
        xs = [p.gpus for p in rows]
        left.plot(xs, [p.step_seconds for p in rows], marker="o", color=COLOURS[k], label=name)
        right.plot(xs, [100 * p.efficiency for p in rows], marker="o", color=COLOURS[k], label=name)
    for ax in (left, right):
        ax.set_xscale("log", base=2)
        ax.set_xticks(SCALE_GPU_COUNTS, [str(n) for n in SCALE_GPU_COUNTS])
        ax.set_xlabel(f"{gpu.display_name} GPUs")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    left.ticklabel_format(axis="y", useOffset=False)
    left.set_ylim(0, 1.15 * max(p.step_seconds for p in points))
    left.set_ylabel("step time, s")
    left.set_title("Step time (same micro-batch per GPU)", fontsize=10)
    right.set_ylabel("scaling efficiency, %")
    right.set_ylim(0, 105)
    right.set_title("Tokens/s over N × one GPU's tokens/s", fontsize=10)
    fig.tight_layout()
    caption = (
        "Weak scaling of the top choice's strategy "
        f"(<code>--micro-batch {setup.micro_batch} --grad-accum {setup.grad_accum} --checkpointing "
        f"{_esc(setup.checkpointing)}</code>, ZeRO-3 beyond one GPU) from <code>treino.plan.performance.scale"
        "</code>: compute at the MFU prior (docs/catalog.md) plus the ring all-reduce backward cannot hide; "
        f"8 GPUs to a server, servers joined beyond 8 by the planner's default fabric (8×400G InfiniBand NDR for "
        "NVLink servers, 2×100 GbE for PCIe ones: <code>treino plan scale --fabric</code> for another). "
        f"{_esc(gpu.display_name)} specs: "
        f"{_esc(gpu.source)} (as of {_esc(gpu.as_of)})."
        + (" It has no NVLink, so only PCIe is drawn." if gpu.gpu_link == "none" else "")
    )
    return _Figure("Step time and efficiency vs GPU count", _png(fig), caption)


def _cumulative_brl(offer: Offer, choice: Choice, fx: FxRate | None, runs_per_month: float) -> list[float]:
    """Total BRL after 1..COST_MONTHS months of `runs_per_month` runs, for all the choice's servers."""
    return [
        project_cost(offer, fx, choice.hours, runs_per_month, months).total_brl * choice.servers
        for months in range(1, COST_MONTHS + 1)
    ]


def _cost_figure(
    dedicated: tuple[Choice, Offer] | None,
    cloud: tuple[Choice, Offer] | None,
    cloud_note: str,
    fx: FxRate | None,
    runs_per_month: float,
) -> _Figure:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 3.8))
    months = list(range(1, COST_MONTHS + 1))
    shown: list[Offer] = []
    problems: list[str] = []
    for k, (kind, pair) in enumerate((("dedicated", dedicated), ("cloud", cloud))):
        if pair is None:
            problems.append(f"no {kind} offer fits this job")
            continue
        choice, offer = pair
        try:
            totals = _cumulative_brl(offer, choice, fx, runs_per_month)
        except PlanError as exc:  # e.g. the runs need more hours than a month holds
            problems.append(f"{_esc(offer.name)}: {_esc(exc)}")
            continue
        shown.append(offer)
        label = f"{kind}: {choice.servers}× {offer.name} ({choice.hours:,.1f} h a run)"
        ax.plot(months, totals, marker="o", color=COLOURS[k], label=label)
        ax.annotate(
            format_brl(float(totals[-1])),
            (months[-1], totals[-1]),
            fontsize=8,
            xytext=(4, 0),
            textcoords="offset points",
            va="center",
        )
    ax.set_xticks(months)
    ax.set_xlim(0.5, COST_MONTHS + 2)
    ax.set_xlabel("months")
    ax.set_ylabel("cumulative cost (BRL)")
    _brl_axis(ax.yaxis)
    ax.set_title(f"Cost over months, running the job {runs_per_month:g}× a month", fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    caption = (
        "Cumulative cost from <code>treino.plan.cost.project_cost</code>: a dedicated server is paid by the "
        "month (730 h) whatever the use; a cloud instance by the hour the runs use; no data transfer counted. "
        "Each line uses its own run time for this job. "
        + (f"{cloud_note} " if cloud_note else "")
        + _price_note(shown, fx)
        + (" Not shown: " + "; ".join(problems) + "." if problems else "")
    )
    return _Figure("Cost over months: dedicated vs cloud", _png(fig), caption)


def _tradeoff_figure(
    groups: list[tuple[str, list[Choice]]],
    offers: dict[str, Offer],
    fx: FxRate | None,
    deadline_hours: float | None,
    budget_brl: float | None,
) -> _Figure:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(FIGURE_WIDTH_IN, 4.6))
    markers = ["o", "s", "^"]
    shown: list[Offer] = []
    for k, (label, choices) in enumerate(groups):
        if not choices:
            continue
        ax.scatter(
            [c.hours for c in choices],
            [c.cost_brl for c in choices],
            s=40,
            marker=markers[k % 3],
            color=COLOURS[k],
            label=f"{label} ({len(choices)})",
            alpha=0.85,
        )
        for c in choices[:4]:  # name the first few of each group; more would overlap
            ax.annotate(c.offer, (c.hours, c.cost_brl), fontsize=6, xytext=(4, 3), textcoords="offset points")
        shown.extend(offers[c.offer] for c in choices)
    if deadline_hours:
        ax.axvline(deadline_hours, color="#555", linestyle="--", linewidth=1)
        ax.text(deadline_hours, ax.get_ylim()[1], f" deadline {deadline_hours:,.0f} h", fontsize=8, va="top")
    if budget_brl:
        ax.axhline(budget_brl, color="#555", linestyle=":", linewidth=1)
        ax.text(ax.get_xlim()[1], budget_brl, f"budget {format_brl(budget_brl)} ", fontsize=8, ha="right", va="bottom")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("time to train, hours (log)")
    ax.set_ylabel("cost of the run (BRL, log)")
    _brl_axis(ax.yaxis)
    from matplotlib.ticker import NullFormatter

    ax.yaxis.set_minor_formatter(NullFormatter())
    ax.grid(alpha=0.3, which="both")
    ax.legend(fontsize=8, loc="best")
    ax.set_title("Time vs cost: each offer's cheapest configuration that fits", fontsize=10)
    fig.tight_layout()
    caption = (
        "Each point is one offer's cheapest configuration that fits in memory, as <code>treino.plan.recommend"
        "</code> chooses it; offers rejected by the deadline, budget or residency were priced by the same "
        "search without those limits. Offers that do not fit in memory at any size are not shown. Dedicated "
        "servers cost whole months. " + _price_note(shown, fx, brief=True)
    )
    return _Figure("Time vs budget", _png(fig), caption)


def _top_cloud(
    model: ModelSpec,
    recommendation: Recommendation,
    candidates: list[Candidate],
    fx: FxRate | None,
    *,
    tokens: float,
    seq_len: int,
    precision: str,
    deadline_hours: float | None,
    budget_brl: float | None,
) -> tuple[Choice | None, str]:
    """The recommended cloud choice; else the cloud offers priced for the same job without residency."""
    kinds = {c.offer.name: c.offer.kind for c in candidates}
    for choice in recommendation.choices:
        if kinds[choice.offer] == "cloud":
            return choice, ""
    cloud = [c for c in candidates if c.offer.kind == "cloud"]
    if not cloud:
        return None, ""
    priced = recommend(
        model,
        cloud,
        fx,
        tokens=tokens,
        seq_len=seq_len,
        precision=precision,
        deadline_hours=deadline_hours,
        budget_brl=budget_brl,
        top=1,
    )
    best = priced.choices[0] if priced.choices else priced.best_effort
    if best is None:
        return None, ""
    note = "The cloud line is the cheapest cloud offer for this job ignoring the residency limit" + (
        "" if priced.choices else f" and missing the limits ({_esc(priced.miss)})"
    )
    return best, note + ": no cloud offer was recommended."


REPORT_STEPS = 6  # the steps `write_recommendation_report` tells `on_step` of


def write_recommendation_report(
    path: str | Path,
    model_spec: ModelSpec,
    recommendation: Recommendation,
    candidates: list[Candidate],
    fx: FxRate | None,
    tokens: float,
    seq_len: int,
    *,
    precision: str = "bf16-mixed",
    deadline_hours: float | None = None,
    budget_brl: float | None = None,
    residency: str | None = None,
    runs_per_month: float = 1,
    on_step: Callable[[str], None] = lambda step: None,
) -> Path:
    """Write `recommendation` as one self-contained HTML page at `path` and return the path.

    `candidates`, `fx` and the job (`tokens`, `seq_len`, `precision`, limits) must be the ones
    `recommend` was called with: the figures recompute from them. `on_step(name)` is called as each of its
    REPORT_STEPS steps starts (the CLI's progress bar).
    """
    on_step("loading matplotlib")
    import matplotlib

    matplotlib.use("Agg")  # no display; must precede pyplot's first import

    top = recommendation.choices[0] if recommendation.choices else recommendation.best_effort
    if top is None:
        raise PlanError(
            Msg(
                "No offer fits this job, so there is nothing to plot. To fix: add offers with more GPU memory "
                "(--offers FILE), or raise --max-gpus."
            )
        )
    by_name = {c.offer.name: c for c in candidates}
    offers = {name: c.offer for name, c in by_name.items()}
    gpus = {c.gpu.name: c.gpu for c in candidates}
    shown_choices = list(recommendation.choices) or [top]
    job = {"tokens": tokens, "seq_len": seq_len, "precision": precision}

    # Offers rejected for the limits (not for memory) priced without them: same search, no new logic.
    on_step("pricing the offers outside the limits")
    rejected = {r.offer: r.kind for r in recommendation.rejected}
    retry = [by_name[name] for name, kind in rejected.items() if kind != "memory"]
    repriced = (
        recommend(model_spec, retry, fx, tokens=tokens, seq_len=seq_len, precision=precision, top=len(retry)).choices
        if retry
        else ()
    )
    outside = [c for c in repriced if rejected[c.offer] == "residency"]
    missing = [c for c in repriced if rejected[c.offer] != "residency"]

    dedicated = next((c for c in shown_choices if offers[c.offer].kind == "dedicated"), None)
    cloud, cloud_note = _top_cloud(
        model_spec,
        recommendation,
        candidates,
        fx,
        tokens=tokens,
        seq_len=seq_len,
        precision=precision,
        deadline_hours=deadline_hours,
        budget_brl=budget_brl,
    )

    top_setup = replace(top.train_setup, gpus=1, zero=0)
    on_step("plotting memory per GPU")
    figures = [_memory_figure(model_spec, shown_choices, gpus, seq_len, precision)]
    on_step("plotting scaling")
    figures.append(_scale_figure(model_spec, gpus[top.gpu], top_setup))
    on_step("plotting cost")
    figures.append(
        _cost_figure(
            (dedicated, offers[dedicated.offer]) if dedicated else None,
            (cloud, offers[cloud.offer]) if cloud else None,
            cloud_note,
            fx,
            runs_per_month,
        )
    )
    on_step("plotting cost against time")
    figures.append(
        _tradeoff_figure(
            [
                ("meets the limits", list(recommendation.choices)),
                ("misses deadline or budget", missing),
                ("outside the residency", outside),
            ],
            offers,
            fx,
            deadline_hours,
            budget_brl,
        )
    )
    plotted = [*shown_choices, *missing, *outside, *(c for c in (dedicated, cloud) if c)]
    sourced = sorted({c.offer: offers[c.offer] for c in plotted}.values(), key=lambda o: o.name)
    out = Path(path)
    out.write_text(
        _page(model_spec, recommendation, top, job, deadline_hours, budget_brl, residency, figures, sourced, fx),
        encoding="utf-8",
    )
    return out


def _page(
    model: ModelSpec,
    rec: Recommendation,
    top: Choice,
    job: dict[str, Any],
    deadline_hours: float | None,
    budget_brl: float | None,
    residency: str | None,
    figures: list[_Figure],
    sourced: list[Offer],
    fx: FxRate | None,
) -> str:
    limits = [f"{job['tokens']:.3g} tokens", f"seq {job['seq_len']}", str(job["precision"])]
    if deadline_hours:
        limits.append(f"deadline {deadline_hours:,.0f} h")
    if budget_brl:
        limits.append(f"budget {format_brl(budget_brl)}")
    if residency:
        limits.append(f"data resident in {residency.upper()}")
    rows = "".join(
        f"<tr><td><code>{_esc(c.offer)}</code>{' *' if c.example_price else ''}</td><td>{c.gpus}× {_esc(c.gpu)}"
        f"</td><td>{_esc(c.site or '')} ({_esc(c.country or '?')})</td><td class=num>{c.hours:,.1f} h</td>"
        f"<td class=num>{_esc(format_brl(c.cost_brl))}</td><td><code>{_esc(c.setup)}</code></td></tr>"
        for c in (rec.choices or (top,))
    )
    heading = (
        "Cheapest configurations that fit and meet the limits"
        if rec.choices
        else (f"Nothing meets the limits; the closest: {_esc(rec.miss)}")
    )
    figs = "".join(
        f'<figure id="fig{i}"><h2>{i}. {_esc(f.title)}</h2>'
        f'<img alt="{_esc(f.title)}" src="data:image/png;base64,{base64.b64encode(f.png).decode("ascii")}">'
        f"<figcaption>Figure {i}. {f.caption}</figcaption></figure>"
        for i, f in enumerate(figures, start=1)
    )
    sources = "".join(
        f"<tr><td><code>{_esc(o.name)}</code>{' *' if o.example else ''}</td><td>{_esc(o.kind)}</td>"
        f"<td class=num>{o.price:,.2f} {_esc(o.currency)}/{_esc(o.period)}</td><td>{_esc(o.as_of)}</td>"
        f"<td>{_esc(o.source)}</td></tr>"
        for o in sourced
    )
    fx_line = f"BRL/USD {fx.brl_per_usd:.4f} on {_esc(fx.date)}: {_esc(fx.source)}" if fx else "no BRL/USD rate"
    examples = any(c.example_price for c in rec.choices)
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>treino recommend: {_esc(model.name)}</title><style>{_CSS}</style></head><body>"
        f"<h1>Which server: {_esc(model.name)}</h1><p>{_esc(', '.join(limits))}.</p>"
        f"<h2>{heading}</h2><table><tr><th>offer</th><th>GPUs</th><th>site</th><th>time</th><th>cost</th>"
        f"<th>strategy</th></tr>{rows}</table>"
        + ("<p class=note>* an illustrative example price, not a quote.</p>" if examples else "")
        + f"<p class=note>{len(rec.rejected)} offers rejected; see <code>treino recommend</code>.</p>"
        + figs
        + "<h2>Price sources</h2><table><tr><th>offer</th><th>kind</th><th>price</th><th>as of</th><th>source</th>"
        f"</tr>{sources}</table><p class=note>Exchange rate: {fx_line}.</p>"
        + "<p class=note>Generated by <code>treino recommend --html</code>; self-contained, fetches nothing.</p>"
        "</body></html>\n"
    )
