"""`treino submit | jobs | show | logs | cancel`: the job server's client, over its HTTP API (treino.server.api).

The server and token come from, first to last: `--url`/`--token`, the TREINO_URL/TREINO_TOKEN environment variables,
then `url:`/`token:` in $XDG_CONFIG_HOME/treino/config.yaml (default ~/.config/treino/config.yaml).
Every failure is a TreinoError, so the CLI prints one red line and exits with code 1 (2 for a bad option).
"""

from __future__ import annotations

import json
import os
import secrets
import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
import yaml

from treino.errors import JobError, TreinoError
from treino.i18n import N_, Joined, Msg, current, from_data, tr
from treino.server.settings import PAGE_MAX, SUBMIT_BACKOFF_S, SUBMIT_TRIES
from treino.server.states import JobState

if TYPE_CHECKING:  # httpx is imported when a command talks to a server, not for every `treino` command
    import httpx

DEFAULT_URL = "http://127.0.0.1:8765"
HTTP_TIMEOUT_S = 10.0
LOG_POLL_S = 0.5  # `treino logs -f`: how often to ask for new output
SPARK_WIDTH_CHARS = 60
SPARK_BLOCKS = "▁▂▃▄▅▆▇█"
STATE_STYLES = {
    "queued": "yellow",
    "running": "bold green",
    "stopping": "magenta",
    "succeeded": "green",
    "failed": "bold red",
    "cancelled": "dim",
}

UrlOpt = Annotated[str | None, typer.Option("--url", help="Server URL (else TREINO_URL, the config file).")]
TokenOpt = Annotated[str | None, typer.Option("--token", help="API token (else TREINO_TOKEN, the config file).")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Machine-readable output.")]


# --- server and token ----------------------------------------------------------------------------------------
def config_path() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "treino" / "config.yaml"


def _config() -> dict[str, Any]:
    path = config_path()
    try:
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError:
        return {}
    except (OSError, yaml.YAMLError) as exc:
        raise TreinoError(
            Msg("Cannot read {path}: {error}. To fix: write it as YAML with 'url:' and 'token:'.", path=path, error=exc)
        ) from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise TreinoError(
            Msg("{path} must hold a mapping with 'url:' and 'token:', not {kind}.", path=path, kind=type(data).__name__)
        )
    return data


def resolve_server(url: str | None, token: str | None) -> tuple[str, str]:
    """(url, token): options first, then the environment, then the config file; the URL defaults to DEFAULT_URL."""
    config = _config() if not (url and token) else {}
    url = url or os.environ.get("TREINO_URL") or str(config.get("url") or "") or DEFAULT_URL
    token = token or os.environ.get("TREINO_TOKEN") or str(config.get("token") or "")
    if not token:
        raise TreinoError(
            Msg(
                "No API token for {url}. The server writes its admin token to 'admin-token' in its data dir "
                "(default ~/.local/share/treino/admin-token; /var/lib/treino/admin-token for a root server) and "
                "prints it at its first start. To fix: pass it with --token, set TREINO_TOKEN, or add 'token: ...' to "
                "{config}.",
                url=url,
                config=config_path(),
            )
        )
    return url.rstrip("/"), token


class ServerClient:
    """The job server's HTTP API; every failure comes out as a TreinoError whose message says how to fix it."""

    def __init__(self, url: str, token: str) -> None:
        import httpx

        self.url = url
        self._http = httpx.Client(base_url=url, headers={"Authorization": f"Bearer {token}"}, timeout=HTTP_TIMEOUT_S)

    def __enter__(self) -> ServerClient:
        return self

    def __exit__(self, *_exc: object) -> None:
        self._http.close()

    def request(self, method: str, path: str, what: str = N_("the request"), **kwargs: Any) -> Any:
        """The response's JSON body."""
        return self._send(method, path, what, **kwargs).json()

    def request_text(self, method: str, path: str, what: str = N_("the request"), **kwargs: Any) -> str:
        """The response's body as text (CSV, JSON lines, Markdown)."""
        return self._send(method, path, what, **kwargs).text

    def _send(self, method: str, path: str, what: str, tries: int = 1, **kwargs: Any) -> httpx.Response:
        """The response, or a TreinoError. With `tries` > 1, a request that never got an answer (no connection, the
        connection dropped, a timeout) is sent again after SUBMIT_BACKOFF_S, doubled each time: only for requests
        that are safe to repeat (a submit with its Idempotency-Key)."""
        import httpx

        unanswered = (httpx.ConnectError, httpx.ReadError, httpx.WriteError, httpx.RemoteProtocolError)
        for attempt in range(1, tries + 1):
            try:
                response = self._http.request(method, path, **kwargs)
                break
            except (*unanswered, httpx.TimeoutException) as exc:
                if attempt == tries:
                    raise self._transport_error(exc) from exc
                time.sleep(SUBMIT_BACKOFF_S * 2 ** (attempt - 1))
            except httpx.HTTPError as exc:
                raise self._transport_error(exc) from exc
        if response.is_success:
            return response
        raise _http_error(response, what)

    def _transport_error(self, exc: Exception) -> TreinoError:
        import httpx

        if isinstance(exc, httpx.ConnectError):
            return TreinoError(
                Msg("No treino server at {url}. To fix: start one with 'treino server' or pass --url.", url=self.url)
            )
        if isinstance(exc, httpx.TimeoutException):
            return TreinoError(
                Msg(
                    "The treino server at {url} did not answer within {timeout_s:g} s.",
                    url=self.url,
                    timeout_s=HTTP_TIMEOUT_S,
                )
            )
        if isinstance(exc, httpx.InvalidURL | httpx.UnsupportedProtocol):
            return TreinoError(
                Msg(
                    "Cannot use the server URL {url!r}: {error}. To fix: e.g. {default}.",
                    url=self.url,
                    error=exc,
                    default=DEFAULT_URL,
                )
            )
        return TreinoError(Msg("Talking to the treino server at {url} failed: {error}", url=self.url, error=exc))

    def every(self, path: str, key: str) -> list[dict[str, Any]]:
        """Every row of a paged list (`key` of each page), following its `next` cursor: newest first."""
        rows: list[dict[str, Any]] = []
        params: dict[str, Any] = {"limit": PAGE_MAX}
        while True:
            page = self.request("GET", path, params=params)
            rows += page[key]
            if page.get("next") is None:
                return rows
            params["before_id"] = page["next"]

    def submit(self, spec: dict[str, Any], what: str = N_("the job spec")) -> dict[str, Any]:
        """Submitted once, however many tries it takes: every try carries the same fresh Idempotency-Key, so a
        retry after a dropped connection returns the job the first try made instead of making another."""
        headers = {"Idempotency-Key": secrets.token_urlsafe(24)}
        response = self._send("POST", "/api/v1/jobs", what, tries=SUBMIT_TRIES, json=spec, headers=headers)
        return response.json()  # type: ignore[no-any-return]

    def jobs(self, state: str | None, limit: int, before_id: int | None = None) -> dict[str, Any]:
        """A page of job summaries, newest first: {"jobs": [...], "next": the next page's before_id or None}."""
        params: dict[str, Any] = {"limit": limit, **({"state": state} if state else {})}
        if before_id is not None:
            params["before_id"] = before_id
        return self.request("GET", "/api/v1/jobs", params=params)  # type: ignore[no-any-return]

    def job(self, job_id: int) -> dict[str, Any]:
        return self.request("GET", f"/api/v1/jobs/{job_id}")  # type: ignore[no-any-return]

    def cancel(self, job_id: int) -> dict[str, Any]:
        return self.request("POST", f"/api/v1/jobs/{job_id}/cancel")  # type: ignore[no-any-return]

    def logs(self, job_id: int, attempt: int | None, offset: int) -> dict[str, Any]:
        params = {"offset": offset, **({"attempt": attempt} if attempt else {})}
        return self.request("GET", f"/api/v1/jobs/{job_id}/logs", params=params)  # type: ignore[no-any-return]

    def metrics(self, job_id: int) -> list[dict[str, Any]]:
        return self.request("GET", f"/api/v1/jobs/{job_id}/metrics")["points"]  # type: ignore[no-any-return]


def _http_error(response: httpx.Response, what: str) -> TreinoError:
    """The server's `detail` as the message: a string (401, 404, 409), a list of {field, message} (422), or a
    policy refusal {rule, message} (403), shown as 'refused (rule): message'. A message the server also sent as data
    (`detail_msg`, `message_msg`: treino.server.api.errors) is raised as that Msg, for the CLI to word in its
    language; as its English text when it did not (an older server) or when the data is not a message."""
    try:
        body = response.json()
        detail = body.get("detail")
    except (ValueError, AttributeError):
        body, detail = {}, None
    if isinstance(detail, list):
        lines = [
            Msg("  {field}: {message}", field=str(d.get("field", "?")), message=_sent(d.get("message", d), d))
            if isinstance(d, dict)
            else f"  {d}"
            for d in detail
        ]
        return JobError(
            Msg(
                "The server refused {what} ({status}):\n{lines}",
                what=what if isinstance(what, Msg) else Msg(what.replace("{", "{{").replace("}", "}}")),  # N_ text
                status=str(response.status_code),
                lines=Joined("\n", lines),
            )
        )
    if isinstance(detail, str):
        return TreinoError(_sent(detail, body, "detail_msg"))
    if isinstance(detail, dict) and "rule" in detail and "message" in detail:
        rule, message = str(detail["rule"]), _sent(detail["message"], detail)
        if rule == "role":  # the caller's role, not a governance rule: the message says it all
            return TreinoError(message)
        # PolicyViolation's text already starts with its rule
        if isinstance(message, Msg) and message.template == "{rule}: {detail}":
            message = message.params["detail"]
        elif message.startswith(f"{rule}: "):
            message = message.removeprefix(f"{rule}: ")
        # the rule's name (purpose, grant, residency, ...; "LGPD Art. 7") in the CLI's language where the catalog has it
        named = Msg(rule.replace("{", "{{").replace("}", "}}"))
        return TreinoError(Msg("refused ({rule}): {message}", rule=named, message=message))
    return TreinoError(
        Msg("The treino server answered {status}: {text}", status=response.status_code, text=response.text[:500])
    )


def _sent(text: Any, body: dict[str, Any], key: str = "message_msg") -> str:
    """A message of the server's answer: the Msg it sent as data under `key`, else its English text."""
    data = body.get(key)
    if data:
        try:
            message = from_data(data)
        except ValueError:  # data this client cannot word (another version's template): the English text
            return str(text)
        if isinstance(message, str):
            return message
    return str(text)


def _client(url: str | None, token: str | None) -> ServerClient:
    return ServerClient(*resolve_server(url, token))


def _print_json(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


# --- pure helpers for rendering --------------------------------------------------------------------------------
def spec_for_submit(path: Path) -> dict[str, Any]:
    """The spec file's mapping with `workdir` made absolute: relative to the file's directory, which is also its
    default, so `treino submit examples/job.yaml` means the same from any directory (the server runs here)."""
    from treino.server.spec import load_spec_file

    data = load_spec_file(path)
    base = path.expanduser().resolve().parent
    workdir = data.get("workdir")
    if workdir is None:
        data["workdir"] = str(base)
    elif isinstance(workdir, str):
        data["workdir"] = str((base / Path(workdir).expanduser()).resolve())
    else:
        return data  # not a string: the server's validation says so, field by field
    if not Path(data["workdir"]).is_dir():
        raise JobError(
            Msg(
                "{path}: workdir {workdir} is not a directory. To fix: give an existing one.",
                path=path,
                workdir=data["workdir"],
            )
        )
    script = data.get("script")
    if isinstance(script, str) and not (Path(data["workdir"]) / Path(script).expanduser()).is_file():
        raise JobError(
            Msg(
                "{path}: script {script!r} is not a file in the workdir {workdir}. To fix: give 'script' relative to "
                "the spec file's directory (or to 'workdir'), or as an absolute path.",
                path=path,
                script=script,
                workdir=data["workdir"],
            )
        )
    return data


def sparkline(values: list[float], width: int = SPARK_WIDTH_CHARS) -> str:
    """One block character per value, lowest '▁' to highest '█'; more values than `width` are averaged in buckets."""
    if not values:
        return ""
    if len(values) > width:
        buckets = [values[i * len(values) // width : (i + 1) * len(values) // width] for i in range(width)]
        values = [sum(b) / len(b) for b in buckets]
    lo, hi = min(values), max(values)
    top = len(SPARK_BLOCKS) - 1
    if hi == lo:
        return SPARK_BLOCKS[top // 2] * len(values)
    return "".join(SPARK_BLOCKS[round((v - lo) / (hi - lo) * top)] for v in values)


def age(seconds: float) -> str:
    """'42s', '7m', '3h', '2d': the largest whole unit."""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{int(seconds // size)}{unit}"
    return f"{max(0, int(seconds))}s"


def _when(ts: float | None) -> str:
    return current().when(ts) if ts else "-"  # 29/11/2026 14:05:00 in pt-BR


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else current().msg(Msg("{value:" + fmt + "}", value=value))  # 1.234,5 in pt-BR


def _state(state: str) -> Any:
    from rich.text import Text

    return Text(tr(state), style=STATE_STYLES.get(state, ""))  # in the CLI's language (treino.i18n)


def _devices(job: dict[str, Any]) -> str:
    held = job.get("devices")
    return f"{job['gpus']} [{','.join(map(str, held))}]" if held else str(job["gpus"])


# --- commands ------------------------------------------------------------------------------------------------
def submit(
    spec_file: Annotated[Path, typer.Argument(help="Job spec, YAML or JSON (see treino.server.spec).")],
    wait: Annotated[
        bool, typer.Option("--wait", help="Wait until the job ends; exit 0 if it succeeded, 1 if not.")
    ] = False,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Print its output until it ends (implies --wait).")
    ] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Submit a job spec to the server's queue."""
    spec = spec_for_submit(spec_file)
    with _client(url, token) as client:
        job = client.submit(spec, what=Msg("the job spec {path}", path=str(spec_file)))
        if not as_json:
            typer.echo(
                tr("Submitted job {id} ({name}), {state}.", id=job["id"], name=job["name"], state=Msg(job["state"]))
            )
        if wait or follow:
            from treino.cli.wait import outcome, wait_for

            try:
                job = wait_for(client, job["id"], follow=follow and not as_json)
            except KeyboardInterrupt:
                typer.echo(
                    tr("Stopped waiting; job {id} goes on (treino cancel {id} stops it).", id=job["id"]), err=True
                )
                raise typer.Exit(130) from None
            line, code = outcome(job)
            if as_json:
                _print_json(job)
            else:
                typer.echo(line)
            raise typer.Exit(code)
    if as_json:
        _print_json(job)


def jobs(
    state: Annotated[JobState | None, typer.Option("--state", help="Only the jobs in this state.")] = None,
    limit: Annotated[int, typer.Option("--limit", help="Newest first, at most this many.")] = 50,
    before_id: Annotated[int | None, typer.Option("--before-id", help="Only jobs older than this id.")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """The server's jobs, newest first, a page at a time."""
    with _client(url, token) as client:
        page = client.jobs(state.value if state else None, limit, before_id)
    rows = page["jobs"]
    if as_json:
        _print_json(rows)
        return
    from rich.table import Table

    from treino.cli.job_status import devices_short, progress, status
    from treino.cli.render import console

    now = time.time()
    table = Table(title_justify="left", title=tr("{n} job(s)", n=len(rows)) + (f", {tr(state)}" if state else ""))
    # Short headers, so the columns fit 80 characters: ids and states never cut, a long name or device list folds,
    # the status (a queued job's place and why it waits, a running job's ETA, a finished job's duration) wraps.
    # The loss and the rest: 'treino show ID'.
    min_widths = {"state": max(len(tr("succeeded")), len(tr("cancelled")), len(tr("state")))}
    for col in (N_("id"), N_("name"), N_("state"), N_("gpus"), N_("prio"), N_("step"), N_("status")):
        wraps = col in ("name", "gpus", "status")
        table.add_column(
            tr(col),
            justify="left" if col in ("name", "state", "status") else "right",
            no_wrap=not wraps,
            overflow="fold" if wraps else "ellipsis",
            min_width=min_widths.get(col),
        )
    for j in rows:
        table.add_row(
            str(j["id"]),
            j["name"],
            _state(j["state"]),
            devices_short(j),
            str(j["priority"]),
            progress(j),
            status(j, now),
        )
    console().print(table)
    if page.get("next") is not None:
        more = f"treino jobs --before-id {page['next']}" + (f" --state {state}" if state else "")
        typer.echo(tr("Older jobs: {command}", command=more))


def show(
    job_id: Annotated[int, typer.Argument(help="Job id, from 'treino jobs'.")],
    as_json: JsonOpt = False,
    metric: Annotated[
        str | None, typer.Option("--metric", help="Only this metric: its curve, last, min, max ('treino metrics ID').")
    ] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """One job: its fields, attempts, checkpoints, why it failed, and its loss curve (or one metric's, --metric)."""
    if metric is not None:
        from treino.cli.metrics import show_metric

        with _client(url, token) as client:
            show_metric(client, job_id, metric, as_json)
        return
    with _client(url, token) as client:
        job = client.job(job_id)
        points = [] if as_json else client.metrics(job_id)
    if as_json:
        _print_json(job)
        return
    from rich.table import Table
    from rich.text import Text

    from treino.cli.job_status import failure_detail, progress, show_fields
    from treino.cli.render import console

    out = console()
    spec = job.get("spec") or {}
    entry = spec.get("command") or [spec.get("script"), *spec.get("args", [])]
    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold")
    fields.add_column()
    for label, value in (
        (N_("state"), _state(job["state"])),
        (N_("owner"), job["owner"]),
        (N_("command"), shlex.join(map(str, entry))),
        (N_("workdir"), spec.get("workdir") or tr("(server data dir)")),
        (N_("gpus"), _devices(job)),
        (N_("priority"), str(job["priority"])),
        (
            N_("attempts"),
            tr(
                "{attempts} ({restarts} restart(s), {preemptions} preemption(s))",
                attempts=job["attempts"],
                restarts=job["restarts"],
                preemptions=job["preemptions"],
            ),
        ),
        (N_("submitted"), _when(job["submitted_at"])),
        (N_("started"), _when(job["started_at"])),
        (N_("ended"), _when(job["ended_at"])),
        (N_("exit code"), _num(job["exit_code"], "d")),
        (N_("step"), progress(job)),
        (N_("loss"), _num(job["last_loss"], ".4g")),
        (N_("steps/s"), _num(job["steps_per_s"], ".2f")),
        (N_("checkpoint"), _num(job["checkpoint_step"], "d")),
        *show_fields(job, time.time()),
    ):
        fields.add_row(tr(label), value)
    out.print(Text(tr("Job {id} ({name})", id=job["id"], name=job["name"]), style="bold"))
    out.print(fields)
    if job.get("continues_from") is not None:  # a resubmit (treino resubmit)
        out.print(
            tr(
                "Continues job {job} from its checkpoint of step {step}.",
                job=job["continues_from"],
                step=job["continues_from_step"],
            )
        )
    if job.get("failure_reason"):
        failure = f"{tr(job['failure_reason'])}: {failure_detail(job)}"
        out.print(Text(tr("Failure: {failure}", failure=failure), style="red"))
    if job.get("history"):
        table = Table(title=tr("attempts"), title_justify="left")
        for col in ("#", N_("devices"), N_("started"), N_("ended"), N_("exit code"), N_("outcome")):
            table.add_column(tr(col), justify="right" if col in ("#", "exit code") else "left", no_wrap=True)
        for a in job["history"]:
            table.add_row(
                str(a["number"]),
                ",".join(map(str, a["devices"])),
                _when(a["started_at"]),
                _when(a["ended_at"]),
                _num(a["exit_code"], "d"),
                tr(a["outcome"] or "running"),
            )
        out.print(table)
    if job.get("checkpoints"):
        table = Table(title=tr("checkpoints"), title_justify="left")
        for col in (N_("step"), N_("attempt"), N_("bytes"), N_("path")):
            table.add_column(tr(col), justify="left" if col == "path" else "right")
        for c in job["checkpoints"]:
            gone = tr("(deleted: keeps the last K)")
            path = c["path"] if c.get("exists", True) else f"[dim]{c['path']} {gone}[/dim]"
            table.add_row(str(c["step"]), str(c["attempt"]), _num(c["bytes"], ","), path)
        out.print(table)
    losses = [p["values"]["loss"] for p in points if "loss" in p["values"]]
    if losses:
        out.print(Text(f"loss  {sparkline(losses)}", style="cyan"))
        out.print(
            "      "
            + tr(
                "first {first:.4g} · last {last:.4g} · min {min:.4g} over {n} point(s)",
                first=losses[0],
                last=losses[-1],
                min=min(losses),
                n=len(losses),
            ),
            highlight=False,
        )


def logs(
    job_id: Annotated[int, typer.Argument(help="Job id, from 'treino jobs'.")],
    follow: Annotated[bool, typer.Option("--follow", "-f", help="Keep printing until the job ends.")] = False,
    attempt: Annotated[int | None, typer.Option("--attempt", help="Attempt number (default: the latest).")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """A job's output. With -f, follows it (and the next attempts, if the job restarts) until the job ends."""
    with _client(url, token) as client:
        try:
            _print_logs(client, job_id, attempt, follow)
        except KeyboardInterrupt:
            raise typer.Exit(130) from None


def _print_logs(client: ServerClient, job_id: int, attempt: int | None, follow: bool) -> None:
    current, offset = attempt, 0
    while True:
        chunk = client.logs(job_id, current, offset)
        attempts = chunk.get("attempts", 0)  # absent before the first attempt starts
        if attempt is not None and attempt > attempts:
            raise JobError(
                Msg(
                    "Job {job_id} has {attempts} attempt(s), not {attempt}. To fix: --attempt 1..{attempts}.",
                    job_id=job_id,
                    attempts=attempts,
                    attempt=attempt,
                )
            )
        if chunk["text"]:
            sys.stdout.write(chunk["text"])
            sys.stdout.flush()
            current, offset = chunk["attempt"], chunk["offset"]
            continue  # the server sends at most LOG_CHUNK_BYTES_MAX at a time: ask again at once
        if chunk["attempt"]:
            current = chunk["attempt"]
        if not follow:
            return
        if chunk["final"]:
            if attempt is not None or not current or attempts <= current:
                return
            current, offset = current + 1, 0  # the job restarted: go on with the next attempt's output
            typer.echo(tr("--- attempt {n} ---", n=current))
            continue
        time.sleep(LOG_POLL_S)


def cancel(
    job_id: Annotated[int, typer.Argument(help="Job id, from 'treino jobs'.")],
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Cancel a job: a queued one at once, a running one with SIGTERM and its grace period, then SIGKILL."""
    with _client(url, token) as client:
        job = client.cancel(job_id)
    if job["state"] == "cancelled":
        typer.echo(tr("Cancelled job {id} ({name}).", id=job["id"], name=job["name"]))
    else:
        grace = (job.get("spec") or {}).get("grace_seconds", 30)
        typer.echo(
            tr(
                "Cancelling job {id} ({name}): SIGTERM sent, SIGKILL after {grace:g} s. "
                "Watch it with 'treino show {id}'.",
                id=job["id"],
                name=job["name"],
                grace=grace,
            )
        )
