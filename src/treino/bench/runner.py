"""Runs the bench's stages in order and assembles the result that `--json` prints.

    result = {"gpus": [...], "collectives": [...], "host": {...} | None, "storage": {...} | None,
              "dataloader": {...} | None, "verdicts": [...]}
A stage that cannot run here (the GPU stage without CUDA) adds one line to `notes` and an empty result.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from treino.errors import UsageError
from treino.i18n import Msg

STAGES = ("gpu", "collectives", "host", "storage", "dataloader")
ALIASES = {"allreduce": "collectives", "nccl": "collectives", "disk": "storage", "loader": "dataloader"}
GLOO_RANKS = 2  # CPU processes for the collectives on a machine with fewer than 2 GPUs
GLOO_MAX_BYTES = 256 * 1024**2  # gloo over loopback runs at ~1 GB/s: larger messages only add minutes
NO_GPU_LINE = Msg("gpu: skipped, no CUDA GPU visible to PyTorch (torch.cuda.is_available() is False).")


def parse_only(text: str) -> tuple[str, ...]:
    """`--only gpu,allreduce,disk` -> the stages in run order; unknown names -> TreinoError listing the valid."""
    if not text.strip():
        return STAGES
    chosen = set()
    for raw in text.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        name = ALIASES.get(name, name)
        if name not in STAGES:
            valid = ", ".join(STAGES)
            close = difflib.get_close_matches(name, [*STAGES, *ALIASES], n=1)
            hint = Msg(" Did you mean '{name}'?", name=close[0]) if close else ""
            raise UsageError(
                Msg(
                    "Unknown stage {stage!r} in --only.{hint} Valid stages: {valid}.",
                    stage=raw.strip(),
                    hint=hint,
                    valid=valid,
                )
            )
        chosen.add(name)
    return tuple(s for s in STAGES if s in chosen)


@dataclass
class BenchRun:
    result: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    dataloader_by_workers: dict[int, float] = field(default_factory=dict)


def run_bench(
    stages: tuple[str, ...],
    *,
    quick: bool,
    path: Path | None = None,
    feed_samples_per_s: float = 0.0,
    on_stage: Callable[[str], None] = lambda stage: None,
) -> BenchRun:
    """Measure `stages`; `on_stage(name)` is called as each one starts (the CLI's progress bar)."""
    from treino.bench import collectives, dataloader, gpu, host, storage
    from treino.bench.report import verdicts

    run = BenchRun({"gpus": [], "collectives": [], "host": None, "storage": None, "dataloader": None, "verdicts": []})
    gpu_count = 0
    if gpu.cuda_available():
        import torch

        gpu_count = torch.cuda.device_count()
    collective_check = None
    for stage in stages:
        on_stage(stage)
        if stage == "gpu":
            if gpu_count:
                run.result["gpus"] = [g.to_json() for g in gpu.measure_gpus(quick)]
            else:
                run.notes.append(NO_GPU_LINE)
        elif stage == "collectives":
            backend, ranks = ("nccl", gpu_count) if gpu_count >= 2 else ("gloo", GLOO_RANKS)
            sizes = collectives.QUICK_SIZES_BYTES if quick else collectives.FULL_SIZES_BYTES
            if backend == "gloo":
                sizes = tuple(s for s in sizes if s <= GLOO_MAX_BYTES)
            iters = collectives.TIMED_ITERS_QUICK if quick else collectives.TIMED_ITERS_FULL
            done = collectives.run_collectives(backend, ranks, sizes, iters)
            run.result["collectives"] = [c.to_json() for c in done.results]
            collective_check = (done.correct, done.max_abs_error, backend, ranks)
        elif stage == "host":
            run.result["host"] = host.measure_host(quick).to_json()
        elif stage == "storage":
            ram = run.result["host"]["ram_bytes"] if run.result["host"] else host.ram_bytes()
            run.result["storage"] = storage.measure_storage(path, quick, ram).to_json()
        elif stage == "dataloader":
            loaded = dataloader.measure_dataloader(quick)
            run.result["dataloader"] = loaded.to_json()
            run.dataloader_by_workers = loaded.by_workers
    run.result["verdicts"] = verdicts(
        run.result,
        gpu_count=gpu_count,
        collective_check=collective_check,
        feed_samples_per_s=feed_samples_per_s,
        dataloader_by_workers=run.dataloader_by_workers,
    )
    return run
