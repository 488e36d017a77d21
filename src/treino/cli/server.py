"""`treino server`: the job server on this machine."""

from __future__ import annotations

import gc
import logging
import os
import signal
import socket
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Annotated

import typer

from treino.i18n import Msg, current, tr
from treino.server.settings import (
    AUDIT_ANCHOR_S,
    AUTH_FAILURE_WINDOW_S,
    AUTH_FAILURES_MAX,
    COOKIE_MAX_AGE_S,
    DEFAULT_DATA_DIR,
    DEFAULT_HOST,
    DEFAULT_JOB_USER,
    DEFAULT_PORT,
    ERASURE_WARN_DAYS,
    LOGS_VISIBLE_TO,
    TRUSTED_PROXIES,
)

if TYPE_CHECKING:  # the CLI imports this module at start: the server stack only when it runs
    from fastapi import FastAPI
    from rich.console import Console

    from treino.govern.access import Site
    from treino.server.context import ServerContext
    from treino.server.isolation import JobUser


def server(
    data_dir: Annotated[
        Path, typer.Option("--data-dir", help="Database, job logs and checkpoints.")
    ] = DEFAULT_DATA_DIR,
    host: Annotated[str, typer.Option(help="Address to listen on.")] = DEFAULT_HOST,
    port: Annotated[int, typer.Option(help="Port to listen on.")] = DEFAULT_PORT,
    devices: Annotated[
        str, typer.Option(help="'auto': NVIDIA GPUs through NVML; 'cpu:N': N CPU slots (jobs use gloo).")
    ] = "auto",
    db: Annotated[
        str, typer.Option(help="Database URL (default: SQLite in the data dir), e.g. postgresql+psycopg://...")
    ] = "",
    site: Annotated[
        str, typer.Option(help="Where this server is, from the sites catalog (e.g. eveo-sp1): residency decisions.")
    ] = "",
    import_root: Annotated[
        list[Path] | None,
        typer.Option("--import-root", help="A folder datasets may be registered from (repeatable)."),
    ] = None,
    controller: Annotated[
        str, typer.Option(help="The controller (company) named in the Art. 37 records of processing.")
    ] = "",
    admission_gpu: Annotated[
        str,
        typer.Option(help="Catalog GPU to plan jobs against (default: the GPUs found; none on CPU slots)."),
    ] = "",
    backend: Annotated[
        str, typer.Option(help="'local': this machine's GPUs; 'slurm': an existing Slurm cluster (SLURM_CONF).")
    ] = "local",
    partition: Annotated[
        list[str] | None,
        typer.Option(
            "--partition",
            help="Slurm partition jobs may run on, as NAME or NAME=SITE (its site in the sites catalog, for "
            "residency); repeatable. Default: every partition, at --site.",
        ),
    ] = None,
    slurm_account: Annotated[str, typer.Option(help="Slurm account to charge jobs to (sbatch --account).")] = "",
    shared_dir: Annotated[
        Path | None,
        typer.Option(help="Job folders and the dataset store, on a filesystem every node mounts (default: data dir)."),
    ] = None,
    public_url: Annotated[
        str, typer.Option(help="How jobs reach this server (TREINO_URL); default http://HOST:PORT.")
    ] = "",
    logs_visible_to: Annotated[
        str,
        typer.Option(help="Who may read a job's logs: 'owner' (its owner) and roles, comma-separated; or 'all'."),
    ] = ",".join(LOGS_VISIBLE_TO),
    auth_failures_max: Annotated[
        int, typer.Option(min=1, help="Bad tokens one client address may present per window before 429.")
    ] = AUTH_FAILURES_MAX,
    auth_failure_window_s: Annotated[
        float, typer.Option(min=0.1, help="The window of --auth-failures-max, in seconds.")
    ] = AUTH_FAILURE_WINDOW_S,
    session_max_age_s: Annotated[
        float, typer.Option(min=1, help="How long a dashboard login lasts, in seconds.")
    ] = COOKIE_MAX_AGE_S,
    trusted_proxies: Annotated[
        str,
        typer.Option(help="Reverse proxies (comma-separated addresses) whose X-Forwarded-For/-Proto are believed."),
    ] = TRUSTED_PROXIES,
    job_user: Annotated[
        str,
        typer.Option(
            help=f"Unix user local jobs run as, so they cannot read the data dir (needs root). Default as root: "
            f"{DEFAULT_JOB_USER}, created if missing; naming the server's own user runs jobs as it (as before).",
        ),
    ] = "",
    webhook: Annotated[
        list[str] | None,
        typer.Option(
            "--webhook",
            help="URL to POST signed notifications to (job end, erasure deadline near); repeatable. docs/server.md",
        ),
    ] = None,
    webhook_secret_file: Annotated[
        Path | None,
        typer.Option(help="File holding the webhooks' HMAC secret (default: DATA_DIR/webhook-secret, made once)."),
    ] = None,
    erasure_warn_days: Annotated[
        float, typer.Option(min=0, help="Notify an open erasure request this many days before its deadline.")
    ] = ERASURE_WARN_DAYS,
    retention_erase: Annotated[
        bool,
        typer.Option(
            "--retention-erase",
            help="Erase datasets past their retention period (checked at start and hourly; audited). Off: they are "
            "only blocked for reads and notified.",
        ),
    ] = False,
    offer: Annotated[
        str,
        typer.Option(
            help="Catalog offer this server is (treino offers): `treino usage` prices GPU-hours at its monthly "
            "price / (GPUs x 730 h)."
        ),
    ] = "",
    gpu_hour_brl: Annotated[
        float | None, typer.Option(help="Price of one GPU-hour in BRL for `treino usage` (instead of --offer).")
    ] = None,
    audit_anchor: Annotated[
        Path | None,
        typer.Option(
            help="File outside the data dir (best write-once or remote) to append signed anchors of the audit head "
            "to, for 'treino audit verify --anchors'. docs/govern.md"
        ),
    ] = None,
    audit_anchor_url: Annotated[
        list[str] | None,
        typer.Option("--audit-anchor-url", help="URL to POST each audit anchor to, signed as --webhook; repeatable."),
    ] = None,
    audit_anchor_interval_s: Annotated[
        float, typer.Option(min=0.1, help="Seconds between audit anchors (written when the head moved).")
    ] = AUDIT_ANCHOR_S,
) -> None:
    """Queue and run training jobs on this machine's GPUs, or on a Slurm cluster: whole GPUs per job, priorities,
    preemption, restarts from checkpoints, live metrics. Jobs survive a server crash and are adopted when it
    starts again."""
    from rich.console import Console

    from treino import catalog
    from treino.errors import UsageError
    from treino.govern.access import log_readers
    from treino.govern.access import site as find_site
    from treino.server.admission import admission_for, gpu_for
    from treino.server.api import build_app
    from treino.server.backend import Backend, LocalBackend
    from treino.server.claims import bind_port, lock_data_dir
    from treino.server.context import ServerContext
    from treino.server.db import check_database, make_engine, make_sessionmaker, migrate, sqlite_url
    from treino.server.inventory import discover
    from treino.server.isolation import drop_dataset_copies
    from treino.server.settings import Settings, load_or_create_key
    from treino.server.usage import server_price

    out = Console(stderr=True, highlight=False)
    readers = log_readers(logs_visible_to)
    data_dir = data_dir.expanduser().resolve()
    data_dir.mkdir(parents=True, exist_ok=True)
    data_dir.chmod(0o700)  # the database, tokens, server key, job logs and the dataset store: the server's user only
    # One server per data dir, and a port that is free, before the database is touched or "Listening" is said.
    data_dir_lock = lock_data_dir(data_dir)
    listener = bind_port(host, port)
    webhooks, webhook_secret = _webhooks(webhook or [], webhook_secret_file, data_dir, out)
    anchor_file, anchor_urls, webhook_secret = _anchors(
        audit_anchor, audit_anchor_url or [], webhook_secret, webhook_secret_file, data_dir, shared_dir
    )
    _say_anchors(out, anchor_file, anchor_urls, audit_anchor_interval_s)
    price = server_price(offer, gpu_hour_brl)
    if shared_dir is not None:
        shared_dir = shared_dir.expanduser().resolve()
        shared_dir.mkdir(parents=True, exist_ok=True)
        shared_dir.chmod(0o700)
    default_site = find_site(site) if site else None
    partition_sites = {}
    the_backend: Backend
    runs_as = _job_user(backend, job_user, data_dir, shared_dir)
    if backend == "slurm":
        from treino.server.slurm import SlurmBackend, server_tag

        # NAME=SITE maps a partition to where its nodes are. NAME alone has no site (data with a residency is not
        # sent there): a forgotten mapping must not pass a Miami partition off as São Paulo. Without --partition,
        # the whole cluster is at --site.
        for entry in partition or ():
            name, _, where = entry.partition("=")
            partition_sites[name] = find_site(where) if where else None
        slurm = SlurmBackend(list(partition_sites), slurm_account or None, tag=server_tag(data_dir))
        slurm.check()
        partition_sites = {p: partition_sites[p] if partition else default_site for p in slurm.partitions}
        for n in slurm.inventory().nodes:
            sites = {at.name if (at := partition_sites[p]) else None for p in n.partitions}
            if len(sites) > 1:
                mixed = tr(
                    "node {node} is in partitions mapped to different sites ({sites}); residency is decided per "
                    "partition.",
                    node=n.name,
                    sites=", ".join(sorted(str(s) for s in sites)),
                )
                out.print(f"[yellow]{tr('warning')}:[/] {mixed}")
        shared = str(shared_dir or data_dir)
        out.print(tr("Slurm: checking that {path} is shared with the nodes (a 1-node job) ...", path=shared))
        slurm.check_shared(shared_dir or data_dir)
        the_backend = slurm
    elif backend == "local":
        if partition or slurm_account:
            raise UsageError(
                Msg("--partition and --slurm-account go with --backend slurm. To fix: add --backend slurm.")
            )
        the_backend = LocalBackend(discover(devices), runs_as)
    else:
        raise UsageError(Msg("Unknown --backend {backend!r}. To fix: use 'local' or 'slurm'.", backend=backend))
    inventory = the_backend.inventory()
    engine = make_engine(db or sqlite_url(data_dir))
    check_database(engine)  # a corrupt database refuses to start, rather than fail request by request
    key = load_or_create_key(data_dir)
    migrate(engine, key=key, store=(shared_dir or data_dir) / "store")
    public_host = "127.0.0.1" if host in ("0.0.0.0", "::") else host
    settings = Settings(
        data_dir,
        public_url.rstrip("/") or f"http://{public_host}:{port}",
        key=key,
        site=default_site,
        import_roots=tuple(p.expanduser().resolve() for p in import_root or ()),
        partition_sites=partition_sites,
        shared_dir=shared_dir,
        auth_failures_max=auth_failures_max,
        auth_failure_window_s=auth_failure_window_s,
        session_max_age_s=session_max_age_s,
        logs_visible_to=readers,
        job_user=runs_as,
        webhooks=webhooks,
        webhook_secret=webhook_secret,
        erasure_warn_days=erasure_warn_days,
        retention_erase=retention_erase,
        gpu_hour_price=price,
        audit_anchor_file=anchor_file,
        audit_anchor_urls=anchor_urls,
        audit_anchor_interval_s=audit_anchor_interval_s,
        **({"controller": controller} if controller else {}),
    )
    gpu = catalog.gpu(admission_gpu) if admission_gpu else None
    if gpu is None and inventory.kind == "gpu" and inventory.devices:
        gpu = gpu_for(inventory.devices[0].name)
    admission = admission_for(gpu, lambda: the_backend.inventory().max_devices_per_node()) if gpu else None
    ctx = ServerContext.create(settings, make_sessionmaker(engine), the_backend, admission)
    from treino.govern.datasets import sweep_purged

    with ctx.sessions.begin() as s:
        swept = sweep_purged(s, settings.store)
    drop_dataset_copies(settings.jobs_dir, {Path(rel).name for rel in swept})
    if swept:
        out.print(
            tr("Deleted {n} dataset file(s) an interrupted erasure or import had left in the store.", n=len(swept))
        )
    token = ctx.create_admin_token()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    counts = ctx.engine.reconcile()
    out.print(tr("treino server: {devices}; data in {path}", devices=inventory.describe(), path=str(data_dir)))
    if backend == "local":
        _say_job_user(out, runs_as, settings.python)
    if any(counts.values()):
        out.print(
            tr(
                "Reconciled after restart: {adopted} job(s) adopted, {requeued} requeued, {finished} finished while "
                "the server was down.",
                **counts,
            )
        )
    here = settings.site
    for line in [_partition_line(name, at) for name, at in partition_sites.items()] or [_site_line(here)]:
        out.print(line)
    no_price = tr("Usage: GPU-hours, no price (--offer, --gpu-hour-brl)")
    out.print(tr("Usage priced at: {basis}", basis=price.basis) if price else no_price)
    checked = tr("Admission control: plans checked against {gpu}", gpu=gpu.display_name) if gpu else None
    out.print(checked or tr("Admission control: off (no GPU model)"))
    if token:
        where = str(data_dir / "admin-token")
        out.print(tr("Admin token (shown once; also in {path}, mode 0600): {token}", path=where, token=token))
    ctx.start()
    out.print(
        tr(
            "Listening on http://{host}:{port} (API under /api/v1, dashboard at /, log in with a token)",
            host=host,
            port=str(port),
        )
    )
    serve_until_stopped(build_app(ctx), listener, trusted_proxies, ctx, out)
    data_dir_lock.close()  # the kernel would release it at exit all the same


def _partition_line(name: str, at: Site | None) -> str:
    if at is None:
        return tr("Partition {name}: no site", name=name)
    return tr(
        "Partition {name}: site {site} ({city}, {country})", name=name, site=at.name, city=at.city, country=at.country
    )


def _site_line(here: Site | None) -> str:
    if here is None:
        return tr("Site: none (--site): jobs on datasets with a residency are refused")
    return tr(
        "Site: {name} ({city}, {country}, {provider})",
        name=here.name,
        city=here.city,
        country=here.country,
        provider=here.provider,
    )


STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def serve_until_stopped(
    app: FastAPI, listener: socket.socket, trusted_proxies: str, ctx: ServerContext, out: Console
) -> None:
    """Serve until SIGTERM or SIGINT, then shut down cleanly: the periodic tasks stopped, the audit head signed,
    running jobs left to their detached supervisors for the next start to adopt."""
    import uvicorn
    from sqlalchemy.exc import DBAPIError

    from treino.errors import TreinoError

    # Uvicorn ends its loop on SIGTERM and SIGINT, then re-raises the signal to the handler it found: with Python's
    # default for SIGTERM that killed the process before the shutdown below ran (no signed audit checkpoint).
    # Both signals therefore raise ServerStopped here, and the shutdown always runs.
    for sig in STOP_SIGNALS:
        signal.signal(sig, _stop)
    how: str = Msg("on its own")
    # What start-up built (the app, its routes and models, the caches) lives as long as the server: out of the
    # collector's reach, a full collection no longer walks it while requests wait (the list's p99 under load).
    gc.collect()
    gc.freeze()
    try:
        config = uvicorn.Config(
            app,
            log_level="warning",
            # the client's address is the TCP peer's (its failure budget) unless a trusted proxy names another
            proxy_headers=bool(trusted_proxies),
            forwarded_allow_ips=trusted_proxies or None,
        )
        uvicorn.Server(config).run(sockets=[listener])  # the socket bound at start (treino.server.claims)
    except ServerStopped as stopped:
        how = Msg("by {signal}", signal=str(stopped))
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the checkpoint short
        signal.signal(signal.SIGINT, signal.default_int_handler)  # a second Ctrl-C still forces the exit
        try:
            done = ctx.shutdown()
        except (OSError, DBAPIError) as exc:  # a full disk or a broken database: said in one line
            raise TreinoError(
                Msg(
                    "Stopped {how}, but the shutdown's audit checkpoint could not be signed: {error}. Running jobs "
                    "were left to their supervisors. To fix: free the disk or repair the database, then start the "
                    "server again (it signs the head every 5 minutes).",
                    how=how,
                    error=getattr(exc, "orig", exc),
                )
            ) from exc
    out.print(
        tr(
            "Stopped {how}: audit checkpoint signed at record {seq}; {n} running job(s) left to their supervisors, "
            "adopted at the next start.",
            how=how,
            seq=str(done.audit_seq_signed),
            n=done.jobs_left_running,
        )
    )


class ServerStopped(Exception):
    """A stop signal (SIGTERM from systemd, docker or kill; SIGINT from Ctrl-C) reached the server."""


def _stop(sig: int, _frame: FrameType | None) -> None:
    raise ServerStopped(signal.Signals(sig).name)


def _webhooks(urls: list[str], secret_file: Path | None, data_dir: Path, out: Console) -> tuple[tuple[str, ...], bytes]:
    """The --webhook URLs (each http(s), else TreinoError) and their HMAC secret (none without a URL)."""
    from treino.server.settings import WEBHOOK_SECRET_FILE
    from treino.server.webhooks import check_url, load_or_create_secret

    checked = tuple(check_url(url) for url in urls)
    if not checked:
        return (), b""
    secret = load_or_create_secret(data_dir, secret_file)
    where = str(secret_file or data_dir / WEBHOOK_SECRET_FILE)
    out.print(tr("Webhooks: {n} URL(s), signed with the secret in {path}", n=len(checked), path=where))
    return checked, secret


def _anchors(
    path: Path | None,
    urls: list[str],
    secret: bytes,
    secret_file: Path | None,
    data_dir: Path,
    shared_dir: Path | None,
) -> tuple[Path | None, tuple[str, ...], bytes]:
    """--audit-anchor's file (outside the data and shared dirs, else TreinoError), --audit-anchor-url's URLs, and the
    webhook secret that signs them (made when only anchor URLs need it)."""
    from treino.server.anchors import check_anchor_path
    from treino.server.webhooks import check_url, load_or_create_secret

    checked = tuple(check_url(url) for url in urls)
    if checked and not secret:
        secret = load_or_create_secret(data_dir, secret_file)
    return (check_anchor_path(path, data_dir, shared_dir) if path else None), checked, secret


def _say_anchors(out: Console, path: Path | None, urls: tuple[str, ...], interval_s: float) -> None:
    if path or urls:
        where = ", ".join([*([str(path)] if path else []), *urls])
        out.print(
            tr("Audit anchors: to {where}, every {interval:g} s and at shutdown", where=where, interval=interval_s)
        )


def _job_user(backend: str, name: str, data_dir: Path, shared_dir: Path | None) -> JobUser | None:
    """The user local jobs run as (None: the server's own), its folders reachable and the data dir secured."""
    from treino.errors import UsageError
    from treino.server.isolation import check_reachable, resolve_job_user, secure_data_dir

    if backend != "local":
        if name:
            raise UsageError(Msg("--job-user goes with --backend local. To fix: leave it out with --backend slurm."))
        return None
    job_user = resolve_job_user(name or None)
    if job_user is not None:
        check_reachable(shared_dir or data_dir, job_user)
        secure_data_dir(data_dir, shared_dir)
    return job_user


def _say_job_user(out: Console, job_user: JobUser | None, python: str) -> None:
    """Which user jobs run as; a warning when it is the server's own (jobs can then read its secrets), or when the
    job user cannot run the server's Python."""
    from treino.server.cgroups import detect
    from treino.server.isolation import python_warning, server_user

    found = detect()
    cgroup = (
        Msg("cgroup v{v} per attempt", v=str(found[0])) if found else Msg("no cgroups (stopped by their attempt key)")
    )
    warning = f"[yellow]{tr('warning')}:[/]"
    if job_user is not None:
        out.print(tr("Jobs run as user {name}, in their own folders; {cgroup}", name=job_user.name, cgroup=cgroup))
        if (problem := python_warning(python, job_user)) is not None:
            out.print(f"{warning} {current().msg(problem)}")  # once: see below
        return
    fix = (
        Msg(
            "leave out --job-user (jobs then run as {job_user}) or name an unprivileged user", job_user=DEFAULT_JOB_USER
        )
        if os.geteuid() == 0
        else Msg(
            "start the server as root (jobs then run as {job_user}) or as root with --job-user NAME",
            job_user=DEFAULT_JOB_USER,
        )
    )
    message = Msg(
        "jobs run as {user}, the server's own user: a job can read the data dir (database, admin-token, server-key, "
        "dataset store) and act as admin. To fix: {fix}.",
        user=server_user(),
        fix=fix,
    )
    out.print(f"{warning} {current().msg(message)}")  # once: the console and the log are one stream under a service
    out.print(tr("Jobs in their own folders; {cgroup}", cgroup=cgroup))
