"""Judging the measurements: the datasheet figure beside each one, and verdicts on the seed article's criteria.

The seed's criteria for a training server: at least 8 CPU cores and 128 GB of RAM per GPU, and NVMe that reads
at 7 GB/s or more (a PCIe Gen4 x4 drive, ../shared/reference/hardware-and-prices.md §5.1).
"""

from __future__ import annotations

from typing import Any, TypedDict

from treino.bench.dataloader import workers_needed

CORES_PER_GPU_MIN = 8
RAM_PER_GPU_MIN_GB = 128
NVME_READ_MIN_GB_S = 7.0
NVME_SOURCE = "seed criterion: NVMe >= 7 GB/s (Samsung 980 PRO class, docs/catalog.md, storage)"


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
                    f"{per:g} CPU cores per GPU: {'meets' if ok else 'below'} the {CORES_PER_GPU_MIN} per GPU "
                    "that keep the data loaders and the training process fed.",
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
                    f"{per_ram:.0f} GB RAM per GPU: {'meets' if ok else 'below'} the {RAM_PER_GPU_MIN_GB} GB per GPU.",
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
                    f"No GPUs here: {cores} cores and {ram_gb:.0f} GB RAM would feed {gpus_fed} GPU(s) at the "
                    f"seed's {CORES_PER_GPU_MIN} cores and {RAM_PER_GPU_MIN_GB} GB per GPU.",
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
                    f"Storage {read:.1f} GB/s was read through the page cache: not judged against "
                    f"{NVME_READ_MIN_GB_S:g} GB/s. To fix: --path on a filesystem that allows O_DIRECT.",
                    read,
                    NVME_READ_MIN_GB_S,
                )
            )
        else:
            ok = read >= NVME_READ_MIN_GB_S
            feeds = "meets" if ok else "below"
            out.append(
                _verdict(
                    "nvme_read_gb_s",
                    ok,
                    f"Storage {read:.2f} GB/s ({storage['method']}): {feeds} the {NVME_READ_MIN_GB_S:g} GB/s "
                    "that keeps 8 GPUs fed on image and video data.",
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
                f"All-reduce of random data over {ranks} {backend} ranks "
                f"{'equals' if correct else 'DIFFERS from'} the sum computed locally (max error {err:.1e}).",
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
                f"Data loader {loader['samples_per_s']:,.0f} samples/s with {loader['workers']} worker(s): "
                f"{'feeds' if ok else 'short of'} {feed_samples_per_s:,.0f} samples/s; about {need} worker(s) "
                "needed at one worker's rate.",
                loader["samples_per_s"],
                feed_samples_per_s,
            )
        )
    return out


def rows(result: dict[str, Any]) -> list[tuple[str, str, str, str]]:
    """(figure, measured, datasheet, % of datasheet) for the table."""
    from treino import catalog
    from treino.bench.profile import catalog_match

    table: list[tuple[str, str, str, str]] = []

    def pct(measured: float, sheet: float) -> str:
        return f"{100 * measured / sheet:.0f} %" if sheet else "-"

    specs = catalog.gpus()
    for g in result["gpus"]:
        name = catalog_match(g["name"], specs)
        spec = specs[name] if name else None
        label = f"GPU {g['index']} {g['name']}"
        table.append(
            (f"{label} memory", f"{g['total_memory_bytes'] / 1e9:.1f} GB", _sheet(spec, "memory_gb", "GB"), "")
        )
        if spec:
            table[-1] = (*table[-1][:3], pct(g["total_memory_bytes"] / 1e9, spec.memory_gb))
        sheet = spec.hbm_bandwidth_gb_s if spec else 0
        table.append(
            (
                f"{label} device copy (read+write)",
                f"{g['copy_gb_s']:,.0f} GB/s",
                _sheet(spec, "hbm_bandwidth_gb_s", "GB/s"),
                pct(g["copy_gb_s"], sheet),
            )
        )
        for dtype, tflops in g["tflops"].items():
            sheet = spec.dense_tflops(dtype) if spec else 0
            burst = g.get("tflops_burst", {}).get(dtype)
            clock = g.get("sm_clock_mhz", {}).get(dtype)
            at = f" at {clock:,} MHz" if clock else ""
            table.append(
                (
                    f"{label} matmul {dtype}",
                    f"{tflops:,.0f} TFLOP/s sustained{at}" + (f", {burst:,.0f} burst" if burst else ""),
                    _sheet(spec, f"{dtype}_tflops", "TFLOP/s"),
                    pct(tflops, sheet) + (f", {pct(burst, sheet)}" if burst and sheet else ""),
                )
            )
        for key in ("h2d_pinned", "h2d_pageable", "d2h_pinned", "d2h_pageable"):
            table.append((f"{label} {key.replace('_', ' ')}", f"{g[key + '_gb_s']:.1f} GB/s", "", ""))
        for peer, bw in g["p2p_gb_s"].items():
            table.append((f"{label} -> GPU {peer} P2P", f"{bw:.1f} GB/s", "", ""))
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
                    f"{c['op']} latency {_size(c['bytes'])} ({c['backend']}, {c['ranks']} ranks)",
                    f"{c['latency_us']:,.0f} µs",
                    "",
                    "",
                )
            )
    for c in by_op.values():
        table.append(
            (
                f"{c['op']} busbw {_size(c['bytes'])} ({c['backend']}, {c['ranks']} ranks)",
                f"{c['busbw_gb_s']:.2f} GB/s",
                "",
                "",
            )
        )
    host = result.get("host")
    if host:
        table.append(("CPU", host["cpu"], "", ""))
        table.append(("CPU cores", str(host["cores"]), "", ""))
        table.append(("RAM", f"{host['ram_bytes'] / 1e9:.1f} GB", "", ""))
        table.append(("Host memory copy (read+write)", f"{host['memory_bandwidth_gb_s']:.1f} GB/s", "", ""))
    storage = result.get("storage")
    if storage:
        table.append(
            (
                f"Storage sequential read ({storage['method']})",
                f"{storage['read_gb_s']:.2f} GB/s",
                "7 GB/s (NVMe criterion)",
                pct(storage["read_gb_s"], 7.0),
            )
        )
    loader = result.get("dataloader")
    if loader:
        table.append(("Data loader", f"{loader['samples_per_s']:,.0f} samples/s ({loader['workers']} workers)", "", ""))
    return table


def _sheet(spec: Any, field: str, unit: str) -> str:
    if spec is None:
        return ""
    value = getattr(spec, field, 0)
    return f"{value:,.0f} {unit}" if value else "-"


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:g} {unit}"
    return f"{nbytes} B"


def table(result: dict[str, Any]) -> Any:
    from rich.table import Table

    t = Table(title="treino bench")
    t.add_column("Figure")
    t.add_column("Measured", justify="right")
    t.add_column("Datasheet", justify="right")
    t.add_column("% of datasheet", justify="right")
    for row in rows(result):
        t.add_row(*row)
    return t


def verdict_lines(result: dict[str, Any]) -> list[str]:
    marks = {True: "[green]PASS[/]", False: "[red]FAIL[/]", None: "[yellow]NOTE[/]"}
    return [f"{marks[v['passed']]} {v['text']}" for v in result["verdicts"]]
