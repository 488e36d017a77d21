"""Retention enforced (LGPD Art. 15-16): a dataset past its retention period is blocked for new reads.

A dataset's retention period runs `retention_days` from `retention_from` (when its data was collected, if that was
before its registration) or else from its registration. Past the end, job admission and `run.dataset` reads are
refused (PolicyViolation, rule "retention") with the date and the two ways out: extend the period with a documented
legal basis (`extend`, audited as retention.extend: Art. 16 lets data be kept past its purpose for a legal
obligation, research, transfer or the controller's exclusive use once anonymised), or erase the dataset (`purge`,
the same purge an erasure does: every live version's bytes deleted, hashes kept, derived models marked).
"""

from __future__ import annotations

import datetime as dt
import time
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import PolicyViolation, TreinoError
from treino.govern.datasets import _mark_models, _models_of, _unshared_files
from treino.govern.models import Dataset, DatasetVersion
from treino.i18n import Msg

DAY_S = 86_400.0


def expires_at(ds: Dataset) -> float | None:
    """When `ds`'s retention period ends (unix s), or None when it has none."""
    if ds.retention_days is None:
        return None
    start = ds.retention_from if ds.retention_from is not None else ds.created_at
    return start + ds.retention_days * DAY_S


def expired(ds: Dataset, now: float | None = None) -> bool:
    end = expires_at(ds)
    return end is not None and end <= (time.time() if now is None else now)


def day(t: float) -> str:
    return dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d")


def check_retention(ds: Dataset, now: float | None = None) -> None:
    """PolicyViolation when `ds`'s retention period is over."""
    end = expires_at(ds)
    if end is None or not expired(ds, now):
        return
    raise PolicyViolation(
        "retention",
        Msg(
            "dataset {dataset}'s retention period ({days} days) expired on {day}; it may no longer be read (LGPD Art. "
            "15-16). To fix: a DPO extends it with a documented legal basis (treino data retain {dataset} --days N "
            "--legal-basis BASIS --reason TEXT), or erases it (treino data retain {dataset} --erase).",
            dataset=ds.name,
            days=ds.retention_days,
            day=day(end),
        ),
    )


@dataclass(frozen=True)
class Extended:
    retention_days: int
    retention_from: float
    until: float


def extend(ds: Dataset, *, days: int, legal_basis: str, reason: str, now: float | None = None) -> Extended:
    """A new retention period of `days` from now, on a stated legal basis (Art. 16 I-IV) and reason."""
    if days <= 0:
        raise TreinoError(
            Msg("Retention of {days} days: it must be a positive number of days. To fix: e.g. --days 365.", days=days)
        )
    if not legal_basis.strip() or not reason.strip():
        raise PolicyViolation(
            "LGPD Art. 16",
            Msg(
                "keeping data past its retention period needs a documented legal basis and reason. To fix: pass "
                "--legal-basis (e.g. 'Art. 16 I: legal obligation') and --reason."
            ),
        )
    start = time.time() if now is None else now
    ds.retention_days, ds.retention_from = days, start
    return Extended(days, start, start + days * DAY_S)


@dataclass
class Purged:
    versions: list[int]  # version numbers whose bytes were purged
    models: list[int]  # models marked
    files: list[str]  # store paths no live version points to any more: delete them after the commit


def purge(session: Session, store: Path, ds: Dataset, *, erasure_id: int) -> Purged:
    """Every live version of `ds` purged (bytes to delete, hashes kept) and the models trained on them marked with
    `erasure_id`, as an erasure does (treino.govern.datasets.erase_subject)."""
    now = time.time()
    live = list(
        session.scalars(
            select(DatasetVersion).where(DatasetVersion.dataset_id == ds.id, DatasetVersion.purged_at.is_(None))
        )
    )
    for v in live:
        v.purged_at = now
    uses, _ = _models_of(session, {v.id: (ds.name, v.number) for v in live})
    _mark_models(session, uses, erasure_id)
    session.flush()
    files = _unshared_files(session, store, {v.path for v in live}, delete_files=False)
    return Purged(sorted(v.number for v in live), sorted({u.model_id for u in uses}), files)
