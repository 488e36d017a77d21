"""Rich rendering of plans. No logic: every number comes from treino.plan. Text and numbers in the CLI's language
(treino.i18n: `tr` for texts and Msg templates, whose number fields follow the language)."""

from __future__ import annotations

import math
import re
import textwrap

from rich import box
from rich.console import Console, Group
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from treino.i18n import N_, Joined, Msg, current, tr
from treino.plan import InferenceEstimate, TrainPlan
from treino.plan.hardware import GpuSpec
from treino.plan.model import ModelSpec
from treino.plan.performance import ScalePoint, TimeEstimate, link_busbw_gb_s
from treino.plan.pipeline import PipelineEstimate
from treino.plan.recommend import Recommendation

GIB = 2**30
BAR_WIDTH = 60
STRATEGY_WIDTH_MIN = 20  # characters: `recommend`'s flags under each offer wrap at the longer of this and its name
_PARTS = (  # label, MemoryEstimate field, colour
    (N_("weights"), "weights_bytes", "blue"),
    (N_("gradients"), "gradients_bytes", "magenta"),
    (N_("optimizer"), "optimizer_bytes", "yellow"),
    (N_("activations"), "activations_bytes", "green"),
    (N_("logits+loss"), "logits_bytes", "cyan"),
    (N_("temporaries"), "temporary_bytes", "white"),
    (N_("overhead"), "overhead_bytes", "red"),
)


def identity_column(table: Table, header: str, **kwargs: object) -> None:
    """A column of names that identify something (an offer, a job, a site): never cut to an ellipsis. Rich
    narrows wrappable columns first; a row too wide even so folds the name onto a second line, whole."""
    table.add_column(header, no_wrap=True, overflow="fold", **kwargs)  # type: ignore[arg-type]


def gib(nbytes: float) -> str:
    return tr("{gib:,.2f} GiB", gib=nbytes / GIB)


def count(n: int) -> str:
    return tr("{n:,.2f} B", n=n / 1e9) if n >= 1e9 else tr("{n:,.1f} M", n=n / 1e6)


def _bar(segments: list[tuple[str, float, str]], capacity: float) -> Text:
    """One line of blocks: each part's share of the GPU's memory; '!' marks what does not fit."""
    total = sum(v for _, v, _ in segments)
    scale = BAR_WIDTH / max(capacity, total)
    text = Text("│")
    used = 0
    for _label, value, colour in segments:
        cells = round(value * scale)
        text.append("█" * cells, style=colour)
        used += cells
    cap_cell = round(capacity * scale)
    if used < cap_cell:
        text.append("░" * (cap_cell - used), style="dim")
    text.append("│")
    if total > capacity:
        text.append(" " + tr("{size} over", size=gib(total - capacity)), style="bold red")
    return text


def train_plan(plan: TrainPlan) -> Group:
    m, s, gpu = plan.memory, plan.setup, plan.gpu
    title = (
        tr(
            "{model}: {params} params ({trainable} trainable) · {precision} · {optimizer} · "
            "micro-batch {micro_batch} × {seq_len} tokens · {gpus}× {gpu}",
            model=plan.model.name,
            params=count(m.params),
            trainable=count(m.trainable_params),
            precision=s.precision,
            optimizer=s.optimizer,
            micro_batch=s.micro_batch,
            seq_len=s.seq_len,
            gpus=s.gpus,
            gpu=gpu.display_name,
        )
        + (f" · ZeRO-{s.zero}" if s.zero else "")
        + (f" · TP {s.tp}" if s.tp > 1 else "")
        + f" · {tr(plan.method)}"
    )
    table = Table(show_edge=False)
    table.add_column(tr("per GPU"))
    table.add_column(tr("memory"), justify="right")
    table.add_column(tr("share"), justify="right")
    for label, attr, colour in _PARTS:
        value = getattr(m, attr)
        table.add_row(
            Text("■ ", style=colour) + tr(label), gib(value), tr("{pct:.0f} %", pct=100 * value / m.peak_bytes)
        )
    table.add_row(
        tr("peak of live tensors"), gib(m.peak_tensor_bytes), tr("at {phase}", phase=Msg(m.peak_phase)), style="bold"
    )
    table.add_row(tr("peak"), gib(m.peak_bytes), "", style="bold")
    table.add_row(tr("{gpu} memory", gpu=gpu.display_name), gib(gpu.memory_bytes), "", style="dim")
    if m.cpu_offload_bytes:
        table.add_row(tr("offloaded to CPU RAM"), gib(m.cpu_offload_bytes), "")
    segments = [(label, float(getattr(m, attr)), colour) for label, attr, colour in _PARTS]
    bar = _bar(segments, gpu.memory_bytes)
    if plan.fits:
        verdict = Text(
            tr("FITS")
            + ": "
            + tr("{headroom} headroom on each {gpu}.", headroom=gib(plan.headroom_bytes), gpu=gpu.display_name),
            style="bold green",
        )
    else:
        verdict = Text(
            tr("DOES NOT FIT")
            + ": "
            + tr(
                "needs {need} per GPU, the {gpu} has {have}.",
                need=gib(m.peak_bytes),
                gpu=gpu.display_name,
                have=gib(gpu.memory_bytes),
            ),
            style="bold red",
        )
    parts: list[object] = [Text(title, style="bold")]
    if m.attention_kernel:  # the kernel PyTorch picks on this device (plan/kernels.py)
        parts.append(
            Text(tr("attention: {kernel} kernel on {device}", kernel=m.attention_kernel, device=m.device), style="dim")
        )
    parts += [table, Text(""), bar, verdict]
    advice = plan.advice()
    if advice:
        tips = Table(title=tr("What makes it fit, cheapest first"), title_justify="left", show_edge=False)
        tips.add_column(tr("change"))
        tips.add_column(tr("flags"), overflow="fold")  # a flag is never cut to an ellipsis
        tips.add_column(tr("peak"), justify="right", no_wrap=True)
        tips.add_column(tr("fits"))
        tips.add_column(tr("speed"), justify="right", no_wrap=True)
        for a in advice:
            speed = tr("{pct:+.0f} %", pct=(a.slowdown - 1) * 100) if a.slowdown != 1 else tr("same")
            change = Text(tr(a.change))
            caveats = [tr(c) for c in _parts(a.caveat) if c]
            if caveats:  # its caveats under the change they belong to
                change.append("\n" + "; ".join(caveats), style="dim")
            tips.add_row(change, a.flags, gib(a.peak_bytes), tr("yes") if a.fits else tr("no"), speed)
        parts += [Text(""), tips]
    for note in m.notes:
        parts.append(Text(tr(note), style="dim"))
    return Group(*parts)  # type: ignore[arg-type]


def _parts(caveats: str) -> tuple[str, ...]:
    """The caveats of an advice (a Joined of CHANGES' caveats, each one translatable by itself)."""
    return caveats.parts if isinstance(caveats, Joined) else (caveats,)


def duration(seconds: float) -> str:
    if seconds < 120:
        return tr("{n:,.1f} s", n=seconds)
    if seconds < 2 * 3600:
        return tr("{n:,.1f} min", n=seconds / 60)
    if seconds < 3 * 86400:
        return tr("{n:,.1f} h", n=seconds / 3600)
    return tr("{n:,.1f} days", n=seconds / 86400)


def time_line(t: TimeEstimate, interconnect: str) -> Text:
    text = Text(
        tr("Time")
        + ": "
        + tr(
            "{step_time} per step ({tokens} tokens), {rate} tokens/s, MFU {mfu} % ({source}), {bound}",
            step_time=duration(t.step_seconds),
            tokens=tr("{n:,}", n=t.tokens_per_step),
            rate=tr("{n:,.0f}", n=t.tokens_per_second),
            mfu=tr("{n:.0f}", n=100 * t.mfu),
            source=t.mfu_source,
            bound=Msg(f"{t.bound}-bound"),
        )
    )
    if t.comm_seconds:
        text.append(
            "; "
            + tr(
                "all-reduce over {link} {time}, {exposed} not hidden by backward",
                link=Msg(interconnect),
                time=duration(t.comm_seconds),
                exposed=duration(t.exposed_comm_seconds),
            )
        )
    if t.domains > 1:
        from treino.plan.fabric import parse_fabric

        fields = {"fabric": parse_fabric(t.fabric).label, "inter": duration(t.inter_comm_seconds)}
        cross = duration(t.cross_comm_seconds)
        text.append(
            " ("
            + (
                tr("{servers} servers joined by {fabric}: {inter} of it between servers", servers=t.servers, **fields)
                if t.domain_kind == "server"
                else tr(
                    "{domains} NVLink domains joined by PCIe: {cross} of it between domains",
                    domains=t.domains,
                    cross=cross,
                )
                if t.domains > t.servers == 1
                else tr(
                    "{domains} NVLink domains on {servers} servers: {cross} of it between the domains of a server, "
                    "over PCIe; {inter} between servers, over {fabric}",
                    domains=t.domains,
                    servers=t.servers,
                    cross=cross,
                    **fields,
                )
                if t.domains > t.servers
                else tr(
                    "{domains} NVLink domains on {servers} servers, joined by {fabric}: {inter} of it between domains",
                    domains=t.domains,
                    servers=t.servers,
                    **fields,
                )
            )
            + ")"
        )
    if t.total_seconds:
        text.append(
            ". " + tr("The run: {steps} steps, {time}.", steps=tr("{n:,}", n=t.steps), time=duration(t.total_seconds)),
            style="bold",
        )
    return text


def pipeline_line(p: PipelineEstimate) -> Group:
    ok = p.gpu_idle_fraction == 0
    need = p.needed_bytes_per_s
    rate = tr("{n:,.1f} MB/s", n=need / 1e6) if need >= 1e5 else tr("{n:,.1f} kB/s", n=need / 1e3)
    head = Text(
        tr(
            "Data: the GPUs consume {rate} ({samples:,.0f} {unit}/s); storage gives {storage:,.2f} GB/s",
            rate=rate,
            samples=p.needed_samples_per_s,
            unit=Msg(p.unit),
            storage=p.storage_bytes_per_s / 1e9,
        )
        + (tr(" from the page cache") if p.dataset_in_page_cache else "")
        + tr(
            ", {cores} worker cores {samples:,.0f} {unit}/s. ",
            cores=p.worker_cores,
            samples=p.cpu_samples_per_s,
            unit=Msg(p.unit),
        ),
        style="" if ok else "yellow",
    )
    head.append(
        tr("Kept fed.")
        if ok
        else tr(
            "GPUs idle {pct:.0f} % of the time ({bottleneck}).",
            pct=100 * p.gpu_idle_fraction,
            bottleneck=Msg(p.bottleneck),
        ),
        style="green" if ok else "bold red",
    )
    return Group(head, *(Text("  " + tr("fix: {text}", text=a), style="dim") for a in p.advice))


def _flag_lines(flags: str, width: int) -> list[str]:
    """'--gpus 16 --zero 3 --micro-batch 1' as lines of at most `width` characters, never splitting an option from
    its value (a pair longer than `width` gets a line of its own)."""
    pairs = re.findall(r"--\S+(?: (?!--)\S+)?|\S+", flags)
    lines: list[str] = []
    for pair in pairs:
        if lines and len(lines[-1]) + 1 + len(pair) <= width:
            lines[-1] += " " + pair
        else:
            lines.append(pair)
    return lines


def recommendation(r: Recommendation) -> Group:
    from treino.plan.cost import format_brl

    table = Table(
        title=tr("Cheapest configurations that fit and meet the limits"), title_justify="left", show_edge=False
    )
    shown = list(r.choices) or ([r.best_effort] if r.best_effort else [])
    # The offer column is as wide as its longest name, never cut; each choice's strategy (its flags, kept whole)
    # goes in the row below its name, wrapped to that width, so it stays with its row at any console width.
    width = max([len(c.offer) for c in shown] + [STRATEGY_WIDTH_MIN])
    identity_column(table, tr("offer"))
    for col in (N_("GPUs"), N_("site"), N_("time"), N_("cost")):
        table.add_column(tr(col), justify="right" if col in ("GPUs", "time", "cost") else "left", no_wrap=col == "cost")
    for c in shown:
        site = f"{c.site} ({c.country})" if c.site else "-"
        price = format_brl(c.cost_brl) + (" *" if c.example_price else "")
        table.add_row(Text(c.offer, style="bold"), f"{c.gpus}× {c.gpu}", site, duration(c.hours * 3600), price)
        under = _flag_lines(c.setup, width) + textwrap.wrap(tr(c.network), width)
        table.add_row(Text("\n".join(under), style="dim"), "", "", "", "", end_section=True)
    parts: list[object] = [table]
    if not r.choices:
        parts.insert(0, Text(tr("Nothing meets every limit. The closest:"), style="bold red"))
        parts.append(Text(tr("It {miss}.", miss=r.miss), style="red"))
    if any(c.example_price for c in shown):
        parts.append(
            Text(tr("* an illustrative example price, not a quote: add your own with --offers FILE"), style="dim")
        )
    if r.rejected:
        parts.append(Text(tr("Rejected ({n}):", n=len(r.rejected)), style="bold"))
        # each reason indented whole, its continuation lines too (a hanging indent under the heading)
        parts += [Padding(Text(f"{x.offer}: {tr(x.reason)}", style="dim"), (0, 0, 0, 2)) for x in r.rejected]
    return Group(*parts)  # type: ignore[arg-type]


def _link(link: str) -> str:
    return "NVLink" if link == "nvlink" else "PCIe"


def _three_levels(gpu: GpuSpec, gpus_per_server: int, nvlink_domain: int) -> str:
    """What carries each level of the all-reduce when NVLink domains are smaller than a server."""
    return tr(
        "Each level's link: NVLink inside each NVLink domain, PCIe Gen{gen} between the {k} domains of one server "
        "({pcie:,.0f} GB/s a GPU), the fabric between servers. Beyond one domain the all-reduce is a reduce-scatter "
        "inside each domain, an all-reduce between the domains of a server, one between servers and an all-gather "
        "inside each domain (or one ring through every GPU, when faster); 'PCIe' and 'fabric' are those levels' "
        "shares of its time.",
        gen=gpu.pcie_generation,
        k=math.ceil(gpus_per_server / nvlink_domain),
        pcie=link_busbw_gb_s(gpu, "pcie", gpus_per_server),
    )


def scale_table(
    model: ModelSpec,
    gpu: GpuSpec,
    points: list[ScalePoint],
    gpus_per_server: int = 8,
    max_gpus: int = 0,
    nvlink_domain: int | None = None,
) -> Group:
    """One table per link inside the servers (NVLink, PCIe), each with the fabric between servers (or between
    NVLink domains, when --nvlink-domain sets them apart from the servers) and what carries each level of the
    all-reduce; 80 columns wide."""
    from treino.plan.fabric import parse_fabric

    parts: list[Table | Text] = [
        Text(
            tr("{model} on {gpu}: weak scaling (same micro-batch per GPU)", model=model.name, gpu=gpu.display_name),
            style="bold",
        )
    ]
    for link in sorted({p.interconnect for p in points}, key=lambda link: link != "nvlink"):
        series = [p for p in points if p.interconnect == link]
        beyond = next((p for p in series if p.domains > 1), None)
        by_domain = link == "nvlink" and nvlink_domain is not None and nvlink_domain != gpus_per_server
        # NVLink domains smaller than a server: three levels, PCIe between the domains of one server.
        smaller = by_domain and nvlink_domain is not None and nvlink_domain < gpus_per_server
        title = (
            tr(
                "{link} inside each NVLink domain ({domain} GPUs; {n} GPUs a server)",
                link=_link(link),
                domain=nvlink_domain,
                n=gpus_per_server,
            )
            if by_domain
            else tr("{link} inside each server ({n} GPUs)", link=_link(link), n=gpus_per_server)
        )
        table = Table(title=title, title_justify="left", show_edge=False)
        columns = (N_("GPUs"), N_("servers"), N_("domains")) if by_domain else (N_("GPUs"), N_("servers"))
        shares = (N_("PCIe"), N_("fabric")) if smaller else (N_("fabric"),)
        for col in (*columns, N_("step"), N_("tokens/s"), N_("efficiency"), *shares):
            table.add_column(tr(col), justify="right")
        for p in series:
            style = "red" if p.efficiency < 0.9 else "green"
            comm = p.intra_comm_seconds + p.cross_comm_seconds + p.inter_comm_seconds
            share = f"{p.inter_comm_seconds / comm:.0%}" if p.inter_comm_seconds else "-"
            pcie = [f"{p.cross_comm_seconds / comm:.0%}" if p.cross_comm_seconds else "-"] if smaller else []
            table.add_row(
                str(p.gpus),
                str(p.servers),
                *([str(p.domains)] if by_domain else []),
                duration(p.step_seconds),
                f"{p.tokens_per_second:,.0f}",
                f"[{style}]{p.efficiency:.0%}[/]",
                *pcie,
                f"[bold]{share}[/]" if p.fabric_bound else share,
            )
        parts.append(table)
        crossing = next((p for p in series if p.inter_comm_seconds), None)
        if smaller and beyond is not None:
            parts.append(Text(_three_levels(gpu, gpus_per_server, nvlink_domain or 1), style="dim"))
            if crossing is not None:
                fabric = parse_fabric(crossing.fabric)
                parts.append(
                    Text(
                        tr(
                            "Between servers: {fabric} ({rate:,.0f} GB/s a server).",
                            fabric=fabric.label,
                            rate=fabric.server_gb_s,
                        ),
                        style="dim",
                    )
                )
        elif beyond is not None and crossing is not None:
            fabric = parse_fabric(crossing.fabric)
            between = {"fabric": fabric.label, "rate": fabric.server_gb_s, "link": _link(link)}
            parts.append(
                Text(
                    tr(
                        "Between NVLink domains: {fabric} ({rate:,.0f} GB/s a server). Beyond one domain the "
                        "all-reduce is a reduce-scatter inside each domain over {link}, an all-reduce between domains "
                        "over the fabric and an all-gather inside each domain (or one ring through every GPU, when "
                        "faster); 'fabric' is the fabric's share of its time.",
                        **between,
                    )
                    if by_domain
                    else tr(
                        "Between servers: {fabric} ({rate:,.0f} GB/s a server). Beyond one server the all-reduce is "
                        "a reduce-scatter inside each server over {link}, an all-reduce between servers over the "
                        "fabric and an all-gather inside each server (or one ring through every GPU, when faster); "
                        "'fabric' is the fabric's share of its time.",
                        **between,
                    ),
                    style="dim",
                )
            )
        if crossing is None and series and series[-1].gpus < max_gpus:
            parts.append(
                Text(
                    tr("No network between NVLink domains: one domain at most.")
                    if by_domain and not smaller
                    else tr("No network between servers: one server at most."),
                    style="dim",
                )
            )
        dominant = next((p for p in series if p.fabric_bound), None)
        if dominant is not None:
            inside = dominant.intra_comm_seconds + dominant.cross_comm_seconds
            times = {"inter": duration(dominant.inter_comm_seconds), "intra": duration(inside)}
            parts.append(
                Text(
                    tr(
                        "The link between NVLink domains dominates from {gpus} GPUs ({domains} domains): its part "
                        "of the all-reduce takes {inter}, the part inside domains {intra}.",
                        gpus=dominant.gpus,
                        domains=dominant.domains,
                        **times,
                    )
                    if by_domain and not smaller
                    else tr(
                        "The link between servers dominates from {gpus} GPUs ({servers} servers): its part of the "
                        "all-reduce takes {inter}, the part inside servers {intra}.",
                        gpus=dominant.gpus,
                        servers=dominant.servers,
                        **times,
                    ),
                    style="yellow",
                )
            )
        below = next((p for p in series if p.efficiency < 0.9), None)
        if below is None:
            parts.append(
                Text(
                    tr(
                        "{link}: efficiency stays at or above 90 % up to {gpus} GPUs.",
                        link=_link(link),
                        gpus=series[-1].gpus,
                    ),
                    style="green",
                )
            )
        else:
            parts.append(
                Text(
                    tr(
                        "{link}: efficiency falls below 90 % at {gpus} GPUs ({efficiency:.0%}): the gradient "
                        "all-reduce that backward cannot hide is {exposed:.0%} of each step.",
                        link=_link(link),
                        gpus=below.gpus,
                        efficiency=below.efficiency,
                        exposed=below.exposed_comm_fraction,
                    ),
                    style="red",
                )
            )
    return Group(*parts)


def infer_plan(model: ModelSpec, gpu: GpuSpec, est: InferenceEstimate, batch: int, context: int, weights: str) -> Panel:
    table = Table(show_edge=False)
    table.add_column(tr("per GPU"))
    table.add_column(tr("memory"), justify="right")
    table.add_row(tr("weights"), gib(est.weights_bytes))
    kv = tr(
        "KV cache ({batch} × {context:,} tokens, {kib_per_token:,.0f} KiB/token)",
        batch=batch,
        context=context,
        kib_per_token=est.kv_cache_bytes_per_token / 1024,
    )
    table.add_row(kv, gib(est.kv_cache_bytes))
    table.add_row(tr("activations"), gib(est.activations_bytes))
    table.add_row(tr("overhead"), gib(est.overhead_bytes))
    table.add_row(tr("peak"), gib(est.peak_bytes), style="bold")
    table.add_row(tr("{gpu} memory", gpu=gpu.display_name), gib(gpu.memory_bytes), style="dim")
    fits = est.peak_bytes <= gpu.memory_bytes
    verdict = Text(tr("FITS") if fits else tr("DOES NOT FIT"), style="bold green" if fits else "bold red")
    speed = Text(
        tr(
            "Decode ≤ {tokens_per_s:,.0f} tokens/s for the batch (≥ {ms:,.1f} ms per step at {hbm_gb_s:,.0f} GB/s)",
            tokens_per_s=est.decode_tokens_per_s_bound,
            ms=est.decode_ms_per_token_bound,
            hbm_gb_s=gpu.hbm_bandwidth_gb_s,
        )
    )
    title = tr("{model} inference, {weights} weights on {gpu}", model=model.name, weights=weights, gpu=gpu.display_name)
    return Panel(Group(table, verdict, speed), title=title)


def gpus_table(gpus: list[GpuSpec]) -> Table:
    """The GPU catalog at 80 columns: each name (what --gpu takes) whole; under each link between GPUs its speed and
    the PCIe generation. The GPUs' own names, sources and dates: --json."""
    table = Table(
        title=tr("GPU catalog (dense TFLOP/s; source and date per row: treino gpus --json)"),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    identity_column(table, tr("name"))
    for col in (N_("memory"), N_("HBM GB/s"), N_("bf16 / fp8 TF")):
        table.add_column(tr(col), justify="right", overflow="fold")
    table.add_column(tr("GPU link, PCIe"), overflow="fold", min_width=14)
    table.add_column(tr("TDP W"), justify="right", overflow="fold")
    for g in gpus:
        link = Text(g.gpu_link if g.gpu_link != "none" else tr("no NVLink"))
        speed = tr("{gb_s:,.0f} GB/s", gb_s=g.gpu_link_gb_s_bidir) + " · " if g.gpu_link != "none" else ""
        link.append(f"\n{speed}Gen{g.pcie_generation}", style="dim")
        fp8 = current().num(g.fp8_tflops, 1 if g.fp8_tflops % 1 else 0) if g.fp8_tflops else "-"
        table.add_row(
            Text(g.name, style="bold"),
            tr("{gb:g} GB", gb=g.memory_gb),
            current().num(g.hbm_bandwidth_gb_s),
            f"{current().num(g.bf16_tflops, 1 if g.bf16_tflops % 1 else 0)} / {fp8}",
            link,
            current().num(g.tdp_w),
        )
    return table


def models_table(models: list[ModelSpec]) -> Table:
    """The model presets at 80 columns: under each name (what --model takes, never cut) its family."""
    table = Table(
        title=tr("Model presets (Hugging Face config.json files; source per file)"),
        title_justify="left",
        box=box.SIMPLE_HEAD,
        show_edge=False,
    )
    identity_column(table, tr("name"))
    for col in (N_("params"), N_("layers"), N_("hidden"), N_("heads/kv"), N_("vocab"), N_("tied")):
        table.add_column(tr(col), justify="right")
    for m in models:
        name = Text(m.name, style="bold")
        name.append(f"\n{m.family}", style="dim")
        table.add_row(
            name,
            count(m.params),
            str(m.num_layers),
            current().num(m.hidden_size),
            f"{m.num_heads}/{m.num_kv_heads}",
            current().num(m.vocab_size),
            tr("yes") if m.tied_embeddings else tr("no"),
        )
    return table


def console() -> Console:
    return Console()
