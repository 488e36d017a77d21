"""Judging the measurements: the datasheet figure beside each one, and verdicts on the seed article's criteria.

The seed's criteria for a training server: at least 8 CPU cores and 128 GB of RAM per GPU, and NVMe that reads
at 7 GB/s or more (a PCIe Gen4 x4 drive, ../shared/reference/hardware-and-prices.md §5.1).

Verdicts and the table's cells are Msgs (treino.i18n): English in --json, in the CLI's language on the terminal.
"""

from __future__ import annotations

from typing import Any, TypedDict

from treino.bench.dataloader import workers_needed
from treino.i18n import Joined, Msg, current, tr

CORES_PER_GPU_MIN = 8
RAM_PER_GPU_MIN_GB = 128
NVME_READ_MIN_GB_S = 7.0
NVME_SOURCE = "sizing criterion: NVMe >= 7 GB/s (Samsung 980 PRO class, docs/catalog.md, storage)"


class Verdict(TypedDict):
    """One criterion: `passed` is None where it is not judged (no GPUs here, storage read through the page cache)."""

    criterion: str
    passed: bool | None
    value: float | None
    threshold: float | None
    text: str


def _verdict(criterion: str, passed: bool | None, text: str, value: float | None, threshold: float | None) -> Verdict:
    return {"criterion": criterion, "passed": passed, "value": value, "threshold": threshold, "text": text}


def verdicts(
    result: dict[str, Any],
    *,
    gpu_count: int,
    collective_check: tuple[bool, float, str, int] | None = None,
    feed_samples_per_s: float = 0.0,
    dataloader_by_workers: dict[int, float] | None = None,
) -> list[Verdict]:
    out: list[Verdict] = []
    host = result.get("host")
    if host:
        cores, ram_gb = host["cores"], host["ram_bytes"] / 1e9
        if gpu_count:
            per = cores / gpu_count
            ok = per >= CORES_PER_GPU_MIN
            out.append(
                _verdict(
                    "cpu_cores_per_gpu",
                    ok,
                    Msg(
                        "{per:g} CPU cores per GPU: {verdict} the {min} per GPU that keep the data loaders and the "
                        "training process fed.",
                        per=per,
                        verdict=Msg("meets") if ok else Msg("below"),
                        min=CORES_PER_GPU_MIN,
                    ),
                    per,
                    CORES_PER_GPU_MIN,
                )
            )
            per_ram = ram_gb / gpu_count
            ok = per_ram >= RAM_PER_GPU_MIN_GB
            out.append(
                _verdict(
                    "ram_per_gpu_gb",
                    ok,
                    Msg(
                        "{per:.0f} GB RAM per GPU: {verdict} the {min} GB per GPU.",
                        per=per_ram,
                        verdict=Msg("meets") if ok else Msg("below"),
                        min=RAM_PER_GPU_MIN_GB,
                    ),
                    per_ram,
                    RAM_PER_GPU_MIN_GB,
                )
            )
        else:
            gpus_fed = min(cores // CORES_PER_GPU_MIN, int(ram_gb // RAM_PER_GPU_MIN_GB))
            out.append(
                _verdict(
                    "cpu_cores_and_ram_per_gpu",
                    None,
                    Msg(
                        "No GPUs here: {cores} cores and {ram:.0f} GB RAM would feed {fed} GPU(s) at {min_cores} "
                        "cores and {min_ram} GB per GPU (the sizing criteria of docs/catalog.md).",
                        cores=cores,
                        ram=ram_gb,
                        fed=gpus_fed,
                        min_cores=CORES_PER_GPU_MIN,
                        min_ram=RAM_PER_GPU_MIN_GB,
                    ),
                    None,
                    None,
                )
            )
    storage = result.get("storage")
    if storage:
        read = storage["read_gb_s"]
        if storage["method"] == "buffered (cached)":
            out.append(
                _verdict(
                    "nvme_read_gb_s",
                    None,
                    Msg(
                        "Storage {read:.1f} GB/s was read through the page cache: not judged against {min:g} GB/s. "
                        "To fix: --path on a filesystem that allows O_DIRECT.",
                        read=read,
                        min=NVME_READ_MIN_GB_S,
                    ),
                    read,
                    NVME_READ_MIN_GB_S,
                )
            )
        else:
            ok = read >= NVME_READ_MIN_GB_S
            out.append(
                _verdict(
                    "nvme_read_gb_s",
                    ok,
                    Msg(
                        "Storage {read:.2f} GB/s ({method}): {verdict} the {min:g} GB/s that keeps 8 GPUs fed on "
                        "image and video data.",
                        read=read,
                        method=Msg(storage["method"]),
                        verdict=Msg("meets") if ok else Msg("below"),
                        min=NVME_READ_MIN_GB_S,
                    ),
                    read,
                    NVME_READ_MIN_GB_S,
                )
            )
    if collective_check is not None:
        correct, err, backend, ranks = collective_check
        out.append(
            _verdict(
                "allreduce_correct",
                correct,
                Msg(
                    "All-reduce of random data over {ranks} {backend} ranks equals the sum computed locally (max "
                    "error {err:.1e}).",
                    ranks=ranks,
                    backend=backend,
                    err=err,
                )
                if correct
                else Msg(
                    "All-reduce of random data over {ranks} {backend} ranks DIFFERS from the sum computed locally "
                    "(max error {err:.1e}).",
                    ranks=ranks,
                    backend=backend,
                    err=err,
                ),
                err,
                None,
            )
        )
    loader = result.get("dataloader")
    if loader and feed_samples_per_s > 0:
        rates = dataloader_by_workers or {}
        per_worker = rates.get(1) or rates.get(0) or loader["samples_per_s"]
        need = workers_needed(per_worker, feed_samples_per_s)
        ok = loader["samples_per_s"] >= feed_samples_per_s
        out.append(
            _verdict(
                "dataloader_feeds_step_rate",
                ok,
                Msg(
                    "Data loader {rate:,.0f} samples/s with {workers} worker(s): {verdict} {feed:,.0f} samples/s; "
                    "about {need} worker(s) needed at one worker's rate.",
                    rate=loader["samples_per_s"],
                    workers=loader["workers"],
                    verdict=Msg("feeds") if ok else Msg("short of"),
                    feed=feed_samples_per_s,
                    need=need,
                ),
                loader["samples_per_s"],
                feed_samples_per_s,
            )
        )
    return out


def _pct(measured: float, sheet: float) -> str:
    return Msg("{pct:.0f} %", pct=100 * measured / sheet) if sheet else "-"


def _gpu_rows(g: dict[str, Any], spec: Any) -> list[tuple[str, str, str, str]]:
    """One GPU's rows: memory, device copy, matmul per dtype, host copies, peers."""
    table: list[tuple[str, str, str, str]] = []
    label = Msg("GPU {index} {name}", index=g["index"], name=g["name"])
    table.append(
        (
            Msg("{label} memory", label=label),
            Msg("{n:.1f} GB", n=g["total_memory_bytes"] / 1e9),
            _sheet(spec, "memory_gb", "GB"),
            "",
        )
    )
    if spec:
        table[-1] = (*table[-1][:3], _pct(g["total_memory_bytes"] / 1e9, spec.memory_gb))
    sheet = spec.hbm_bandwidth_gb_s if spec else 0
    table.append(
        (
            Msg("{label} device copy (read+write)", label=label),
            Msg("{n:,.0f} GB/s", n=g["copy_gb_s"]),
            _sheet(spec, "hbm_bandwidth_gb_s", "GB/s"),
            _pct(g["copy_gb_s"], sheet),
        )
    )
    for dtype, tflops in g["tflops"].items():
        sheet = spec.dense_tflops(dtype) if spec else 0
        burst = g.get("tflops_burst", {}).get(dtype)
        clock = g.get("sm_clock_mhz", {}).get(dtype)
        sustained = Msg("{n:,.0f} TFLOP/s sustained", n=tflops)
        if clock:
            sustained = Msg("{n:,.0f} TFLOP/s sustained at {clock:,} MHz", n=tflops, clock=clock)
        measured = Joined(", ", [sustained, Msg("{n:,.0f} burst", n=burst)]) if burst else sustained
        table.append(
            (
                Msg("{label} matmul {dtype}", label=label, dtype=dtype),
                measured,
                _sheet(spec, f"{dtype}_tflops", "TFLOP/s"),
                Joined(", ", [_pct(tflops, sheet), _pct(burst, sheet)]) if burst and sheet else _pct(tflops, sheet),
            )
        )
    for key in ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"):
        table.append(
            (
                Msg("{label} {copy}", label=label, copy=key.replace("_", " ")),
                Msg("{n:.1f} GB/s", n=g[key + "_gb_s"]),
                "",
                "",
            )
        )
    for peer, bw in g["p2p_gb_s"].items():
        table.append((Msg("{label} -> GPU {peer} P2P", label=label, peer=peer), Msg("{n:.1f} GB/s", n=bw), "", ""))
    return table


def rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, measured, datasheet, % of datasheet) for the table."""
    from treino import catalog
    from treino.bench.profile import catalog_match

    table: list[tuple[str, str, str, str]] = []
    specs = catalog.gpus()
    for g in result["gpus"]:
        name = catalog_match(g["name"], specs)
        table += _gpu_rows(g, specs[name] if name else None)
    by_op: dict[str, dict[str, Any]] = {}
    for c in result["collectives"]:
        if c["op"] not in by_op or c["bytes"] > by_op[c["op"]]["bytes"]:
            by_op[c["op"]] = c
    for c in result["collectives"]:
        if c["latency_us"] is not None and c["bytes"] == min(
            x["bytes"] for x in result["collectives"] if x["op"] == c["op"]
        ):
            table.append(
                (
                    Msg(
                        "{op} latency {size} ({backend}, {ranks} ranks)",
                        op=c["op"],
                        size=_size(c["bytes"]),
                        backend=c["backend"],
                        ranks=c["ranks"],
                    ),
                    Msg("{n:,.0f} µs", n=c["latency_us"]),
                    "",
                    "",
                )
            )
    for c in by_op.values():
        table.append(
            (
                Msg(
                    "{op} busbw {size} ({backend}, {ranks} ranks)",
                    op=c["op"],
                    size=_size(c["bytes"]),
                    backend=c["backend"],
                    ranks=c["ranks"],
                ),
                Msg("{n:.2f} GB/s", n=c["busbw_gb_s"]),
                "",
                "",
            )
        )
    host = result.get("host")
    if host:
        table.append(("CPU", host["cpu"], "", ""))
        table.append((Msg("CPU cores"), str(host["cores"]), "", ""))
        table.append(("RAM", Msg("{n:.1f} GB", n=host["ram_bytes"] / 1e9), "", ""))
        table.append(
            (Msg("Host memory copy (read+write)"), Msg("{n:.1f} GB/s", n=host["memory_bandwidth_gb_s"]), "", "")
        )
    storage = result.get("storage")
    if storage:
        table.append(
            (
                Msg("Storage sequential read ({method})", method=Msg(storage["method"])),
                Msg("{n:.2f} GB/s", n=storage["read_gb_s"]),
                Msg("7 GB/s (NVMe criterion)"),
                _pct(storage["read_gb_s"], 7.0),
            )
        )
    loader = result.get("dataloader")
    if loader:
        rate = Msg("{n:,.0f} samples/s ({workers} workers)", n=loader["samples_per_s"], workers=loader["workers"])
        table.append((Msg("Data loader"), rate, "", ""))
    return table


def _sheet(spec: Any, field: str, unit: str) -> str:
    if spec is None:
        return ""
    value = getattr(spec, field, 0)
    return Msg("{value:,.0f} {unit}", value=value, unit=unit) if value else "-"


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def table(result: dict[str, Any]) -> Any:
    from rich.table import Table

    t = Table(title="treino bench")
    t.add_column(tr("Figure"))
    t.add_column(tr("Measured"), justify="right")
    t.add_column(tr("Datasheet"), justify="right")
    t.add_column(tr("% of datasheet"), justify="right")
    loc = current()
    for row in rows(result):
        t.add_row(*(loc.msg(cell) for cell in row))
    return t


def verdict_lines(result: dict[str, Any]) -> list[str]:
    """Each verdict, marked, in the CLI's language (its text is a Msg; from JSON, plain English)."""
    marks = {True: f"[green]{tr('PASS')}[/]", False: f"[red]{tr('FAIL')}[/]", None: f"[yellow]{tr('NOTE')}[/]"}
    return [f"{marks[v['passed']]} {current().msg(v['text'])}" for v in result["verdicts"]]
