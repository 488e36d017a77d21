"""A hardware profile: what `treino bench --save` measured, in the form `treino plan ... --profile` reads.

    {
      "schema_version": 1,
      "measured_at": "2026-11-29T21:30:00+00:00",
      "gpu": {"name": "NVIDIA H200", "catalog_name": "h200-sxm", "count": 8,
              "hbm_bandwidth_gb_s": 4300.0, "tflops": {"bf16": 674.0, ...}, "tflops_burst": {"bf16": 789.0, ...}}
             | null,
      "busbw": [{"op": "all_reduce", "backend": "nccl", "ranks": 8, "bytes": 1073741824, "busbw_gb_s": 360.0}],
      "storage_read_gb_s": 6.8, "storage_method": "O_DIRECT",
      "dataloader_samples_per_s": 19000.0, "dataloader_workers": 2
    }
The measured device copy (reads + writes) is the figure the planner's roofline divides by: the datasheet's HBM
bandwidth counts the same bytes.

Matmul rates do not replace the datasheet peak one for one: the planner's MFU priors are fractions of the datasheet
peak, taken from training runs on GPUs that reached the typical maximum achievable matmul rate (MAMF), about 0.80
of the datasheet in bf16 on NVIDIA (hardware-and-prices.md §4.1, S01 mamf-finder). So the profile scales the peak by
how this GPU's burst rate compares with that typical one: peak' = burst / typical efficiency. An H200 measuring
789 TFLOP/s burst behaves as a 986 TFLOP/s datasheet part, within 0.4 % of its 989.5. The burst rate is the one to
compare because mamf-finder's short runs are bursts too; the sustained rate (clocks lowered by the power limit) is
already inside the MFU that the published training runs achieved. TF32 and FP32 have no published MAMF and keep the
datasheet figure.
"""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from treino.errors import CatalogError, UsageError
from treino.i18n import Msg
from treino.plan.hardware import GpuSpec
from treino.plan.performance import NVLINK_BUSBW_EFFICIENCY

SCHEMA_VERSION = 1
TFLOPS_FIELDS = {"fp32": "fp32_tflops", "tf32": "tf32_tflops", "bf16": "bf16_tflops", "fp16": "fp16_tflops"}
TFLOPS_FIELDS["fp8"] = "fp8_tflops"
# Typical MAMF / dense datasheet peak on NVIDIA (hardware-and-prices.md §4.1 and its defaults table,
# matmul_efficiency_nvidia_bf16 = 0.80 and _fp8 = 0.73, from S01's mamf-finder table).
TYPICAL_MATMUL_EFFICIENCY = {"bf16": 0.80, "fp16": 0.80, "fp8": 0.73}


def build_profile(result: dict[str, Any], catalog_name: str | None) -> dict[str, Any]:
    """The profile of one `treino bench` result (its --json form)."""
    gpus = result["gpus"]
    gpu = None
    if gpus:
        first = gpus[0]
        gpu = {
            "name": first["name"],
            "catalog_name": catalog_name,
            "count": len(gpus),
            "hbm_bandwidth_gb_s": first["copy_gb_s"],
            "tflops": dict(first["tflops"]),
            "tflops_burst": dict(first.get("tflops_burst", {})),
        }
    storage = result.get("storage") or {}
    loader = result.get("dataloader") or {}
    return {
        "schema_version": SCHEMA_VERSION,
        "measured_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "gpu": gpu,
        "busbw": [{k: c[k] for k in ("op", "backend", "ranks", "bytes", "busbw_gb_s")} for c in result["collectives"]],
        "storage_read_gb_s": storage.get("read_gb_s"),
        "storage_method": storage.get("method"),
        "dataloader_samples_per_s": loader.get("samples_per_s"),
        "dataloader_workers": loader.get("workers"),
    }


def save_profile(profile: dict[str, Any], path: Path) -> None:
    path.write_text(json.dumps(profile, indent=2) + "\n")


def load_profile(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError) as exc:
        raise CatalogError(
            Msg(
                "Cannot read the profile {path}: {error}. To fix: write one with 'treino bench --save'.",
                path=path,
                error=exc,
            )
        ) from exc
    if not isinstance(data, dict) or data.get("schema_version") != SCHEMA_VERSION:
        raise CatalogError(
            Msg(
                "{path} is not a treino hardware profile of schema_version {version}. To fix: write it again with "
                "'treino bench --save'.",
                path=path,
                version=SCHEMA_VERSION,
            )
        )
    return data


@dataclass(frozen=True)
class MeasuredGpu:
    spec: GpuSpec  # the catalog spec with the measured figures in place of the datasheet's
    measured: dict[str, tuple[float, float]]  # field -> (datasheet, measured)
    measured_at: str
    path: str = ""
    storage_read_gb_s: float | None = None  # the data disk, when read with the page cache bypassed

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "measured_at": self.measured_at,
            "measured": {k: {"datasheet": d, "measured": m} for k, (d, m) in self.measured.items()},
        }

    def line(self) -> str:
        """One line for the plan's output: which figures came from a measurement."""
        parts = ", ".join(
            f"{k} {m:,.0f}{' datasheet-equivalent' if k.endswith('_tflops') else ''} (datasheet {d:,.0f})"
            for k, (d, m) in self.measured.items()
        )
        return f"Measured ({self.path or 'profile'}, {self.measured_at}): {parts}."


def apply_profile(spec: GpuSpec, profile: dict[str, Any], path: str = "") -> MeasuredGpu:
    """`spec` with the profile's measured HBM bandwidth, TFLOP/s and (NCCL over NVLink) all-reduce busbw."""
    gpu = profile.get("gpu")
    if not gpu:
        raise UsageError(  # --profile names a file that cannot serve this plan: a bad option value (exit 2)
            Msg(
                "The profile holds no GPU measurements (it was saved on a machine without GPUs). To fix: run 'treino "
                "bench --save' on the GPU server."
            )
        )
    if gpu.get("catalog_name") and gpu["catalog_name"] != spec.name:
        raise UsageError(
            Msg(
                "The profile measured {measured} ({name}), but the plan is for {gpu}. To fix: --gpu {measured}, or a "
                "profile measured on a {display}.",
                measured=gpu["catalog_name"],
                name=gpu["name"],
                gpu=spec.name,
                display=spec.display_name,
            )
        )
    changes: dict[str, float] = {}
    if gpu.get("hbm_bandwidth_gb_s"):
        changes["hbm_bandwidth_gb_s"] = float(gpu["hbm_bandwidth_gb_s"])
    # Profiles from before the burst figure existed hold only "tflops"; take it as the burst then.
    burst = gpu.get("tflops_burst") or gpu.get("tflops") or {}
    for dtype, value in burst.items():
        if dtype in TYPICAL_MATMUL_EFFICIENCY and value:
            changes[TFLOPS_FIELDS[dtype]] = float(value) / TYPICAL_MATMUL_EFFICIENCY[dtype]
    nccl = [b for b in profile.get("busbw", []) if b["op"] == "all_reduce" and b["backend"] == "nccl"]
    if nccl and spec.gpu_link != "none":
        # The planner derives NVLink busbw as gpu_link_gb_s_bidir / 2 x its efficiency; invert that so it
        # returns the busbw measured at the largest message.
        largest = max(nccl, key=lambda b: b["bytes"])
        changes["gpu_link_gb_s_bidir"] = 2 * float(largest["busbw_gb_s"]) / NVLINK_BUSBW_EFFICIENCY
    measured = {k: (float(getattr(spec, k)), v) for k, v in changes.items()}
    when = str(profile.get("measured_at", "?"))
    source = f"measured by treino bench at {when} ({', '.join(changes)}); datasheet: {spec.source}"
    storage = profile.get("storage_read_gb_s") if profile.get("storage_method") != "buffered (cached)" else None
    # The keys of `changes` are GpuSpec's float fields, chosen at run time: mypy cannot match them to the dataclass,
    # so they go in untyped, and dataclasses.replace checks the names (TypeError on an unknown field).
    fields: dict[str, Any] = {"source": source, **changes}
    return MeasuredGpu(dataclasses.replace(spec, **fields), measured, when, path, float(storage) if storage else None)


def measured_spec(spec: GpuSpec, path: Path) -> MeasuredGpu:
    """`treino plan ... --profile PATH`: the catalog spec with the profile's measured figures."""
    return apply_profile(spec, load_profile(path), str(path))


def _tokens(name: str) -> set[str]:
    return set(re.findall(r"[a-z0-9]+", name.lower())) - {"nvidia", "amd", "geforce", "instinct"}


def catalog_match(device_name: str, specs: dict[str, GpuSpec]) -> str | None:
    """The catalog GPU a CUDA device name ("NVIDIA H200", "NVIDIA A100-SXM4-80GB") most likely is: the chip
    token (h200, a100) must match; the other tokens (sxm, 80gb, nvl) break ties."""
    words = _tokens(device_name)
    best, best_score = None, 0
    for name, spec in specs.items():
        theirs = _tokens(spec.display_name)
        chips = {w for w in theirs if any(c.isdigit() for c in w)}
        if not chips & words:
            continue
        score = 10 + len(words & theirs) + sum(any(w.startswith(t) for w in words) for t in theirs)
        if score > best_score:
            best, best_score = name, score
    return best
