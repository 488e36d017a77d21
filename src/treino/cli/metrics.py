"""`treino metrics ID [--csv|--json]` and `treino show ID --metric NAME`: a job's metrics, every key it logged.

    treino metrics 12            each key: points, steps, last, min, max and a sparkline
    treino metrics 12 --csv      every point: step,time,<key>,... (a key the point lacks: empty; NaN or inf: nan)
    treino metrics 12 --json     {"job": 12, "keys": [...], "points": [{"step", "time", "values"}]}
    treino show 12 --metric lr   one key: a sparkline, last/min/max and a few of its points

A key the job never logged is an error (exit code 1) naming the keys it did log. Per-key reads use
/api/v1/jobs/{id}/metrics/keys and .../series (treino.server.metric_series); --csv and --json read every raw point
from /api/v1/jobs/{id}/metrics, a page of METRIC_POINTS_MAX at a time.
"""

from __future__ import annotations

import csv
import sys
from typing import Annotated, Any

import typer

from treino.cli.client import JsonOpt, ServerClient, TokenOpt, UrlOpt, _client, _print_json, sparkline
from treino.errors import TreinoError, UsageError
from treino.i18n import N_, Msg, tr
from treino.server.settings import METRIC_POINTS_MAX, METRIC_SERIES_KEYS_MAX

METRIC_ROWS_SHOWN = 10  # points `show --metric` lists, evenly spaced, the first and last included
SPARK_POINTS = 240  # points asked per key for a sparkline (the server downsamples longer series to these)


# --- reading ---------------------------------------------------------------------------------------------------------
def metric_keys(client: ServerClient, job_id: int) -> list[dict[str, Any]]:
    return client.request("GET", f"/api/v1/jobs/{job_id}/metrics/keys")["keys"]  # type: ignore[no-any-return]


def metric_series(client: ServerClient, job_id: int, keys: list[str], max_points: int) -> list[dict[str, Any]]:
    """The series of `keys` (any number: asked METRIC_SERIES_KEYS_MAX at a time), each at most `max_points`."""
    found: list[dict[str, Any]] = []
    for i in range(0, len(keys), METRIC_SERIES_KEYS_MAX):
        params = {"key": keys[i : i + METRIC_SERIES_KEYS_MAX], "max_points": max_points}
        found += client.request("GET", f"/api/v1/jobs/{job_id}/metrics/series", params=params)["series"]
    return found


def every_point(client: ServerClient, job_id: int) -> list[dict[str, Any]]:
    """Every raw point, in step order. The server answers at most METRIC_POINTS_MAX points with a step above
    `since_step`; a full page may end partway through a step's points, so its last step is asked again."""
    points: list[dict[str, Any]] = []
    since = -1
    while True:
        answer = client.request("GET", f"/api/v1/jobs/{job_id}/metrics", params={"since_step": since})
        page: list[dict[str, Any]] = answer["points"]
        if len(page) < METRIC_POINTS_MAX:
            return points + page
        whole = [p for p in page if p["step"] < page[-1]["step"]]
        if not whole:
            raise TreinoError(
                Msg(
                    "Job {job_id} logged more than {most:,} points at step {step}: they do not fit one page. To fix: "
                    "read them with 'treino show {job_id} --metric NAME', one key at a time.",
                    job_id=job_id,
                    most=METRIC_POINTS_MAX,
                    step=page[-1]["step"],
                )
            )
        points += whole
        since = whole[-1]["step"]


# --- rendering (pure) ------------------------------------------------------------------------------------------------
def csv_rows(points: list[dict[str, Any]], keys: list[str]) -> list[list[str]]:
    """The header (step,time,<keys>) and one row per point; a key the point lacks is empty, a null (NaN or inf in
    the training process) is 'nan'."""
    rows = [["step", "time", *keys]]
    for p in points:
        values = p["values"]
        cells = ["" if k not in values else ("nan" if values[k] is None else repr(values[k])) for k in keys]
        rows.append([str(p["step"]), repr(p["time"]), *cells])
    return rows


def evenly(n: int, shown: int) -> list[int]:
    """`shown` indexes of 0..n-1 spread evenly, the first and last included (all of them when n <= shown)."""
    if n <= shown:
        return list(range(n))
    return sorted({round(i * (n - 1) / (shown - 1)) for i in range(shown)})


def _g(value: float | None) -> str:
    return "nan" if value is None else format(value, ".6g")


# --- commands --------------------------------------------------------------------------------------------------------
def metrics(
    job_id: Annotated[int, typer.Argument(help="Job id, from 'treino jobs'.")],
    as_csv: Annotated[bool, typer.Option("--csv", help="Every point as CSV: step,time,<key>,...")] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Every metric a job logged: a summary of each key, or every point with --csv or --json."""
    if as_csv and as_json:
        raise UsageError(Msg("--csv and --json are two formats of the same points. To fix: give one of them."))
    with _client(url, token) as client:
        keys = metric_keys(client, job_id)
        if as_csv or as_json:
            points = every_point(client, job_id)
        else:
            spark = {s["key"]: s for s in metric_series(client, job_id, [k["key"] for k in keys], SPARK_POINTS)}
    names = [k["key"] for k in keys]
    if as_json:
        _print_json({"job": job_id, "keys": names, "points": points})
        return
    if as_csv:
        csv.writer(sys.stdout, lineterminator="\n").writerows(csv_rows(points, names))
        return
    if not keys:
        typer.echo(tr("Job {id} has logged no metrics yet.", id=job_id))
        return
    from rich.table import Table
    from rich.text import Text

    from treino.cli.render import console

    table = Table(title=tr("job {id}: {n} metric key(s)", id=job_id, n=len(keys)), title_justify="left")
    for col in (N_("key"), N_("points"), N_("steps"), N_("last"), N_("min"), N_("max"), N_("curve")):
        table.add_column(tr(col), justify="left" if col in ("key", "curve") else "right", no_wrap=col != "key")
    for k in keys:
        values = [v for v in spark[k["key"]]["value"] if v is not None]
        table.add_row(
            Text(k["key"]),  # a key is the job's text, never Rich markup: '[/]' or '[link=...]' prints as typed
            str(k["points"]),
            f"{k['first_step']}..{k['last_step']}",
            _g(k["last"]),
            _g(k["min"]),
            _g(k["max"]),
            sparkline(values, 30),
        )
    console().print(table)
    typer.echo(tr("One key: treino show {id} --metric NAME · every point: treino metrics {id} --csv", id=job_id))


def show_metric(client: ServerClient, job_id: int, key: str, as_json: bool) -> None:
    """`treino show ID --metric NAME`: that key's curve, last/min/max, and METRIC_ROWS_SHOWN of its points."""
    from treino.server.settings import METRIC_SERIES_POINTS_DEFAULT

    (series,) = metric_series(client, job_id, [key], METRIC_SERIES_POINTS_DEFAULT)
    if as_json:
        _print_json(series)
        return
    from rich.table import Table
    from rich.text import Text

    from treino.cli.render import console

    out = console()
    steps, values = series["step"], series["value"]
    finite = [(v, s) for s, v in zip(steps, values, strict=True) if v is not None]
    head = tr(
        "Job {id}: {key}, {n} point(s), steps {first}..{last}",
        id=job_id,
        key=key,
        n=series["points"],
        first=series["first_step"],
        last=series["last_step"],
    )
    thinned = tr(" (shown: {n}, each stretch's min and max)", n=len(steps)) if series["downsampled"] else ""
    out.print(Text(head + thinned, style="bold"))
    out.print(Text(f"{key}  {sparkline([v for v, _ in finite])}", style="cyan"))
    parts = [tr("last {value} (step {step})", value=_g(series["last"]), step=series["last_step"])]
    if finite:
        low, high = min(finite), max(finite)
        parts += [
            tr("min {value} (step {step})", value=_g(low[0]), step=low[1]),
            tr("max {value} (step {step})", value=_g(high[0]), step=high[1]),
        ]
    out.print(" · ".join(parts), highlight=False)
    table = Table(show_edge=False)
    table.add_column(tr("step"), justify="right")
    table.add_column(Text(key), justify="right")
    for i in evenly(len(steps), METRIC_ROWS_SHOWN):
        table.add_row(str(steps[i]), _g(values[i]))
    out.print(table)
