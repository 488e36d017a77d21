"""`treino users | tokens | grant | grants | transfer | data | audit | lineage | erase | subject`: the LGPD side of
the job server, over its governance routes (treino.server.govern_api). Server, token and errors as in
treino.cli.client: `--url`/`--token`, TREINO_URL/TREINO_TOKEN, the config file; a refusal is one red line, exit 1.

Subject ids (CPFs, customer ids) travel in request bodies only, never in URLs, and are never printed back except
the one the user typed: the server answers with keyed pseudonyms.
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Annotated, Any

import typer

from treino.cli.client import JsonOpt, TokenOpt, UrlOpt, _client, _print_json, _when
from treino.errors import UsageError
from treino.i18n import N_, Msg, current, from_server, to_data, tr

SHORT_HASH_CHARS = 12  # sha256 prefixes shown in tables; --json has the full hash
ROLES = ("admin", "engineer", "dpo", "viewer")  # treino.govern.models.Role; the server validates
LEGAL_BASES_HELP = "art7-i .. art7-x, art11-i, art11-ii-a .. art11-ii-g, or not-personal (LGPD Art. 7 / Art. 11)."

users_app = typer.Typer(no_args_is_help=True, help="People who hold tokens, and their roles.")
tokens_app = typer.Typer(no_args_is_help=True, help="API tokens: create (shown once), list, revoke.")
grants_app = typer.Typer(no_args_is_help=True, help="Who may read which dataset, for which purposes.")
transfer_app = typer.Typer(no_args_is_help=True, help="International transfer mechanisms (LGPD Art. 33).")
data_app = typer.Typer(no_args_is_help=True, help="Datasets: legal basis, purposes, residency, versions.")
audit_app = typer.Typer(no_args_is_help=True, help="The hash-chained audit log.")
lineage_app = typer.Typer(no_args_is_help=True, help="Which jobs read which dataset versions, and their models.")
subject_app = typer.Typer(no_args_is_help=True, help="Data subject rights (LGPD Art. 18).")


def _short(sha256: str | None) -> str:
    return sha256[:SHORT_HASH_CHARS] if sha256 else "-"


def _date(ts: float | None) -> str:
    """A day in the CLI's language: 2026-12-17, or 17/12/2026 in pt-BR."""
    return dt.datetime.fromtimestamp(ts).strftime("%d/%m/%Y" if current().pt else "%Y-%m-%d") if ts else "-"


def _epoch(text: str | None, option: str) -> float | None:
    """ISO 8601 ('2025-03-01', '2025-03-01T12:00', '...+00:00') -> unix seconds; without an offset, local time."""
    if text is None:
        return None
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError as exc:
        raise UsageError(
            Msg(
                "Cannot read {option} {text!r}. To fix: write ISO 8601, e.g. 2025-03-01 or 2025-03-01T12:00.",
                option=option,
                text=text,
            )
        ) from exc


def _table(title: str, columns: tuple[str, ...], right: tuple[str, ...] = ("id",)) -> Any:
    """A table with these columns (English names, marked N_ where given: shown in the CLI's language)."""
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in columns:
        table.add_column(tr(col), justify="right" if col in right else "left")
    return table


def _print(*things: Any) -> None:
    from treino.cli.render import console

    out = console()
    for thing in things:
        out.print(thing, highlight=False)


def _yes_no(flag: bool) -> str:
    return tr("yes") if flag else tr("no")


def _styled(text: str, style: str) -> Any:
    from rich.text import Text

    return Text(text, style=style)


# --- people and tokens ---------------------------------------------------------------------------------------
@users_app.command("add")
def users_add(
    name: Annotated[str, typer.Argument(help="User name (letters, digits, '.', '_', '-').")],
    role: Annotated[str, typer.Option("--role", help=f"One of {', '.join(ROLES)}.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Add a user. Then give them a token with 'treino tokens create NAME'."""
    with _client(url, token) as client:
        user = client.request(
            "POST", "/api/v1/users", Msg("the user {name}", name=name), json={"name": name, "role": role}
        )
    if as_json:
        _print_json(user)
        return
    typer.echo(tr("Added user {name} ({role}), id {id}.", name=user["name"], role=user["role"], id=user["id"]))


@users_app.command("list")
def users_list(as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """The users and their roles."""
    with _client(url, token) as client:
        rows = client.every("/api/v1/users", "users")
    if as_json:
        _print_json(rows)
        return
    table = _table(tr("{n} user(s)", n=len(rows)), (N_("id"), N_("name"), N_("role"), N_("disabled")))
    for u in rows:
        table.add_row(str(u["id"]), u["name"], u["role"], tr("yes") if u["disabled"] else "")
    _print(table)


def _set_disabled(name: str, action: str, as_json: bool, url: str | None, token: str | None) -> None:
    with _client(url, token) as client:
        user = client.request("POST", f"/api/v1/users/{name}/{action}", Msg("the user {name}", name=name))
    if as_json:
        _print_json(user)
        return
    if user["disabled"]:
        typer.echo(tr("User {name} ({role}) disabled: every token of theirs now fails.", **user))
    else:
        typer.echo(tr("User {name} ({role}) enabled: their tokens work again.", **user))


@users_app.command("disable")
def users_disable(
    name: Annotated[str, typer.Argument(help="User name.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Disable a user: their tokens and dashboard sessions fail at once; their running jobs go on."""
    _set_disabled(name, "disable", as_json, url, token)


@users_app.command("enable")
def users_enable(
    name: Annotated[str, typer.Argument(help="User name.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Enable a disabled user again: their tokens that are not revoked or expired work again."""
    _set_disabled(name, "enable", as_json, url, token)


@tokens_app.command("create")
def tokens_create(
    user: Annotated[str, typer.Argument(help="The user the token acts as (its role is theirs).")],
    name: Annotated[str, typer.Option("--name", help="A label, e.g. the laptop it lives on.")] = "",
    expires_days: Annotated[float | None, typer.Option("--expires-days", help="Valid for this many days.")] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Create a token for USER. The secret is printed once: the server keeps only its hash."""
    body: dict[str, Any] = {"user": user, "name": name, "expires_days": expires_days}
    with _client(url, token) as client:
        made = client.request("POST", "/api/v1/tokens", Msg("the token for {user}", user=user), json=body)
    if as_json:
        _print_json(made)
        return
    who = {"id": made["id"], "user": made["user"], "role": made["role"]}
    if made["expires_at"]:
        typer.echo(tr("Token {id} for {user} ({role}), expires {when}:", **who, when=_when(made["expires_at"])))
    else:
        typer.echo(tr("Token {id} for {user} ({role}), no expiry:", **who))
    typer.echo(made["token"])
    _print(
        _styled(
            tr("This is the only time the token is shown; store it now (the server keeps only its hash)."), "yellow"
        )
    )


@tokens_app.command("list")
def tokens_list(as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """The tokens (never their secrets): whose, created, expiry, revoked."""
    with _client(url, token) as client:
        rows = client.every("/api/v1/tokens", "tokens")
    if as_json:
        _print_json(rows)
        return
    table = _table(
        tr("{n} token(s)", n=len(rows)),
        (N_("id"), N_("name"), N_("user"), N_("role"), N_("created"), N_("expires"), N_("revoked")),
    )
    for t in rows:
        style = "dim" if t["revoked_at"] else ""
        table.add_row(
            str(t["id"]),
            t["name"],
            t["user"],
            t["role"],
            _when(t["created_at"]),
            _when(t["expires_at"]),
            _when(t["revoked_at"]),
            style=style,
        )
    _print(table)


@tokens_app.command("revoke")
def tokens_revoke(
    token_id: Annotated[int, typer.Argument(help="Token id, from 'treino tokens list'.")],
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Revoke a token: it stops working at once."""
    with _client(url, token) as client:
        done = client.request("POST", f"/api/v1/tokens/{token_id}/revoke", f"revoking token {token_id}")
    typer.echo(tr("Revoked token {id} at {when}.", id=done["id"], when=_when(done["revoked_at"])))


# --- grants and transfers ------------------------------------------------------------------------------------
def grant(
    user: Annotated[str, typer.Argument(help="Who may read the dataset.")],
    dataset: Annotated[str, typer.Argument(help="Dataset name, from 'treino data list'.")],
    purposes: Annotated[list[str], typer.Option("--purpose", help="One of the dataset's purposes (repeatable).")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Let USER's jobs read DATASET for these purposes (each must be one the dataset was registered for)."""
    body = {"user": user, "dataset": dataset, "purposes": purposes}
    with _client(url, token) as client:
        made = client.request(
            "POST", "/api/v1/grants", Msg("the grant of {dataset} to {user}", dataset=dataset, user=user), json=body
        )
    if as_json:
        _print_json(made)
        return
    typer.echo(
        tr(
            "Grant {id}: {user} may read {dataset} for {purposes}.",
            id=made["id"],
            user=made["user"],
            dataset=made["dataset"],
            purposes=", ".join(made["purposes"]),
        )
    )


@grants_app.command("list")
def grants_list(as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """The grants, revoked ones dimmed."""
    with _client(url, token) as client:
        rows = client.every("/api/v1/grants", "grants")
    if as_json:
        _print_json(rows)
        return
    table = _table(
        tr("{n} grant(s)", n=len(rows)),
        (N_("id"), N_("user"), N_("dataset"), N_("purposes"), N_("granted by"), N_("created"), N_("revoked")),
    )
    for g in rows:
        table.add_row(
            str(g["id"]),
            g["user"],
            g["dataset"],
            ", ".join(g["purposes"]),
            g["granted_by"],
            _when(g["created_at"]),
            _when(g["revoked_at"]),
            style="dim" if g["revoked_at"] else "",
        )
    _print(table)


@grants_app.command("revoke")
def grants_revoke(
    grant_id: Annotated[int, typer.Argument(help="Grant id, from 'treino grants list'.")],
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Revoke a grant: jobs submitted after this may no longer read the dataset."""
    with _client(url, token) as client:
        done = client.request("POST", f"/api/v1/grants/{grant_id}/revoke", f"revoking grant {grant_id}")
    typer.echo(tr("Revoked grant {id} at {when}.", id=done["id"], when=_when(done["revoked_at"])))


@transfer_app.command("add")
def transfer_add(
    site: Annotated[str, typer.Option("--site", help="Site from the sites catalog, e.g. a cloud region abroad.")],
    mechanism: Annotated[
        str, typer.Option("--mechanism", help="anpd-scc, adequacy, specific-clauses, bcr, consent or other.")
    ],
    reference: Annotated[str, typer.Option("--reference", help="The contract or decision, e.g. its number.")],
    signed_on: Annotated[str, typer.Option("--signed-on", help="YYYY-MM-DD.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Record the mechanism that lets personal data go to SITE (LGPD Art. 33)."""
    body = {"site": site, "mechanism": mechanism, "reference": reference, "signed_on": signed_on}
    with _client(url, token) as client:
        made = client.request("POST", "/api/v1/transfers", Msg("the transfer to {site}", site=site), json=body)
    if as_json:
        _print_json(made)
        return
    fields = {k: made[k] for k in ("id", "site", "mechanism", "reference", "signed_on")}
    typer.echo(tr("Transfer {id}: {site} under {mechanism} ({reference}, signed {signed_on}).", **fields))


@transfer_app.command("list")
def transfer_list(as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """The recorded transfer mechanisms."""
    with _client(url, token) as client:
        rows = client.every("/api/v1/transfers", "transfers")
    if as_json:
        _print_json(rows)
        return
    table = _table(
        tr("{n} transfer(s)", n=len(rows)),
        (N_("id"), N_("site"), N_("mechanism"), N_("reference"), N_("signed on"), N_("revoked")),
    )
    for t in rows:
        table.add_row(str(t["id"]), t["site"], t["mechanism"], t["reference"], t["signed_on"], _when(t["revoked_at"]))
    _print(table)


# --- datasets ------------------------------------------------------------------------------------------------
@data_app.command("add")
def data_add(
    name: Annotated[str, typer.Argument(help="Dataset name.")],
    path: Annotated[Path, typer.Argument(help="CSV or Parquet file under one of the server's --import-root folders.")],
    personal: Annotated[
        bool,
        typer.Option(
            "--personal/--not-personal", help="Does it hold personal data (LGPD Art. 5 I)? Say it either way."
        ),
    ],
    legal_basis: Annotated[str, typer.Option("--legal-basis", help=LEGAL_BASES_HELP)] = "",
    purposes: Annotated[
        list[str] | None, typer.Option("--purpose", help="What it may be used for, e.g. churn-model (repeatable).")
    ] = None,
    sensitive: Annotated[
        bool, typer.Option("--sensitive", help="Sensitive personal data (Art. 5 II): needs an Art. 11 basis.")
    ] = False,
    residency: Annotated[str, typer.Option("--residency", help="Country it must stay in (ISO-2), or 'any'.")] = "BR",
    retention_days: Annotated[int | None, typer.Option("--retention-days", help="Keep it this many days.")] = None,
    subject_column: Annotated[
        str | None, typer.Option("--subject-column", help="The column that identifies a person (for erasure).")
    ] = None,
    collected_on: Annotated[
        str | None,
        typer.Option("--collected-on", help="When the data was collected (ISO date): retention counts from it."),
    ] = None,
    strict: Annotated[
        bool,
        typer.Option("--strict", help="Refuse the file if it holds rows of erased subjects (default: strip them)."),
    ] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Register a dataset: the server copies PATH into its store as a new version and records why it may hold it.
    Rows of subjects erased earlier are stripped (counted in a warning), or with --strict the file is refused."""
    body = {
        "name": name,
        # The server reads the file itself (it runs on this machine): send where it is, not what it holds.
        "path": str(path.expanduser().absolute()),
        "legal_basis": legal_basis,
        "purposes": purposes or [],
        "personal_data": personal,
        "sensitive": sensitive,
        "residency": residency,
        "retention_days": retention_days,
        "subject_column": subject_column,
        "collected_at": _epoch(collected_on, "--collected-on"),
        "strict": strict,
    }
    with _client(url, token) as client:
        done = client.request("POST", "/api/v1/datasets", Msg("the dataset {name}", name=name), json=body)
    if as_json:
        _print_json(done)
        return
    v = done["versions"][-1]
    typer.echo(
        tr(
            "Registered {name} v{number}: sha256 {sha256}, {rows:,} rows.",
            name=done["name"],
            number=v["number"],
            sha256=_short(v["sha256"]),
            rows=v["rows"],
        )
    )
    worded = done.get("warnings_msg") or []
    for i, warning in enumerate(done.get("warnings", [])):
        text = from_server(warning, worded[i] if i < len(worded) else None)
        _print(_styled(tr("warning: {text}", text=text), "yellow"))


@data_app.command("list")
def data_list(as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """The registered datasets and their latest versions, newest first."""
    with _client(url, token) as client:
        rows = client.every("/api/v1/datasets", "datasets")
    if as_json:
        _print_json(rows)
        return
    table = _table(
        tr("{n} dataset(s)", n=len(rows)),
        (
            N_("name"),
            N_("basis"),
            N_("purposes"),
            N_("personal"),
            N_("residency"),
            N_("retention"),
            N_("version"),
            N_("rows"),
            "sha256",
        ),
        right=("version", "rows"),
    )
    for d in rows:
        live = [v for v in d["versions"] if not v["purged_at"]]
        v = live[-1] if live else None
        table.add_row(
            d["name"],
            d["legal_basis"] or "-",
            ", ".join(d["purposes"]),
            (tr("sensitive") if d["sensitive"] else tr("yes")) if d["personal_data"] else tr("no"),
            d["residency"],
            _retention(d, short=True),
            f"v{v['number']}" if v else "-",
            tr("{n:,}", n=v["rows"]) if v else "-",
            _short(v["sha256"]) if v else "-",
        )
    _print(table)


@data_app.command("show")
def data_show(
    name: Annotated[str, typer.Argument(help="Dataset name, from 'treino data list'.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """One dataset: its legal basis, purposes, residency and every version (purged ones marked)."""
    with _client(url, token) as client:
        d = client.request("GET", f"/api/v1/datasets/{name}", Msg("the dataset {name}", name=name))
    if as_json:
        _print_json(d)
        return
    from rich.table import Table

    fields = Table.grid(padding=(0, 2))
    fields.add_column(style="bold")
    fields.add_column()
    for label, value in (
        (N_("legal basis"), d["legal_basis"] or "-"),
        (N_("purposes"), ", ".join(d["purposes"]) or "-"),
        (
            N_("personal data"),
            (tr("yes, sensitive") if d["sensitive"] else tr("yes")) if d["personal_data"] else tr("no"),
        ),
        (N_("residency"), d["residency"]),
        (N_("retention"), _retention(d, short=False)),
        (N_("subject column"), d["subject_column"] or "-"),
        (N_("registered"), tr("{when} by {who}", when=_when(d["created_at"]), who=d["created_by"])),
    ):
        fields.add_row(tr(label), value)
    title = tr("Dataset {name} ({format})", name=d["name"], format=d["format"])
    _print(_styled(title, "bold"), fields, _versions_table(d["versions"]))


def _retention(d: dict[str, Any], *, short: bool) -> Any:
    """The retention period; past its end, flagged red for the DPO (reads are refused: treino data retain)."""
    if not d["retention_days"]:
        return "-"
    end = d.get("expires_at")
    days = d["retention_days"]
    if d.get("expired"):
        return _styled(
            tr("{days} d, EXPIRED", days=days) if short else tr("EXPIRED on {date}", date=_date(end)), "bold red"
        )
    return tr("{days} d", days=days) if short else tr("{days} days, until {date}", days=days, date=_date(end))


@data_app.command("retain")
def data_retain(
    name: Annotated[str, typer.Argument(help="Dataset name, from 'treino data list'.")],
    days: Annotated[int | None, typer.Option("--days", min=1, help="A new retention period, from today.")] = None,
    legal_basis: Annotated[
        str, typer.Option("--legal-basis", help="Why it may be kept longer, e.g. 'Art. 16 I: legal obligation'.")
    ] = "",
    reason: Annotated[str, typer.Option("--reason", help="The circumstances, for the audit record.")] = "",
    erase: Annotated[
        bool, typer.Option("--erase", help="Erase the dataset instead: every version purged, its models marked.")
    ] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """A dataset past its retention period: extend the period on a documented legal basis (LGPD Art. 16), or erase
    the dataset. Both are audited (retention.extend, retention.erase)."""
    if erase == (days is not None):
        raise UsageError(Msg("Give either --days (with --legal-basis and --reason) or --erase. To fix: pick one."))
    body = {"erase": True} if erase else {"days": days, "legal_basis": legal_basis, "reason": reason}
    with _client(url, token) as client:
        done = client.request(
            "POST", f"/api/v1/datasets/{name}/retention", Msg("the dataset {name}", name=name), json=body
        )
    if as_json:
        _print_json(done)
    elif erase:
        purged = done["purged_versions"]
        typer.echo(
            tr(
                "Erased {name}: version(s) {purged} purged (erasure #{erasure}).",
                name=name,
                purged=purged,
                erasure=done["erasure"],
            )
        )
    else:
        typer.echo(tr("Retention of {name} extended until {date}.", name=name, date=_date(done["expires_at"])))


def _versions_table(versions: list[dict[str, Any]]) -> Any:
    table = _table(
        tr("versions"),
        (N_("version"), "sha256", N_("rows"), N_("bytes"), N_("reason"), N_("created"), N_("state")),
        right=("rows", "bytes"),
    )
    for v in versions:
        purged = v["purged_at"]
        table.add_row(
            f"v{v['number']}",
            _short(v["sha256"]),
            tr("{n:,}", n=v["rows"]),
            tr("{n:,}", n=v["bytes"]),
            v["reason"] or "",
            _when(v["created_at"]),
            tr("purged {when}", when=_when(purged)) if purged else tr("current") if v is versions[-1] else tr("kept"),
            style="dim" if purged else "",
        )
    return table


# --- audit ---------------------------------------------------------------------------------------------------
@audit_app.command("verify")
def audit_verify(
    anchors: Annotated[
        Path | None,
        typer.Option(
            "--anchors",
            help="An anchor file the server wrote (--audit-anchor): also recompute the chain here from the export "
            "and prove every record up to the last anchor unchanged, even by someone holding the database and key.",
        ),
    ] = None,
    key_file: Annotated[
        Path | None,
        typer.Option(help="With --anchors: the server key (DATA_DIR/server-key), to check each anchor's HMAC too."),
    ] = None,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Recompute the hash chain and check its signed checkpoints (and anchors). Exit 1 at the first bad record."""
    found = _read_anchors(anchors) if anchors is not None else None
    key = _read_key(key_file) if key_file is not None else None
    with _client(url, token) as client:
        result = client.request("GET", "/api/v1/audit/verify")
        exported = (
            client.request_text("GET", "/api/v1/audit/export", N_("the audit export")) if found is not None else ""
        )
    if found is not None and result["ok"]:
        from treino.govern.anchors import check
        from treino.govern.audit import read_export

        anchored = check(read_export(exported.splitlines(), "jsonl"), found, key)
        result["anchors"] = {"ok": anchored.ok, "checked": anchored.anchors, "reason": anchored.reason}
        if anchored.first_bad_anchor is not None:
            result["anchors"]["first_bad_line"] = anchored.first_bad_anchor.line
        if not anchored.ok:
            result["ok"], result["first_bad_seq"], result["reason"] = False, anchored.first_bad_seq, anchored.reason
            result["reason_msg"] = to_data(anchored.reason)  # checked here: the server's verdict no longer holds
    if as_json:
        _print_json(result)
    elif result["ok"]:
        reason = from_server(result["reason"], result.get("reason_msg"))
        typer.echo(tr("chain intact: {n:,} records; {reason}.", n=result["records"], reason=reason))
        if "anchors" in result:
            reason = current().msg(result["anchors"]["reason"])  # a Msg: checked here, not by the server
            if key is not None:
                typer.echo(tr("anchors: {reason}.", reason=reason))
            else:
                typer.echo(tr("anchors: {reason} (anchor HMACs not checked: --key-file).", reason=reason))
    else:
        from rich.console import Console
        from rich.markup import escape

        Console(stderr=True).print(
            f"[bold red]{escape(tr('chain broken at record {seq}:', seq=result['first_bad_seq']))}[/] "
            f"{escape(from_server(result['reason'], result.get('reason_msg')))}",
            highlight=False,
        )
    if not result["ok"]:
        raise typer.Exit(1)


def _read_anchors(path: Path) -> Any:
    from treino.govern.anchors import parse_anchors

    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as exc:
        raise UsageError(
            Msg(
                "Cannot read --anchors {path}: {error}. To fix: name the file --audit-anchor writes.",
                path=path,
                error=exc,
            )
        ) from exc
    return parse_anchors(text.splitlines(), str(path))


def _read_key(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise UsageError(
            Msg("Cannot read --key-file {path}: {error}. To fix: name DATA_DIR/server-key.", path=path, error=exc)
        ) from exc


@audit_app.command("export")
def audit_export(
    fmt: Annotated[str, typer.Option("--format", help="jsonl or csv.")] = "jsonl",
    dataset: Annotated[str | None, typer.Option("--dataset", help="Only records about this dataset.")] = None,
    actor: Annotated[str | None, typer.Option("--actor", help="Only records by this user.")] = None,
    subject_pseudonym: Annotated[
        str | None,
        typer.Option("--subject-pseudonym", help="Only records about this subject (the pseudonym a report shows)."),
    ] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="ISO 8601 time, inclusive (local without offset).")
    ] = None,
    until: Annotated[str | None, typer.Option("--until", help="ISO 8601 time, exclusive.")] = None,
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """The audit records, with their hashes, for the DPO or the ANPD (re-verifiable outside treino)."""
    if fmt not in ("jsonl", "csv"):
        raise UsageError(Msg("Unknown export format {fmt!r}. To fix: --format jsonl or --format csv.", fmt=fmt))
    params = {
        "fmt": fmt,
        "dataset": dataset,
        "actor": actor,
        "subject": subject_pseudonym,
        "since": _epoch(since, "--since"),
        "until": _epoch(until, "--until"),
    }
    params = {k: v for k, v in params.items() if v is not None}
    with _client(url, token) as client:
        text = client.request_text("GET", "/api/v1/audit/export", N_("the audit export"), params=params)
    _write(text, output, tr("{n} record(s)", n=_count_records(text, fmt)))


def _count_records(text: str, fmt: str) -> int:
    if fmt == "jsonl":
        return sum(1 for line in text.splitlines() if line.strip())
    import csv
    import io

    return sum(1 for _ in csv.DictReader(io.StringIO(text)))


def _write(text: str, output: Path | None, what: str) -> None:
    if output is None:
        typer.echo(text, nl=False)
        return
    output.write_text(text)
    typer.echo(tr("Wrote {what} to {path}.", what=what, path=str(output)), err=True)


@audit_app.command("records")
def audit_records(
    output: Annotated[Path | None, typer.Option("--output", "-o", help="Write here instead of stdout.")] = None,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """The record of processing operations (LGPD Art. 37), as Markdown."""
    with _client(url, token) as client:
        text = client.request_text("GET", "/api/v1/audit/records", "the processing records")
    _write(text, output, tr("the processing records (Art. 37)"))


# --- lineage -------------------------------------------------------------------------------------------------
@lineage_app.command("dataset")
def lineage_dataset(
    name: Annotated[str, typer.Argument(help="Dataset name, from 'treino data list'.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Each version of a dataset, the jobs that read it and the models they made."""
    with _client(url, token) as client:
        d = client.request("GET", f"/api/v1/lineage/datasets/{name}", f"the lineage of {name}")
    if as_json:
        _print_json(d)
        return
    table = _table(
        tr(
            "{name}: {versions} version(s), {reads} recorded read(s)",
            name=d["name"],
            versions=len(d["versions"]),
            reads=d["reads"],
        ),
        (N_("version"), "sha256", N_("rows"), N_("state"), N_("jobs"), N_("models")),
        right=("rows",),
    )
    for v in d["versions"]:
        models = ", ".join(
            f"#{m['id']} {m['kind']}"
            + (tr(" (erasure #{id})", id=m["affected_by_erasure"]) if m["affected_by_erasure"] else "")
            for m in v["models"]
        )
        table.add_row(
            f"v{v['number']}",
            _short(v["sha256"]),
            tr("{n:,}", n=v["rows"]),
            tr("purged {when}", when=_when(v["purged_at"])) if v["purged_at"] else tr("kept"),
            ", ".join(f"#{j}" for j in v["jobs"]) or "-",
            models or "-",
            style="dim" if v["purged_at"] else "",
        )
    _print(table)


@lineage_app.command("model")
def lineage_model(
    model_id: Annotated[int, typer.Argument(help="Model id, from 'treino lineage models'.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """One model: the job that made it and the dataset versions it was trained on."""
    with _client(url, token) as client:
        m = client.request("GET", f"/api/v1/lineage/models/{model_id}", f"model {model_id}")
    if as_json:
        _print_json(m)
        return
    head = {k: m[k] for k in ("id", "kind", "step", "job", "job_name")}
    _print(_styled(tr("Model {id} ({kind}, step {step}) of job {job} ({job_name})", **head), "bold"))
    _print(tr("path: {path}", path=m["path"]))
    personal = _yes_no(m["personal_data"])
    _print(tr("personal data: {personal}; residency: {residency}", personal=personal, residency=m["residency"] or "-"))
    if m["affected_by_erasure"]:
        note = f": {m['erasure_note']}" if m["erasure_note"] else ""
        _print(_styled(tr("affected by erasure #{id}", id=m["affected_by_erasure"]) + note, "bold red"))
    if m.get("deleted_at"):
        gone = tr("deleted {when} by {who}: its files are gone", when=_when(m["deleted_at"]), who=m["deleted_by"])
        _print(_styled(gone, "bold red"))
    elif m.get("quarantined_at"):
        held = tr("quarantined {when} by {who}: not served", when=_when(m["quarantined_at"]), who=m["quarantined_by"])
        _print(_styled(held, "bold red"))
    elif lifted := m.get("quarantine_lifted"):
        _print(_styled(_lifted_line(lifted), "bold yellow"))
    table = _table(tr("trained on"), (N_("dataset"), N_("version"), "sha256", N_("purpose"), N_("state")))
    for r in m["trained_on"]:
        table.add_row(
            r["dataset"],
            f"v{r['version']}",
            _short(r["sha256"]),
            r["purpose"] or "-",
            tr("erased") if r["erased"] else tr("kept"),
            style="red" if r["erased"] else "",
        )
    _print(table)


@lineage_app.command("models")
def lineage_models(as_json: JsonOpt = False, url: UrlOpt = None, token: TokenOpt = None) -> None:
    """Every model the server recorded, newest first; those trained on erased data are highlighted."""
    with _client(url, token) as client:
        rows = client.every("/api/v1/models", "models")
    if as_json:
        _print_json(rows)
        return
    affected = sum(1 for m in rows if m["affected_by_erasure"])
    table = _table(
        tr("{n} model(s), {affected} affected by erasure", n=len(rows), affected=affected),
        (
            N_("id"),
            N_("job"),
            N_("kind"),
            N_("step"),
            N_("trained on"),
            N_("personal"),
            N_("erasure"),
            N_("quarantine"),
        ),
        right=("id", "job", "step"),
    )
    for m in rows:
        table.add_row(
            str(m["id"]),
            f"{m['job']} ({m['job_name']})" if m["job_name"] else str(m["job"]),
            m["kind"],
            str(m["step"]) if m["step"] is not None else "-",
            ", ".join(f"{r['dataset']} v{r['version']}" for r in m["trained_on"]) or "-",
            _yes_no(m["personal_data"]),
            f"#{m['affected_by_erasure']}" if m["affected_by_erasure"] else "",
            _quarantine_cell(m),
            style="bold red" if m["affected_by_erasure"] and not m.get("quarantine_lifted") else "",
        )
    _print(table)


def _quarantine_cell(m: dict[str, Any]) -> str:
    """'deleted', 'quarantined', 'lifted DATE by WHO' or '' (never quarantined)."""
    if m.get("deleted_at"):
        return tr("deleted")
    if m.get("quarantined_at"):
        return tr("quarantined")
    if lifted := m.get("quarantine_lifted"):
        return tr("lifted {when} by {who}", when=_when(lifted["at"]), who=lifted["by"])
    return ""


def _lifted_line(lifted: dict[str, Any]) -> str:
    """How a model's quarantine was lifted: when, by whom, why, and on what ground."""
    ground = (
        tr("its erasure carried through by retraining job {job}", job=lifted["retraining"])
        if lifted.get("retraining")
        else tr("legal basis: {basis}", basis=lifted["legal_basis"])
    )
    return tr(
        "quarantine lifted {when} by {who} ({ground}): {reason}",
        when=_when(lifted["at"]),
        who=lifted["by"],
        ground=ground,
        reason=lifted["reason"],
    )


def _model_action(model_id: int, action: str, as_json: bool, url: str | None, token: str | None) -> None:
    with _client(url, token) as client:
        m = client.request("POST", f"/api/v1/models/{model_id}/{action}", f"model {model_id}")
    if as_json:
        _print_json(m)
        return
    if action == "quarantine":
        typer.echo(
            tr("Model {id} quarantined by {who}: its file is no longer served.", id=m["id"], who=m["quarantined_by"])
        )
    else:
        typer.echo(
            tr(
                "Model {id} deleted by {who}: its files and job {job}'s checkpoints gone.",
                id=m["id"],
                who=m["deleted_by"],
                job=m["job"],
            )
        )


@lineage_app.command("quarantine")
def lineage_quarantine(
    model_id: Annotated[int, typer.Argument(help="Id of a model an erasure marked ('treino lineage models').")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Quarantine a model an erasure marked: it stays on disk, but its file is no longer served."""
    _model_action(model_id, "quarantine", as_json, url, token)


@lineage_app.command("lift")
def lineage_lift(
    model_id: Annotated[int, typer.Argument(help="Id of a quarantined model ('treino lineage models').")],
    reason: Annotated[
        str, typer.Option("--reason", help="Why it may be used again; kept in the audit chain.", show_default=False)
    ],
    legal_basis: Annotated[
        str,
        typer.Option(
            "--legal-basis",
            help="The legal basis for using it although its erasure has not been carried through (LGPD Art. 16).",
        ),
    ] = "",
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Lift a model's quarantine: its file is served again. Refused while the erasure that marked it has not been
    carried through to it (its job retrained), unless --legal-basis names why the law keeps it in use."""
    body = {"reason": reason, "legal_basis": legal_basis}
    with _client(url, token) as client:
        m = client.request("POST", f"/api/v1/models/{model_id}/lift", f"model {model_id}", json=body)
    if as_json:
        _print_json(m)
        return
    typer.echo(
        tr(
            "Model {id}'s quarantine lifted by {who}: its file is served again.",
            id=m["id"],
            who=m["quarantine_lifted"]["by"],
        )
    )


@lineage_app.command("delete")
def lineage_delete(
    model_id: Annotated[int, typer.Argument(help="Id of a model an erasure marked ('treino lineage models').")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Delete a model an erasure marked: its files and its job's checkpoint folder are removed; the record stays."""
    _model_action(model_id, "delete", as_json, url, token)


# --- data subjects -------------------------------------------------------------------------------------------
def erase(
    subject: Annotated[str, typer.Option("--subject", help="The subject's id in the datasets' subject column.")],
    dataset: Annotated[str | None, typer.Option("--dataset", help="Only this dataset (default: all).")] = None,
    retrain: Annotated[
        bool, typer.Option("--retrain", help="Queue the affected jobs again on the new versions.")
    ] = False,
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """Erase a data subject (LGPD Art. 18 VI): new versions without them, old bytes purged, models marked."""
    body = {"subject": subject, "dataset": dataset, "retrain": retrain}
    with _client(url, token) as client:
        r = client.request("POST", "/api/v1/erasures", N_("the erasure"), json=body)
    if as_json:
        _print_json(r)
        return
    pseudonym = r["subject_pseudonym"][:16]
    _print(
        _styled(
            tr(
                "Erasure #{id} of subject {subject} (pseudonym {pseudonym})",
                id=r["erasure"],
                subject=subject,
                pseudonym=pseudonym,
            ),
            "bold",
        ),
        tr("answer due by {date} (LGPD Art. 19: {days} days)", date=_date(r["deadline_at"]), days=r["deadline_days"]),
    )
    none = tr("none")
    if not r["found"]:
        searched = ", ".join(r["searched"]) or none
        found = tr(
            "no records in the {n} searched dataset(s) ({searched}); nothing erased",
            n=len(r["searched"]),
            searched=searched,
        )
        _print(_styled(found, "yellow"))
    for d in r["datasets"]:
        purged = ", ".join(f"v{p['version']} ({_short(p['sha256'])})" for p in d["purged"]) or none
        new = f"v{d['new_version']} ({_short(d['new_sha256'])})" if d["new_version"] else none
        _print(
            tr(
                "{dataset}: {rows} row(s) removed; purged {purged}; new version {new}",
                dataset=d["dataset"],
                rows=d["rows_removed"],
                purged=purged,
                new=new,
            )
        )
    _print(tr("models marked: {ids}", ids=", ".join(f"#{m}" for m in r["models"]) or none))
    if retrain:
        _print(tr("retrain jobs queued: {ids}", ids=", ".join(f"#{j}" for j in r["retrain_jobs"]) or none))
    elif r["jobs"]:
        ids = ", ".join(f"#{j}" for j in r["jobs"])
        _print(tr("jobs that read the erased versions: {ids} (--retrain queues them)", ids=ids))
    if r["unsearched"]:
        _print(_styled(tr("not searchable (no subject column): {names}", names=", ".join(r["unsearched"])), "yellow"))


@subject_app.command("report")
def subject_report(
    subject: Annotated[str, typer.Option("--subject", help="The subject's id in the datasets' subject column.")],
    as_json: JsonOpt = False,
    url: UrlOpt = None,
    token: TokenOpt = None,
) -> None:
    """What the server holds about a data subject (LGPD Art. 18 II): datasets, versions, models, erasures."""
    with _client(url, token) as client:
        r = client.request("POST", "/api/v1/subjects/report", N_("the subject report"), json={"subject": subject})
    if as_json:
        _print_json(r)
        return
    head = tr(
        "Subject {subject} (pseudonym {pseudonym}): {when}",
        subject=subject,
        pseudonym=r["subject_pseudonym"][:16],
        when=_when(r["generated_at"]),
    )
    _print(_styled(head, "bold"))
    if not r["found"]:
        _print(_styled(from_server(r["text"], r.get("text_msg")), "yellow"))
    if r["holdings"]:
        table = _table(
            tr("held in"),
            (
                N_("dataset"),
                N_("version"),
                "sha256",
                N_("rows"),
                N_("basis"),
                N_("purposes"),
                N_("residency"),
                N_("granted to"),
            ),
            right=("rows",),
        )
        for h in r["holdings"]:
            table.add_row(
                h["dataset"],
                f"v{h['version']}",
                _short(h["sha256"]),
                str(h["rows"]),
                h["legal_basis"],
                ", ".join(h["purposes"]),
                h["residency"],
                ", ".join(h["granted_to"]) or "-",
            )
        _print(table)
    for m in r["models"]:
        _print(tr("model #{id} ({kind}) of job #{job}", id=m["id"], kind=m["kind"], job=m["job"]))
    for e in r["erasures"]:
        _print(
            tr(
                "erasure #{id} requested {when}, due {date}",
                id=e["id"],
                when=_when(e["requested_at"]),
                date=_date(e["deadline_at"]),
            )
        )
        for m in e.get("memorisation", []):  # a SISA retraining's check (docs/govern.md: what it does not prove)
            gaps = {side: (m.get(side) or {}).get("gap") for side in (N_("before"), N_("after"))}
            sides = [tr("{side} {gap:+.3f}", side=Msg(side), gap=gap) for side, gap in gaps.items() if gap is not None]
            _print(
                tr(
                    "  memorisation check, job #{job}: loss gap erased - held-out rows {sides}",
                    job=m["job"],
                    sides=", ".join(sides),
                )
            )
        for mm in e.get("models", []):  # what became of each model it marked
            state = _lifted_line(mm["lift"]) if mm["state"] == "lifted" and mm.get("lift") else tr(mm["state"])
            _print(
                tr(
                    "  model #{id} ({kind}) of job #{job}: {state}",
                    id=mm["id"],
                    kind=mm["kind"],
                    job=mm["job"],
                    state=state,
                )
            )
