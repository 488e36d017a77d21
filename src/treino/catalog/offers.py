"""Load the price catalogs: offers (servers and instances), sites, and the BRL/USD rate.

Data files live in data/v1/ (offers.csv, sites.csv, fx.csv); every row has a source and a date. Users add
their own quotes with `load_offers_file(path)` (CSV or YAML), validated by the same schema, with errors that
name the file, line and field.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from datetime import date
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from treino.catalog.loader import _did_you_mean, _normalise, gpu, gpus
from treino.errors import CatalogError, PlanError
from treino.i18n import Msg, message_of, pydantic_msg
from treino.plan.cost import FxRate, Offer
from treino.plan.fabric import parse_fabric
from treino.plan.recommend import Candidate

_DATA = resources.files("treino.catalog") / "data" / "v1"
_DATE = r"^\d{4}-\d{2}-\d{2}$"


class OfferRow(BaseModel):
    """One row of offers.csv (schema v1), or of a user's local quotes file."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1)
    kind: Literal["dedicated", "cloud"]
    provider: str = Field(min_length=1)
    gpu: str
    gpus: int = Field(ge=1)
    cpu_cores: int | None = Field(default=None, ge=1)
    ram_gb: float | None = Field(default=None, gt=0)
    storage: str | None = None
    storage_read_gb_s: float | None = Field(default=None, gt=0)
    interconnect: Literal["nvlink", "pcie"] | None = None
    fabric: str = "none"  # between servers: 8x400g-ib, 32x100g-efa, 2x100g-eth ... (treino.plan.fabric); none
    fabric_price: float | None = Field(default=None, ge=0)  # per server, the offer's currency and period; 0 included
    fabric_source: str | None = Field(default=None, validate_default=True)  # where the offer's page states it
    nvlink_domain: int | None = Field(default=None, ge=1)  # GPUs per NVLink domain: 8 HGX, 72 NVL72
    price: float = Field(gt=0)
    currency: Literal["BRL", "USD"]
    period: Literal["month", "hour"]
    pricing: str = "on-demand"
    egress_usd_per_gb: float | None = Field(default=None, ge=0)
    site: str | None = None
    example: bool = False
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=_DATE)

    @field_validator("gpu")
    @classmethod
    def _known_gpu(cls, value: str) -> str:
        known = gpus()
        if value not in known:
            raise ValueError(message_of(_did_you_mean("GPU", value, list(known), "treino gpus")))
        return value

    @field_validator("fabric")
    @classmethod
    def _known_fabric(cls, value: str) -> str:
        try:
            return parse_fabric(value).spec
        except PlanError as exc:
            raise ValueError(message_of(exc)) from exc

    @field_validator("fabric_price")
    @classmethod
    def _priced_fabric(cls, value: float | None, info: ValidationInfo) -> float | None:
        if value is not None and info.data.get("fabric", "none") == "none":
            raise ValueError(Msg("a price without a fabric. To fix: name the fabric, or leave fabric_price empty."))
        return value

    @field_validator("fabric_source")
    @classmethod
    def _cited_fabric(cls, value: str | None, info: ValidationInfo) -> str | None:
        if info.data.get("fabric", "none") != "none" and not (value or "").strip():
            raise ValueError(
                Msg("a fabric needs the page that states it. To fix: cite it, or write fabric none (one server only).")
            )
        return value

    @field_validator("nvlink_domain")
    @classmethod
    def _nvlink_domain(cls, value: int | None, info: ValidationInfo) -> int | None:
        if value is not None and info.data.get("interconnect") != "nvlink":
            raise ValueError(
                Msg("an NVLink domain needs interconnect nvlink. To fix: leave it empty for PCIe servers.")
            )
        return value

    @field_validator("site")
    @classmethod
    def _known_site(cls, value: str | None) -> str | None:
        if value is not None and value not in sites():
            raise ValueError(message_of(_did_you_mean("site", value, list(sites()), "treino sites")))
        return value

    def offer(self) -> Offer:
        return Offer(**self.model_dump())


class Site(BaseModel):
    """One row of sites.csv: a data centre or cloud region."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    provider: str = Field(min_length=1)
    country: str = Field(pattern=r"^[A-Z]{2}$")  # ISO 3166-1 alpha-2
    city: str = Field(min_length=1)
    tier: str | None = None  # Uptime Institute tier where the operator states one
    source: str = Field(min_length=1)
    as_of: str = Field(pattern=_DATE)


class FxRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    date: str = Field(pattern=_DATE)
    base: str = Field(pattern=r"^[A-Z]{3}$")
    quote: str = Field(pattern=r"^[A-Z]{3}$")
    rate: float = Field(gt=0)
    source: str = Field(min_length=1)


def _error(where: str, line: int, exc: ValidationError, field_lines: dict[str, int] | None = None) -> CatalogError:
    first = exc.errors()[0]
    field = str(first["loc"][0]) if first["loc"] else "row"
    line = (field_lines or {}).get(field, line)
    msg: str = str(first["msg"]).removeprefix("Value error, ")
    if first["type"] == "missing":
        msg = Msg("missing; every offer needs it (a missing price or date is never taken as zero)")
    elif first["type"] == "value_error" and isinstance(first.get("ctx", {}).get("error"), ValueError):
        msg = message_of(first["ctx"]["error"])  # a validator's Msg, for the CLI to word in its language
    else:
        msg = pydantic_msg(first, msg)
    return CatalogError(
        Msg("{where} line {line}: field {field!r}: {problem}", where=where, line=line, field=field, problem=msg)
    )


def _csv_rows(handle: Iterable[str]) -> Iterable[tuple[int, dict[str, Any]]]:
    """(line number, row with empty cells as None) for each CSV record; the line is where the record starts."""
    reader = csv.DictReader(handle)
    start = 2
    for raw in reader:
        yield start, {k: (v.strip() if v.strip() != "" else None) for k, v in raw.items() if k is not None}
        start = reader.line_num + 1


def _offers_from_csv(handle: Iterable[str], where: str) -> dict[str, Offer]:
    out: dict[str, Offer] = {}
    for line, row in _csv_rows(handle):
        out_row = _validate(row, where, line)
        _add(out, out_row, where, line)
    return out


def _validate(row: dict[str, Any], where: str, line: int, field_lines: dict[str, int] | None = None) -> Offer:
    try:
        return OfferRow.model_validate(row).offer()
    except ValidationError as exc:
        raise _error(where, line, exc, field_lines) from exc
    except PlanError as exc:
        raise CatalogError(Msg("{where} line {line}: {error}", where=where, line=line, error=message_of(exc))) from exc


def _add(out: dict[str, Offer], offer: Offer, where: str, line: int) -> None:
    if offer.name in out:
        raise CatalogError(
            Msg(
                "{where} line {line}: field 'name': offer {name!r} appears twice.",
                where=where,
                line=line,
                name=offer.name,
            )
        )
    out[offer.name] = offer


@cache
def offers() -> dict[str, Offer]:
    """All catalog offers by name (the shipped offers.csv; the BRL dedicated rows are examples)."""
    with (_DATA / "offers.csv").open(encoding="utf-8") as handle:
        return _offers_from_csv(handle, "offers.csv")


def offer(name: str) -> Offer:
    table = offers()
    key = _normalise(name)
    if key in table:
        return table[key]
    raise _did_you_mean("offer", name, list(table), "treino offers")


@cache
def sites() -> dict[str, Site]:
    """All data-centre sites and cloud regions by name."""
    out: dict[str, Site] = {}
    with (_DATA / "sites.csv").open(encoding="utf-8") as handle:
        for line, row in _csv_rows(handle):
            try:
                out[row["name"]] = Site.model_validate(row)
            except ValidationError as exc:
                raise _error("sites.csv", line, exc) from exc
    return out


def site(name: str) -> Site:
    table = sites()
    key = _normalise(name)
    if key in table:
        return table[key]
    raise _did_you_mean("site", name, list(table), "treino sites")


@cache
def _fx_rows() -> list[FxRow]:
    rows: list[FxRow] = []
    with (_DATA / "fx.csv").open(encoding="utf-8") as handle:
        for line, row in _csv_rows(handle):
            try:
                rows.append(FxRow.model_validate(row))
            except ValidationError as exc:
                raise _error("fx.csv", line, exc) from exc
    return rows


def fx_rate(base: str = "USD", quote: str = "BRL", on: str | None = None) -> FxRate:
    """The latest dated `quote` per `base` rate in fx.csv (on or before `on`, YYYY-MM-DD, if given)."""
    if (base, quote) != ("USD", "BRL"):
        raise CatalogError(Msg("Only BRL per USD rates are supported, not {quote} per {base}.", quote=quote, base=base))
    rows = [r for r in _fx_rows() if (r.base, r.quote) == (base, quote) and (on is None or r.date <= on)]
    if not rows:
        when = Msg(" on or before {on}", on=on) if on else ""
        raise CatalogError(
            Msg(
                "No {quote} per {base} rate in fx.csv{when}. To fix: add a dated row with its source (e.g. the Banco "
                "Central PTAX); treino never assumes a rate.",
                quote=quote,
                base=base,
                when=when,
            )
        )
    latest = max(rows, key=lambda r: r.date)
    return FxRate(brl_per_usd=latest.rate, date=latest.date, source=latest.source)


def _yaml_offers(path: Path) -> dict[str, Offer]:
    where = str(path)
    text = path.read_text(encoding="utf-8")
    try:
        root = yaml.compose(text)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise CatalogError(Msg("{where} is not valid YAML: {error}", where=where, error=str(exc))) from exc
    if isinstance(data, dict) and "offers" in data:
        data = data["offers"]
        assert isinstance(root, yaml.MappingNode)
        root = next(v for k, v in root.value if k.value == "offers")
    if not isinstance(data, list) or not isinstance(root, yaml.SequenceNode):
        raise CatalogError(
            Msg(
                "{where} must hold a list of offers (or 'offers:' with a list). To fix: see the fields of "
                "`treino offers --json`.",
                where=where,
            )
        )
    out: dict[str, Offer] = {}
    for item, node in zip(data, root.value, strict=True):
        line = node.start_mark.line + 1
        if not isinstance(item, dict) or not isinstance(node, yaml.MappingNode):
            raise CatalogError(
                Msg("{where} line {line}: each offer must be a mapping of field: value.", where=where, line=line)
            )
        field_lines = {str(k.value): k.start_mark.line + 1 for k, _ in node.value}
        # YAML reads 2026-11-20 as a date; the schema wants the ISO string
        row = {str(k): (None if v == "" else v.isoformat() if isinstance(v, date) else v) for k, v in item.items()}
        _add(out, _validate(row, where, line, field_lines), where, line)
    return out


def load_offers_file(path: str | Path) -> dict[str, Offer]:
    """A user's own quotes (CSV with offers.csv's columns, or YAML), validated like the catalog."""
    path = Path(path)
    if not path.is_file():
        raise CatalogError(Msg("No offers file at {path!r}. To fix: give a .csv or .yaml path.", path=str(path)))
    if path.suffix.lower() in {".yaml", ".yml"}:
        return _yaml_offers(path)
    if path.suffix.lower() == ".csv":
        with path.open(encoding="utf-8", newline="") as handle:
            return _offers_from_csv(handle, str(path))
    raise CatalogError(Msg("{path!r}: offers files must end in .csv, .yaml or .yml.", path=str(path)))


def candidate(name: str, local: dict[str, Offer] | None = None) -> Candidate:
    """An offer (from `local` quotes first, then the catalog) with its GPU and its site's country."""
    found = (local or {}).get(name) or offer(name)
    where = sites().get(found.site) if found.site else None
    return Candidate(found, gpu(found.gpu), where.country if where else None)


def candidates(offers_file: str | Path | None = None) -> list[Candidate]:
    """Every catalog offer, plus a user's quotes file, ready for the recommender."""
    table = dict(offers())
    if offers_file:
        table.update(load_offers_file(offers_file))
    return [candidate(name, table) for name in table]
