"""`treino usage` (GPU-hours and their cost in BRL) and `treino quotas set | list`, over the server's API
(treino.server.api.routes.usage)."""

from __future__ import annotations

import csv
import datetime as dt
import io
from typing import Annotated, Any

import typer

from treino.cli.client import JsonOpt, TokenOpt, UrlOpt, _client, _print_json
from treino.errors import UsageError
from treino.i18n import N_, Msg, current, from_server, tr

quotas_app = typer.Typer(no_args_is_help=True, help="Limits on users' and roles' GPUs: GPU-hours a month, at once.")
CSV_COLUMNS = ("key", "user", "purpose", "job_id", "job_name", "jobs", "gpu_hours", "cost_brl")


def _day(ts: float) -> str:
    """2026-12-01 00:00, or 01/12/2026 00:00 in pt-BR."""
    return dt.datetime.fromtimestamp(ts).strftime("%d/%m/%Y %H:%M" if current().pt else "%Y-%m-%d %H:%M")


def usage_csv(report: dict[str, Any]) -> str:
    """One line per row, numbers as numbers (a point for decimals: spreadsheets and scripts read it as is)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for row in report["rows"]:
        cost = row["cost_brl"]
        writer.writerow(
            [
                *(row[c] if row[c] is not None else "" for c in CSV_COLUMNS[:6]),
                f"{row['gpu_hours']:.4f}",
                "" if cost is None else f"{cost:.2f}",
            ]
        )
    return out.getvalue()


def quota_line(q: dict[str, Any]) -> str:
    """'Quota (role engineer): 3.20 of 500 GPU-hours this month (resets 2027-01-01 00:00); 1 of 4 GPUs held at
    once.'"""
    used = q["used_gpu_hours_month"]
    hours = (
        tr("{used:.2f} GPU-hours used this month, no limit", used=used)
        if q["gpu_hours_month"] is None
        else tr("{used:.2f} of {limit:g} GPU-hours this month", used=used, limit=q["gpu_hours_month"])
    )
    gpus = (
        tr("{n} GPU(s) held now, no limit at once", n=q["gpus_running"])
        if q["concurrent_gpus"] is None
        else tr("{n} of {limit} GPUs held at once", n=q["gpus_running"], limit=q["concurrent_gpus"])
    )
    return tr(
        "Quota ({set_for}): {hours} (resets {resets}); {gpus}.",
        set_for=q["set_for"],
        hours=hours,
        resets=_day(q["resets_at"]),
        gpus=gpus,
    )


def usage(
    since: Annotated[
        str | None,
        typer.Option("--since", help="From a date (2026-11-01) or a duration back (30d, 12h). Default: this month."),
    ] = None,
    by: Annotated[str, typer.Option("--by", help="Group by user, purpose or job.")] = "user",
    user: Annotated[str | None, typer.Option("--user", help="One user's usage (admins; others see their own).")] = None,
    as_csv: Annotated[bool, typer.Option("--csv", help="CSV on stdout (cost_brl with a decimal point).")] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """GPU-hours per user, purpose or job, and what they cost in BRL at the server's price (treino server --offer
    or --gpu-hour-brl). Running jobs count up to now."""
    if by not in ("user", "purpose", "job"):
        raise UsageError(Msg("--by {by!r}: not user, purpose or job. To fix: e.g. --by purpose.", by=by))
    params = {k: v for k, v in {"since": since, "by": by, "user": user}.items() if v is not None}
    with _client(url, token) as client:
        report = client.request("GET", "/api/v1/usage", N_("the usage"), params=params)
    if as_json:
        _print_json(report)
        return
    if as_csv:
        typer.echo(usage_csv(report), nl=False)
        return
    from rich.table import Table

    from treino.cli.render import console
    from treino.plan.cost import format_brl

    priced = report["brl_per_gpu_hour"] is not None
    heading = tr(
        "GPU usage of {scope}, {since} to {until}, by {by}",
        scope=tr("everyone") if report["scope"] == "everyone" else report["scope"],
        since=_day(report["since"]),
        until=_day(report["until"]),
        by=Msg(report["by"]),
    )
    table = Table()
    names = {
        "user": (N_("user"),),
        "purpose": (N_("purpose"),),
        "job": (N_("job"), N_("name"), N_("user"), N_("purpose")),
    }[report["by"]]
    for name in names:
        table.add_column(tr(name), overflow="fold")
    for name in (N_("jobs"), N_("GPU-hours"), *((N_("cost"),) if priced else ())):
        table.add_column(tr(name), justify="right")
    for row in report["rows"]:
        keys = (
            (row["key"],)
            if report["by"] != "job"
            else (str(row["job_id"]), row["job_name"] or "", row["user"] or "", row["purpose"] or "")
        )
        cost = (format_brl(row["cost_brl"]),) if priced else ()
        table.add_row(*keys, str(row["jobs"]), tr("{n:.2f}", n=row["gpu_hours"]), *cost)
    total_cost = (format_brl(report["cost_brl"]),) if priced else ()
    hours = tr("{n:.2f}", n=report["gpu_hours"])
    table.add_row(*(tr("total"), *[""] * (len(names) - 1)), "", hours, *total_cost, style="bold")
    out = console()
    out.print(heading, highlight=False)
    out.print(table, highlight=False)
    out.print(
        tr("Price: {basis}", basis=from_server(report["price_basis"], report.get("price_basis_msg")))
        if priced
        else tr(
            "No price is set: GPU-hours only. To price them: "
            "treino server --offer ID (see treino offers) or --gpu-hour-brl 12.50."
        ),
        highlight=False,
        soft_wrap=False,
    )
    out.print(tr("Source: {note}", note=tr(report["source_note"])), highlight=False)
    if (quota := report.get("quota")) is not None:
        out.print(quota_line(quota), highlight=False)
    for held in report["held"]:
        out.print(
            tr(
                "Job {id} ({owner}) waits: {reason}",
                id=held["job_id"],
                owner=held["owner"],
                reason=from_server(held["reason"], held.get("reason_msg")),
            ),
            highlight=False,
        )


@quotas_app.command("set")
def quotas_set(
    user: Annotated[str | None, typer.Option("--user", help="The user the quota is for.")] = None,
    role: Annotated[str | None, typer.Option("--role", help="Or the role (a user's own quota wins).")] = None,
    gpu_hours_month: Annotated[
        float | None, typer.Option("--gpu-hours-month", min=0, help="GPU-hours per calendar month.")
    ] = None,
    concurrent_gpus: Annotated[
        int | None, typer.Option("--concurrent-gpus", min=0, help="GPUs held at once; more waits in the queue.")
    ] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Set a user's or a role's quota (admins). A limit left out is no limit; with neither, the quota is removed."""
    if (user is None) == (role is None):
        raise UsageError(Msg("Give --user NAME or --role ROLE (one of them). To fix: e.g. --user ana."))
    body = {"user": user, "role": role, "gpu_hours_month": gpu_hours_month, "concurrent_gpus": concurrent_gpus}
    with _client(url, token) as client:
        row = client.request("PUT", "/api/v1/quotas", N_("the quota"), json=body)
    if as_json:
        _print_json(row)
        return
    if gpu_hours_month is None and concurrent_gpus is None:
        typer.echo(tr("Removed the quota of {kind} {name}.", kind=Msg(row["kind"]), name=row["name"]))
        return
    typer.echo(tr("Quota of {kind} {name}: {limits}.", kind=Msg(row["kind"]), name=row["name"], limits=_limits(row)))


def _limits(row: dict[str, Any]) -> str:
    hours = row["gpu_hours_month"]
    gpus = row["concurrent_gpus"]
    month = tr("no limit on GPU-hours a month") if hours is None else tr("{n:g} GPU-hours a month", n=hours)
    once = tr("no limit on GPUs at once") if gpus is None else tr("{n} GPUs at once", n=gpus)
    return f"{month}, {once}"


@quotas_app.command("list")
def quotas_list(as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """Every quota (admins)."""
    with _client(url, token) as client:
        rows = client.request("GET", "/api/v1/quotas", N_("the quotas"))["quotas"]
    if as_json:
        _print_json(rows)
        return
    from rich.table import Table

    from treino.cli.render import console

    table = Table(title=tr("{n} quota(s)", n=len(rows)), title_justify="left")
    for name in (N_("for"), N_("GPU-hours/month"), N_("GPUs at once"), N_("set by"), N_("set")):
        table.add_column(tr(name), justify="right" if name.startswith("GPU") else "left", overflow="fold")
    for q in rows:
        table.add_row(
            f"{tr(q['kind'])} {q['name']}",
            "-" if q["gpu_hours_month"] is None else f"{q['gpu_hours_month']:g}",
            "-" if q["concurrent_gpus"] is None else str(q["concurrent_gpus"]),
            q["set_by"],
            _day(q["set_at"]),
        )
    console().print(table, highlight=False)


def register(app: typer.Typer) -> None:
    """`treino usage` and `treino quotas` on the CLI's app."""
    app.command("usage")(usage)
    app.add_typer(quotas_app, name="quotas")
