"""Load the catalogs, validate them, and resolve user-typed names with a did-you-mean."""

from __future__ import annotations

import csv
import difflib
import json
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from treino.errors import CatalogError, PlanError, UnknownNameError
from treino.i18n import Msg, either, json_problem, message_of
from treino.plan.hardware import GpuSpec
from treino.plan.model import ModelSpec, model_from_config

_DATA = resources.files("treino.catalog") / "data" / "v1"
_MODELS = resources.files("treino.catalog") / "models"


class GpuRow(BaseModel):
    """One row of gpus.csv (schema v1). Compute figures are dense (no 2:4 sparsity), in TFLOP/s."""

    model_config = ConfigDict(extra="forbid")

    name: str
    display_name: str
    vendor: str
    form_factor: str
    memory_gb: float = Field(gt=0)  # the datasheet's "GB", for display
    smi_memory_mib: int | None = Field(default=None, gt=0)  # nvidia-smi memory.total
    runtime_memory_bytes: int | None = Field(default=None, gt=0)  # cudaMemGetInfo / HIP total
    memory_source: str | None = None
    memory_type: str
    hbm_bandwidth_gb_s: float = Field(gt=0)
    fp32_tflops: float = Field(gt=0)
    tf32_tflops: float = Field(gt=0)
    bf16_tflops: float = Field(gt=0)
    fp16_tflops: float = Field(gt=0)
    fp8_tflops: float | None = None
    gpu_link: str
    gpu_link_gb_s_bidir: float = Field(ge=0)
    pcie_generation: int = Field(ge=3, le=6)
    tdp_w: float = Field(gt=0)
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")

    @model_validator(mode="after")
    def _memory_readings_cited(self) -> GpuRow:
        has_reading = self.smi_memory_mib is not None or self.runtime_memory_bytes is not None
        if has_reading and not self.memory_source:
            raise ValueError("a memory reading needs memory_source. To fix: cite where it was read, or leave it empty.")
        if self.memory_source and not has_reading:
            raise ValueError("memory_source without a reading. To fix: fill smi_memory_mib or runtime_memory_bytes.")
        if (
            self.smi_memory_mib is not None
            and self.runtime_memory_bytes is not None
            and self.runtime_memory_bytes > self.smi_memory_mib * 2**20
        ):
            raise ValueError("runtime_memory_bytes exceeds smi_memory_mib; CUDA sees at most nvidia-smi's total.")
        return self

    def spec(self) -> GpuSpec:
        return GpuSpec(
            name=self.name,
            display_name=self.display_name,
            memory_gb=self.memory_gb,
            hbm_bandwidth_gb_s=self.hbm_bandwidth_gb_s,
            fp32_tflops=self.fp32_tflops,
            tf32_tflops=self.tf32_tflops,
            bf16_tflops=self.bf16_tflops,
            fp16_tflops=self.fp16_tflops,
            fp8_tflops=self.fp8_tflops or 0.0,
            gpu_link=self.gpu_link,
            gpu_link_gb_s_bidir=self.gpu_link_gb_s_bidir,
            pcie_generation=self.pcie_generation,
            tdp_w=self.tdp_w,
            source=self.source,
            as_of=self.as_of,
            smi_memory_mib=self.smi_memory_mib,
            runtime_memory_bytes=self.runtime_memory_bytes,
            memory_source=self.memory_source,
        )


@cache
def gpus() -> dict[str, GpuSpec]:
    """All catalog GPUs by name."""
    out: dict[str, GpuSpec] = {}
    with (_DATA / "gpus.csv").open(encoding="utf-8") as handle:
        for line, raw in enumerate(csv.DictReader(handle), start=2):
            row = {k: (v if v != "" else None) for k, v in raw.items()}
            try:
                out[raw["name"]] = GpuRow.model_validate(row).spec()
            except ValidationError as exc:
                error = exc.errors()[0]
                where = error["loc"][0] if error["loc"] else "row"  # a model_validator error has no field
                raise CatalogError(
                    Msg("gpus.csv line {line}: {where}: {error}", line=line, where=where, error=error["msg"])
                ) from exc
    return out


def _normalise(name: str) -> str:
    return name.strip().lower().replace("_", "-").replace(" ", "-")


def _did_you_mean(kind: str, name: str, known: list[str], listing: str) -> UnknownNameError:
    """`listing` is the command that lists the known names (`treino gpus`)."""
    close = difflib.get_close_matches(_normalise(name), known, n=3, cutoff=0.5)
    if close:  # Msg templates (treino.i18n): the CLI says it in the user's language
        alternatives = either([repr(c) for c in close])
        return UnknownNameError(
            Msg(
                "Unknown {kind} {name!r}. Did you mean {alternatives}? To fix: run '{listing}' for the list.",
                kind=Msg(kind),
                name=name,
                alternatives=alternatives,
                listing=listing,
            )
        )
    return UnknownNameError(
        Msg(
            "Unknown {kind} {name!r}. To fix: run '{listing}' for the list.", kind=Msg(kind), name=name, listing=listing
        )
    )


def gpu(name: str) -> GpuSpec:
    table = gpus()
    key = _normalise(name)
    if key in table:
        return table[key]
    raise _did_you_mean("GPU", name, list(table), "treino gpus")


@cache
def model_names() -> list[str]:
    return sorted(p.name.removesuffix(".json") for p in _MODELS.iterdir() if p.name.endswith(".json"))


def _read_json(text: str, where: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CatalogError(
            Msg(
                "{where} is not valid JSON: {error} at line {line}, column {column}.",
                where=where,
                error=json_problem(exc),
                line=exc.lineno,
                column=exc.colno,
            )
        ) from exc
    if not isinstance(data, dict):
        raise CatalogError(Msg("{where} must hold a JSON object (a Hugging Face config.json).", where=where))
    return data


def model_config(name_or_path: str) -> dict[str, Any]:
    """A preset's config dict, or the config.json at a path (a file, or a folder holding config.json)."""
    path = Path(name_or_path)
    if name_or_path.endswith(".json") or path.is_dir() or path.exists():
        if path.is_dir():
            path = path / "config.json"
        if not path.is_file():
            raise CatalogError(
                Msg("No config file at {path!r}. To fix: give a preset name or a config.json path.", path=str(path))
            )
        return _read_json(path.read_text(encoding="utf-8"), str(path))
    key = _normalise(name_or_path)
    if key in model_names():
        return _read_json((_MODELS / f"{key}.json").read_text(encoding="utf-8"), f"preset {key}")
    if "/" in name_or_path.strip("/"):  # org/name: a Hugging Face repo id, read from the local cache only
        from treino.catalog.hf_cache import cached_config

        found = cached_config(name_or_path.strip("/"))
        return _read_json(found.read_text(encoding="utf-8"), str(found))
    raise _did_you_mean("model", name_or_path, model_names(), "treino models")


def model(name_or_path: str) -> ModelSpec:
    """A ModelSpec for a preset name or a config.json path."""
    cfg = model_config(name_or_path)
    name = Path(name_or_path).parent.name if name_or_path.endswith(".json") else _normalise(name_or_path)
    try:
        return model_from_config(cfg, name=name)
    except PlanError as exc:
        if name_or_path.endswith(".json") or Path(name_or_path).exists():
            raise type(exc)(Msg("{path}: {error}", path=name_or_path, error=message_of(exc))) from exc
        raise
