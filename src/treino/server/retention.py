"""Retention enforced, on the server: extending a dataset's period (audited), erasing an expired dataset (audited,
the purge an erasure does), and the periodic check that notifies (webhook retention.expired) and, with
`treino server --retention-erase`, erases what expired. Reads of an expired dataset are refused where reads are
checked (treino.server.governance, treino.server.submission: treino.govern.retention.check_retention)."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from sqlalchemy import select

from treino.errors import TreinoError
from treino.govern import retention
from treino.govern.audit import Action, pseudonym
from treino.govern.datasets import open_erasure
from treino.govern.models import Dataset, DatasetVersion
from treino.i18n import Msg
from treino.server.context import ServerContext
from treino.server.governance import dataset_named
from treino.server.isolation import drop_dataset_copies
from treino.server.schemas import RetentionOut
from treino.server.settings import RETENTION_CHECK_S
from treino.server.tasks import PeriodicTask

log = logging.getLogger("treino.server")


def extend(ctx: ServerContext, name: str, *, days: int, legal_basis: str, reason: str, actor: str) -> RetentionOut:
    """A new retention period of `days` from now for dataset `name`, on a documented legal basis."""
    with ctx.sessions.begin() as s:
        d = dataset_named(s, name)
        was = retention.expires_at(d)
        done = retention.extend(d, days=days, legal_basis=legal_basis, reason=reason)
        detail: dict[str, Any] = {
            "retention_days": days,
            "was_until": was,
            "until": done.until,
            "legal_basis": legal_basis,
            "reason": reason,
        }
        ctx.audit.append(s, actor=actor, action=Action.RETENTION_EXTEND, dataset=name, detail=detail)
    ctx.retention_changed.set()
    return RetentionOut(dataset=name, expires_at=done.until, expired=False)


def erase_dataset(ctx: ServerContext, name: str, *, actor: str, only_expired: bool = True) -> RetentionOut:
    """Erase every live version of dataset `name` (its retention over): bytes deleted, hashes kept, the models
    trained on it marked, through an Erasure row with its Art. 19 deadline; audited as retention.erase."""
    with ctx.sessions.begin() as s:
        d = dataset_named(s, name)
        end = retention.expires_at(d)
        if only_expired and not retention.expired(d):
            raise TreinoError(
                Msg(
                    "Dataset {name}'s retention period has not expired (it ends on {day}). To fix: erase subjects "
                    "with 'treino erase', or wait until it expires.",
                    name=name,
                    day=retention.day(end),
                )
                if end is not None
                else Msg(
                    "Dataset {name}'s retention period has not expired (it has none). To fix: erase subjects with "
                    "'treino erase', or wait until it expires.",
                    name=name,
                )
            )
        # No data subject: the erasure row carries the pseudonym of "retention:NAME", which no subject id gives.
        erasure = open_erasure(
            s, subject_pseudonym=pseudonym(ctx.audit.key, f"retention:{name}"), dataset=name, requested_by=actor
        )
        purged = retention.purge(s, ctx.settings.store, d, erasure_id=erasure.id)
        report = {
            "found": bool(purged.versions),
            "retention": True,
            "versions": purged.versions,
            "models": purged.models,
            "text": f"{name}: retention expired; purged version(s) {purged.versions}",
        }
        erasure.report = report
        detail: dict[str, Any] = {
            "erasure": erasure.id,
            "versions": purged.versions,
            "models": purged.models,
            "expired_at": end,
        }
        ctx.audit.append(s, actor=actor, action=Action.RETENTION_ERASE, dataset=name, detail=detail)
    for rel in purged.files:
        (ctx.settings.store / rel).unlink(missing_ok=True)
    drop_dataset_copies(ctx.settings.jobs_dir, {Path(rel).name for rel in purged.files})
    return RetentionOut(dataset=name, expires_at=end, expired=True, erasure=erasure.id, purged_versions=purged.versions)


def _live_periods(ctx: ServerContext) -> list[tuple[str, float]]:
    """The datasets with a retention period that still hold live versions: (name, when the period ends)."""
    with ctx.sessions() as s:
        live = select(DatasetVersion.dataset_id).where(DatasetVersion.purged_at.is_(None))
        rows = s.scalars(
            select(Dataset).where(Dataset.retention_days.is_not(None), Dataset.id.in_(live)).order_by(Dataset.name)
        )
        return [(d.name, end) for d in rows if (end := retention.expires_at(d)) is not None]


def check_expired(ctx: ServerContext) -> float | None:
    """Notify each expired dataset once (per period); erase it when the server runs with --retention-erase. The
    seconds until the next live period ends (None: none will)."""
    periods, now = _live_periods(ctx), time.time()
    for name, end in periods:
        if end > now:
            continue
        if ctx.webhooks is not None:
            payload = {"event": "retention.expired", "dataset": name, "expired_at": end}
            ctx.webhooks.notify_once("retention.expired", payload, f"retention {name}:{end:.0f}")
        if ctx.settings.retention_erase:
            erase_dataset(ctx, name, actor="treino")
            log.info("dataset %s erased: its retention period expired on %s", name, retention.day(end))
    return min((end - now for _, end in periods if end > now), default=None)


def retention_task(ctx: ServerContext) -> PeriodicTask:
    """check_expired at once, then when the next period ends, when ctx.retention_changed is set, and at least
    every RETENTION_CHECK_S."""
    ctx.retention_changed.set()
    return PeriodicTask("retention", RETENTION_CHECK_S, lambda: check_expired(ctx), wakeup=ctx.retention_changed)
