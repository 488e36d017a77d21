"""What an erasure's retraining needs beyond a plain resubmit: SISA continuation and the memorisation check.

SISA (treino.sisa): a job whose spec has `sisa` left its shards' slice checkpoints in one folder, `sisa/`, recorded
as its checkpoint. Its erasure retraining continues from that folder (seeded into the new job's folder like any
continuation, treino.server.seed) instead of starting from scratch; the SDK then compares each slice's rows with
the manifest and retrains only the shards whose rows changed, from the slice before the first change, deleting the
later slices' checkpoints first. The new job pins only the new dataset version (no inherited lineage edge to the
erased one): every checkpoint it keeps was trained on rows the new version still holds, as the slice digests show.
The server does not load models: this rests on the SDK's check (docs/govern.md says so).

Memorisation check: every retraining job of an erasure (SISA or not) gets the erased subject's rows of the datasets
it was admitted to read, read from the purged version before its bytes are deleted, as
`erased-rows-{dataset}.parquet` in its folder (the job user's, mode 0400), and is listed in the erasure's record
(CHECKED_JOBS_KEY). The job computes its model's mean loss on them and on held-out rows (treino.sisa.erased_rows and
memorisation_check; a SISA job also before retraining, from its seeded shards; a job retrained from scratch has no
model from before) into `checkpoints/memorisation.json`. When the job ends the server copies those figures into the
erasure's record (`report.memorisation`, an `erasure.memorisation` audit record) and deletes the rows. A loss gap
(erased rows minus held-out rows) near 0 is consistent with forgetting; it does not prove that no information about
the subject remains in the model.
"""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.govern import datasets as store_ops
from treino.govern.audit import Action, AuditLog
from treino.govern.models import Erasure
from treino.server.db import Job
from treino.server.isolation import JobUser
from treino.server.settings import MEMORISATION_FILE_BYTES_MAX
from treino.sisa import ERASED_ROWS_NAME, MEMORISATION_NAME, SISA_DIR

log = logging.getLogger("treino.server")

SISA_JOBS_KEY = "sisa_retrain_jobs"  # in an erasure's report: its SISA retraining jobs that continue from checkpoints
CHECKED_JOBS_KEY = "memorisation_jobs"  # in an erasure's report: its retraining jobs given the erased rows to check
WHAT_IT_PROVES = (
    "Mean loss of the retrained model on the erased rows against held-out rows it never saw. A gap near the "
    "held-out level is consistent with the rows being forgotten; a much lower loss on the erased rows suggests "
    "they are still fitted. It does not prove that no information about the subject remains in the model."
)


def erasure_of(s: Session, job: Job) -> Erasure | None:
    """The erasure whose SISA retraining `job` is (its record lists the job, written by the server in the job's
    submit transaction), or None."""
    if not job.spec.get("sisa") or job.continues_from is None:
        return None
    for erasure in s.scalars(select(Erasure).order_by(Erasure.id.desc())):
        if job.id in (erasure.report or {}).get(SISA_JOBS_KEY, []):
            return erasure
    return None


def checked_by(s: Session, job: Job) -> Erasure | None:
    """The erasure whose retraining `job` is and which gave it the erased rows for the memorisation check (its record
    lists the job, written by the server in the job's submit transaction), or None."""
    for erasure in s.scalars(select(Erasure).order_by(Erasure.id.desc())):
        report = erasure.report or {}
        if job.id in report.get(CHECKED_JOBS_KEY, []) or job.id in report.get(SISA_JOBS_KEY, []):
            return erasure
    return None


def sisa_step(checkpoint_dir: Path) -> int | None:
    """The step of the newest complete `sisa/` checkpoint folder in `checkpoint_dir`, or None."""
    from treino.server.lineage import checkpoints_on_disk  # lineage records what this module reads at a job's end

    steps = [step for step, path, _ in checkpoints_on_disk(checkpoint_dir) if path.name == SISA_DIR]
    return max(steps) if steps else None


def erased_rows(s: Session, store: Path, result: store_ops.ErasureResult, subject: str) -> dict[str, pa.Table]:
    """The subject's rows of each dataset the erasure wrote a new version of, read from the version it replaced
    (whose bytes are still on disk: call before deleting them), by dataset name."""
    tables: dict[str, pa.Table] = {}
    for d in result.datasets:
        if d.new_version is None or not d.purged:
            continue
        ds = store_ops.get_dataset(s, d.dataset)
        if ds.subject_column is None:
            continue
        old = store_ops.resolve(s, d.dataset, max(p.number for p in d.purged))
        path = store_ops.version_path(store, old)
        if not path.exists():
            continue
        table = pq.read_table(path)
        mask = store_ops._subject_mask(ds.subject_column, table.column(ds.subject_column), subject)
        tables[d.dataset] = table.filter(mask)
    return tables


def place_erased_rows(job_dir: Path, tables: dict[str, pa.Table], user: JobUser | None) -> list[str]:
    """The erased rows in `job_dir` for the job's memorisation check, readable by the job user only."""
    job_dir.mkdir(mode=0o700, parents=True, exist_ok=True)  # the server's; prepare_job_folder opens it to 0711
    placed = []
    for name, table in tables.items():
        path = job_dir / ERASED_ROWS_NAME.format(dataset=name)
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.unlink(missing_ok=True)
        pq.write_table(table, tmp)
        if user is not None:
            os.chown(tmp, user.uid, user.gid)
        tmp.chmod(0o400)
        tmp.replace(path)
        placed.append(path.name)
    return placed


def drop_erased_rows(job_dir: Path) -> None:
    """The erased rows a retraining job was given, deleted (the job has ended)."""
    prefix, suffix = ERASED_ROWS_NAME.split("{dataset}")
    try:
        entries = list(os.scandir(job_dir))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name.startswith(prefix) and entry.name.endswith(suffix):
            Path(entry.path).unlink(missing_ok=True)


def _read_figures(checkpoint_dir: Path) -> dict[str, Any] | None:
    """The job's memorisation.json: a regular file (not a link) of at most MEMORISATION_FILE_BYTES_MAX, a JSON
    object; else None. The folder is the job's, so it may hold anything."""
    try:
        fd = os.open(checkpoint_dir / MEMORISATION_NAME, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, MEMORISATION_FILE_BYTES_MAX + 1)
    finally:
        os.close(fd)
    if len(data) > MEMORISATION_FILE_BYTES_MAX:
        return None
    try:
        figures = json.loads(data)
    except ValueError:
        return None
    return figures if isinstance(figures, dict) else None


def _clean(figures: dict[str, Any]) -> dict[str, Any]:
    """Only the fields the check writes, numbers as numbers: what the job wrote goes into the audit chain."""

    def number(v: Any) -> float | None:
        return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None

    def side(v: Any) -> dict[str, float | None] | None:
        if not isinstance(v, dict):
            return None
        return {k: number(v.get(k)) for k in ("erased_loss", "holdout_loss", "gap")}

    return {
        "metric": "mean loss",
        "erased_rows": number(figures.get("erased_rows")),
        "holdout_rows": number(figures.get("holdout_rows")),
        "before": side(figures.get("before")),
        "after": side(figures.get("after")),
    }


def record_memorisation(s: Session, audit: AuditLog, job: Job, job_dir: Path) -> None:
    """When an erasure's retraining job ends: its memorisation figures (if it wrote them) into the erasure's record
    and the audit chain; the erased rows it was given deleted either way."""
    erasure = checked_by(s, job)
    if erasure is None:
        return
    try:
        figures = _read_figures(job_dir / "checkpoints")
        if figures is None:
            return
        check = {**_clean(figures), "job": job.id, "proves": WHAT_IT_PROVES}
        report = dict(erasure.report or {})
        report["memorisation"] = [*report.get("memorisation", []), check]
        erasure.report = report
        audit.append(
            s,
            actor=job.owner,
            action=Action.ERASURE_MEMORISATION,
            subject=erasure.subject_pseudonym,
            job_id=job.id,
            detail={"erasure": erasure.id, **check},
        )
    finally:
        drop_erased_rows(job_dir)
