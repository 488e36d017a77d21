"""`treino offers | sites`: the price catalog's offers and its data centres, and `--fx-rate` for the commands that
turn USD prices into BRL."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import date
from typing import TYPE_CHECKING, Annotated

import typer

from treino.errors import UsageError
from treino.i18n import N_, Msg, tr

if TYPE_CHECKING:
    from treino.plan.cost import FxRate, Offer

FX_GIVEN_SOURCE = "--fx-rate, given by you"
HOURS_PER_MONTH = 730  # the catalog's month (offers.csv: 730 h), to set monthly and hourly prices side by side

FxRateOpt = Annotated[
    float | None,
    typer.Option(
        "--fx-rate",
        help="BRL per USD for converting USD prices, instead of the catalog's dated rate (e.g. 5.40).",
        min=0.01,
    ),
]


def fx_rate(given: float | None) -> FxRate:
    """The rate to convert with: `--fx-rate` when given, else the catalog's latest dated one."""
    from treino.catalog import offers as offer_catalog
    from treino.plan.cost import FxRate

    if given is None:
        return offer_catalog.fx_rate()
    if not given > 0:  # also NaN
        raise UsageError(
            Msg(
                "--fx-rate must be a positive number of BRL per USD, got {given}. To fix: e.g. --fx-rate 5.4.",
                given=given,
            )
        )
    return FxRate(brl_per_usd=given, date=date.today().isoformat(), source=FX_GIVEN_SOURCE)


def fx_line(fx: FxRate) -> str:
    """The rate a command used and where it came from, for its output."""
    if fx.source == FX_GIVEN_SOURCE:
        return tr("Rate: {rate:g} BRL/USD (--fx-rate, given by you).", rate=fx.brl_per_usd)
    return tr(
        "Rate: {rate:g} BRL/USD on {date} (catalog fx.csv: {source}).",
        rate=fx.brl_per_usd,
        date=fx.date,
        source=fx.source,
    )


def fx_json(fx: FxRate) -> dict[str, object]:
    return {"brl_per_usd": fx.brl_per_usd, "date": fx.date, "source": fx.source}


def _price(offer: Offer) -> str:
    from treino.plan.cost import format_brl

    if offer.currency == "BRL":
        return format_brl(offer.price) + (tr("/month") if offer.period == "month" else "/h")
    return tr("US$ {price:,.2f}", price=offer.price) + (tr("/month") if offer.period == "month" else "/h")


def _brl_per_gpu_hour(offer: Offer, fx: FxRate) -> float:
    brl = offer.price * (fx.brl_per_usd if offer.currency == "USD" else 1.0)
    hourly = brl / HOURS_PER_MONTH if offer.period == "month" else brl
    return hourly / offer.gpus


def offers_cmd(
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="Only offers with this GPU (see 'treino gpus').")] = "",
    kind: Annotated[str, typer.Option("--kind", help="Only dedicated or cloud offers.")] = "",
    country: Annotated[str, typer.Option("--country", help="Only offers at a site in this country (ISO-2).")] = "",
    offers_file: Annotated[
        str, typer.Option("--offers", help="Your own quotes (CSV or YAML), listed with the catalog.")
    ] = "",
    sources: Annotated[bool, typer.Option("--sources", help="Print each price's source under the table.")] = False,
    fx_given: FxRateOpt = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output, every field.")] = False,
) -> None:
    """The catalog's offers: servers and instances, where they are, their GPUs and their dated prices."""
    from treino.catalog import gpu as find_gpu
    from treino.catalog import offers as offer_catalog
    from treino.plan.cost import format_brl
    from treino.plan.fabric import parse_fabric

    if kind not in ("", "dedicated", "cloud"):
        raise UsageError(Msg("Unknown --kind {kind!r}. To fix: use dedicated or cloud.", kind=kind))
    table = dict(offer_catalog.offers())
    if offers_file:
        table.update(offer_catalog.load_offers_file(offers_file))
    sites = offer_catalog.sites()
    gpu_name = find_gpu(gpu).name if gpu else ""
    rows = [
        o
        for o in table.values()
        if (not gpu_name or o.gpu == gpu_name)
        and (not kind or o.kind == kind)
        and (not country or (o.site is not None and sites[o.site].country == country.upper()))
    ]
    fx = fx_rate(fx_given)
    if as_json:
        listed = [
            {
                **asdict(o),
                "country": sites[o.site].country if o.site else None,
                "brl_per_gpu_hour": _brl_per_gpu_hour(o, fx),
            }
            for o in rows
        ]
        typer.echo(json.dumps({"offers": listed, "fx": fx_json(fx)}, indent=2, ensure_ascii=False))
        return
    from rich.table import Table
    from rich.text import Text

    from treino.cli.render import console, identity_column

    # Four columns, so 80 characters hold them: under each offer's name its provider and site, under its GPUs the
    # network between servers, under its price the price's date; the name is never cut.
    grid = Table(title=tr("{n} offer(s)", n=len(rows)), title_justify="left", show_edge=False)
    identity_column(grid, tr("offer"))
    grid.add_column(tr("GPUs"))
    grid.add_column(tr("price, as of"), justify="right", no_wrap=True)
    grid.add_column(tr("R$/GPU-h"), justify="right", no_wrap=True)
    for o in rows:
        where = f"{o.site} ({sites[o.site].country})" if o.site else tr("no site on record")
        name = Text(o.name, style="bold")
        name.append(f"\n{o.provider}, {where}", style="dim")
        price = Text(_price(o))
        price.append(f"\n{o.as_of}" + (" *" if o.example else ""), style="dim")
        gpus = Text(f"{o.gpus}× {o.gpu}")
        network = parse_fabric(o.fabric)  # under the GPUs, the network between servers: its offer's own words
        gpus.append("\n" + (network.short if network.kind != "none" else tr("single server")), style="dim")
        grid.add_row(name, gpus, price, format_brl(_brl_per_gpu_hour(o, fx)))
    out = console()
    out.print(grid)
    if any(o.example for o in rows):
        out.print(
            Text(tr("* an illustrative example price, not a quote: add your own with --offers FILE"), style="dim")
        )
    out.print(Text(fx_line(fx), style="dim"))
    if sources:
        for o in rows:
            out.print(Text(f"{o.name}: {o.source}", style="dim"))
    else:
        out.print(Text(tr("Where each price comes from: treino offers --sources (or --json)."), style="dim"))


def sites_cmd(
    country: Annotated[str, typer.Option("--country", help="Only sites in this country (ISO-2).")] = "",
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """The catalog's sites: data centres and cloud regions, with their country (for --residency)."""
    from treino.catalog import offers as offer_catalog

    rows = [s for s in offer_catalog.sites().values() if not country or s.country == country.upper()]
    if as_json:
        typer.echo(json.dumps([s.model_dump() for s in rows], indent=2, ensure_ascii=False))
        return
    from rich.table import Table

    from treino.cli.render import console, identity_column

    grid = Table(title=tr("{n} site(s)", n=len(rows)), title_justify="left", show_edge=False)
    identity_column(grid, tr("site"))
    for col in (N_("provider"), N_("country"), N_("city"), N_("tier"), N_("as of")):
        grid.add_column(tr(col))
    for s in rows:
        grid.add_row(s.name, s.provider, s.country, s.city, s.tier or "-", s.as_of)
    console().print(grid)
