"""Rich rendering of plans. No logic: every number comes from treino.plan."""

from __future__ import annotations

import re

from rich.console import Console, Group
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from treino.plan import InferenceEstimate, TrainPlan
from treino.plan.hardware import GpuSpec
from treino.plan.model import ModelSpec
from treino.plan.performance import ScalePoint, TimeEstimate
from treino.plan.pipeline import PipelineEstimate
from treino.plan.recommend import Recommendation

GIB = 2**30
BAR_WIDTH = 60
STRATEGY_WIDTH_MIN = 20  # characters: `recommend`'s flags under each offer wrap at the longer of this and its name
_PARTS = (  # label, MemoryEstimate field, colour
    ("weights", "weights_bytes", "blue"),
    ("gradients", "gradients_bytes", "magenta"),
    ("optimizer", "optimizer_bytes", "yellow"),
    ("activations", "activations_bytes", "green"),
    ("logits+loss", "logits_bytes", "cyan"),
    ("temporaries", "temporary_bytes", "white"),
    ("overhead", "overhead_bytes", "red"),
)


def identity_column(table: Table, header: str, **kwargs: object) -> None:
    """A column of names that identify something (an offer, a job, a site): never cut to an ellipsis. Rich
    narrows wrappable columns first; a row too wide even so folds the name onto a second line, whole."""
    table.add_column(header, no_wrap=True, overflow="fold", **kwargs)  # type: ignore[arg-type]


def gib(nbytes: float) -> str:
    return f"{nbytes / GIB:,.2f} GiB"


def count(n: int) -> str:
    return f"{n / 1e9:,.2f} B" if n >= 1e9 else f"{n / 1e6:,.1f} M"


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
        text.append(f" {gib(total - capacity)} over", style="bold red")
    return text


def train_plan(plan: TrainPlan) -> Group:
    m, s, gpu = plan.memory, plan.setup, plan.gpu
    title = (
        f"{plan.model.name}: {count(m.params)} params ({count(m.trainable_params)} trainable) · "
        f"{s.precision} · {s.optimizer} · micro-batch {s.micro_batch} × {s.seq_len} tokens · "
        f"{s.gpus}× {gpu.display_name}"
        + (f" · ZeRO-{s.zero}" if s.zero else "")
        + (f" · TP {s.tp}" if s.tp > 1 else "")
        + f" · {plan.method}"
    )
    table = Table(show_edge=False)
    table.add_column("per GPU")
    table.add_column("memory", justify="right")
    table.add_column("share", justify="right")
    for label, attr, colour in _PARTS:
        value = getattr(m, attr)
        table.add_row(Text("■ ", style=colour) + label, gib(value), f"{100 * value / m.peak_bytes:.0f} %")
    table.add_row("peak of live tensors", gib(m.peak_tensor_bytes), f"at {m.peak_phase}", style="bold")
    table.add_row("peak", gib(m.peak_bytes), "", style="bold")
    table.add_row(f"{gpu.display_name} memory", gib(gpu.memory_bytes), "", style="dim")
    if m.cpu_offload_bytes:
        table.add_row("offloaded to CPU RAM", gib(m.cpu_offload_bytes), "")
    segments = [(label, float(getattr(m, attr)), colour) for label, attr, colour in _PARTS]
    bar = _bar(segments, gpu.memory_bytes)
    if plan.fits:
        verdict = Text(f"FITS: {gib(plan.headroom_bytes)} headroom on each {gpu.display_name}.", style="bold green")
    else:
        verdict = Text(
            f"DOES NOT FIT: needs {gib(m.peak_bytes)} per GPU, the {gpu.display_name} has {gib(gpu.memory_bytes)}.",
            style="bold red",
        )
    parts: list[object] = [Text(title, style="bold"), table, Text(""), bar, verdict]
    advice = plan.advice()
    if advice:
        tips = Table(title="What makes it fit, cheapest first", title_justify="left", show_edge=False)
        tips.add_column("change")
        tips.add_column("flags", overflow="fold")  # a flag is never cut to an ellipsis
        tips.add_column("peak", justify="right", no_wrap=True)
        tips.add_column("fits")
        tips.add_column("speed", justify="right", no_wrap=True)
        for a in advice:
            speed = f"{(a.slowdown - 1) * 100:+.0f} %" if a.slowdown != 1 else "same"
            change = Text(a.change)
            if a.caveat:  # its caveats under the change they belong to
                change.append("\n" + "; ".join(c for c in a.caveat.split("; ") if c), style="dim")
            tips.add_row(change, a.flags, gib(a.peak_bytes), "yes" if a.fits else "no", speed)
        parts += [Text(""), tips]
    for note in m.notes:
        parts.append(Text(note, style="dim"))
    return Group(*parts)  # type: ignore[arg-type]


def duration(seconds: float) -> str:
    if seconds < 120:
        return f"{seconds:,.1f} s"
    if seconds < 2 * 3600:
        return f"{seconds / 60:,.1f} min"
    if seconds < 3 * 86400:
        return f"{seconds / 3600:,.1f} h"
    return f"{seconds / 86400:,.1f} days"


def time_line(t: TimeEstimate, interconnect: str) -> Text:
    text = Text(
        f"Time: {duration(t.step_seconds)} per step ({t.tokens_per_step:,} tokens), "
        f"{t.tokens_per_second:,.0f} tokens/s, MFU {t.mfu:.0%} ({t.mfu_source}), {t.bound}-bound"
    )
    if t.comm_seconds:
        text.append(
            f"; all-reduce over {interconnect} {duration(t.comm_seconds)}, "
            f"{duration(t.exposed_comm_seconds)} not hidden by backward"
        )
    if t.total_seconds:
        text.append(f". The run: {t.steps:,} steps, {duration(t.total_seconds)}.", style="bold")
    return text


def pipeline_line(p: PipelineEstimate) -> Group:
    ok = p.gpu_idle_fraction == 0
    need = p.needed_bytes_per_s
    rate = f"{need / 1e6:,.1f} MB/s" if need >= 1e5 else f"{need / 1e3:,.1f} kB/s"
    head = Text(
        f"Data: the GPUs consume {rate} ({p.needed_samples_per_s:,.0f} {p.unit}/s); "
        f"storage gives {p.storage_bytes_per_s / 1e9:,.2f} GB/s"
        + (" from the page cache" if p.dataset_in_page_cache else "")
        + f", {p.worker_cores} worker cores {p.cpu_samples_per_s:,.0f} {p.unit}/s. ",
        style="" if ok else "yellow",
    )
    head.append(
        "Kept fed." if ok else f"GPUs idle {p.gpu_idle_fraction:.0%} of the time ({p.bottleneck}).",
        style="green" if ok else "bold red",
    )
    return Group(head, *(Text(f"  fix: {a}", style="dim") for a in p.advice))


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

    table = Table(title="Cheapest configurations that fit and meet the limits", title_justify="left", show_edge=False)
    shown = list(r.choices) or ([r.best_effort] if r.best_effort else [])
    # The offer column is as wide as its longest name, never cut; each choice's strategy (its flags, kept whole)
    # goes in the row below its name, wrapped to that width, so it stays with its row at any console width.
    width = max([len(c.offer) for c in shown] + [STRATEGY_WIDTH_MIN])
    identity_column(table, "offer")
    for col in ("GPUs", "site", "time", "cost"):
        table.add_column(col, justify="right" if col in ("GPUs", "time", "cost") else "left", no_wrap=col == "cost")
    for c in shown:
        site = f"{c.site} ({c.country})" if c.site else "-"
        price = format_brl(c.cost_brl) + (" *" if c.example_price else "")
        table.add_row(Text(c.offer, style="bold"), f"{c.gpus}× {c.gpu}", site, duration(c.hours * 3600), price)
        table.add_row(Text("\n".join(_flag_lines(c.setup, width)), style="dim"), "", "", "", "", end_section=True)
    parts: list[object] = [table]
    if not r.choices:
        parts.insert(0, Text("Nothing meets every limit. The closest:", style="bold red"))
        parts.append(Text(f"It {r.miss}.", style="red"))
    if any(c.example_price for c in shown):
        parts.append(Text("* an illustrative example price, not a quote: add your own with --offers FILE", style="dim"))
    if r.rejected:
        parts.append(Text(f"Rejected ({len(r.rejected)}):", style="bold"))
        parts += [Text(f"  {x.offer}: {x.reason}", style="dim") for x in r.rejected]
    return Group(*parts)  # type: ignore[arg-type]


def scale_table(model: ModelSpec, gpu: GpuSpec, points: list[ScalePoint]) -> Group:
    table = Table(
        title=f"{model.name} on {gpu.display_name}: weak scaling (same micro-batch per GPU)",
        title_justify="left",
        show_edge=False,
    )
    table.add_column("GPUs", justify="right")
    links = sorted({p.interconnect for p in points}, key=lambda link: link != "nvlink")
    for link in links:
        table.add_column(f"{link} step", justify="right")
        table.add_column(f"{link} tokens/s", justify="right")
        table.add_column(f"{link} efficiency", justify="right")
    by_gpus: dict[int, list[ScalePoint]] = {}
    for p in points:
        by_gpus.setdefault(p.gpus, []).append(p)
    for n, row in sorted(by_gpus.items()):
        cells = [str(n)]
        for link in links:
            p = next(x for x in row if x.interconnect == link)
            style = "red" if p.efficiency < 0.9 else "green"
            cells += [duration(p.step_seconds), f"{p.tokens_per_second:,.0f}", f"[{style}]{p.efficiency:.0%}[/]"]
        table.add_row(*cells)
    lines: list[Text] = []
    for link in links:
        series = [p for p in points if p.interconnect == link]
        below = next((p for p in series if p.efficiency < 0.9), None)
        if below is None:
            lines.append(
                Text(f"{link}: efficiency stays at or above 90 % up to {series[-1].gpus} GPUs.", style="green")
            )
        else:
            lines.append(
                Text(
                    f"{link}: efficiency falls below 90 % at {below.gpus} GPUs ({below.efficiency:.0%}): "
                    f"the gradient all-reduce that backward cannot hide is {below.exposed_comm_fraction:.0%}"
                    " of each step.",
                    style="red",
                )
            )
    return Group(table, *lines)


def infer_plan(model: ModelSpec, gpu: GpuSpec, est: InferenceEstimate, batch: int, context: int, weights: str) -> Panel:
    table = Table(show_edge=False)
    table.add_column("per GPU")
    table.add_column("memory", justify="right")
    table.add_row("weights", gib(est.weights_bytes))
    table.add_row(
        f"KV cache ({batch} × {context:,} tokens, {est.kv_cache_bytes_per_token / 1024:,.0f} KiB/token)",
        gib(est.kv_cache_bytes),
    )
    table.add_row("activations", gib(est.activations_bytes))
    table.add_row("overhead", gib(est.overhead_bytes))
    table.add_row("peak", gib(est.peak_bytes), style="bold")
    table.add_row(f"{gpu.display_name} memory", gib(gpu.memory_bytes), style="dim")
    fits = est.peak_bytes <= gpu.memory_bytes
    verdict = Text("FITS" if fits else "DOES NOT FIT", style="bold green" if fits else "bold red")
    speed = Text(
        f"Decode ≤ {est.decode_tokens_per_s_bound:,.0f} tokens/s for the batch "
        f"(≥ {est.decode_ms_per_token_bound:.1f} ms per step at {gpu.hbm_bandwidth_gb_s:,.0f} GB/s)"
    )
    return Panel(Group(table, verdict, speed), title=f"{model.name} inference, {weights} weights on {gpu.display_name}")


def gpus_table(gpus: list[GpuSpec]) -> Table:
    table = Table(
        title="GPU catalog (dense TFLOP/s; source and date per row: treino gpus --json)", title_justify="left"
    )
    for col in ("name", "GPU", "memory", "HBM GB/s", "bf16 TF", "fp8 TF", "GPU link", "PCIe", "TDP W"):
        table.add_column(col, justify="left" if col in ("name", "GPU", "GPU link") else "right")
    for g in gpus:
        table.add_row(
            g.name,
            g.display_name,
            f"{g.memory_gb:g} GB",
            f"{g.hbm_bandwidth_gb_s:,.0f}",
            f"{g.bf16_tflops:g}",
            f"{g.fp8_tflops:g}" if g.fp8_tflops else "-",
            f"{g.gpu_link} {g.gpu_link_gb_s_bidir:g} GB/s" if g.gpu_link != "none" else "none",
            f"Gen{g.pcie_generation}",
            f"{g.tdp_w:g}",
        )
    return table


def models_table(models: list[ModelSpec]) -> Table:
    table = Table(title="Model presets (Hugging Face config.json files; source per file)", title_justify="left")
    for col in ("name", "family", "params", "layers", "hidden", "heads/kv", "vocab", "tied"):
        table.add_column(col, justify="left" if col in ("name", "family") else "right")
    for m in models:
        table.add_row(
            m.name,
            m.family,
            count(m.params),
            str(m.num_layers),
            f"{m.hidden_size:,}",
            f"{m.num_heads}/{m.num_kv_heads}",
            f"{m.vocab_size:,}",
            "yes" if m.tied_embeddings else "no",
        )
    return table


def console() -> Console:
    return Console()
