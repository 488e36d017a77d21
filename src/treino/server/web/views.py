"""What each dashboard page shows, as plain dicts: the routes (treino.server.web.routes) stay thin, and the
templates only lay these out. Everything here reads the database or calls the planner; nothing writes."""

from __future__ import annotations

import math
from dataclasses import asdict
from typing import Any

from sqlalchemy import Select, func, select
from sqlalchemy.orm import Session, defer

from treino.govern.access import Principal, allowed
from treino.govern.models import AuditRecord, Dataset, DatasetVersion, Erasure, JobDataset, Model, Role
from treino.server import metric_series, progress, quarantine
from treino.server.context import ServerContext
from treino.server.db import ACTIVE_STATES, FINAL_STATES, Attempt, Checkpoint, Job, JobState, MetricPoint
from treino.server.schemas import WaitOut, path_exists
from treino.server.seed import newest_checkpoint
from treino.server.waits import NO_WAITS, Waits

QUEUE_SHOWN = 50  # queued jobs listed on the overview (the count covers all)
RECENT_SHOWN = 15  # finished jobs listed on the overview
LOG_TAIL_BYTES = 16 * 1024  # of the latest attempt's output
CHART_POINTS_MAX = 2000  # metric points sent to a chart; longer runs are thinned evenly
SVG_POINTS_MAX = 300  # points in the server-drawn fallback curve
AUDIT_SHOWN = 200


def steps_target(spec: dict[str, Any]) -> int | None:
    """The job's last step when its spec says (`total_steps`, or `--steps N` / `--steps=N` in args), else None."""
    return progress.total_steps(spec.get("total_steps"), spec.get("args"))


def eta_seconds(job: Job, target: int | None) -> float | None:
    """Remaining steps to `target` over the last measured steps/s; None when either is unknown."""
    if target is None or not job.steps_per_s or job.last_step is None:
        return None
    return max(target - job.last_step, 0) / job.steps_per_s


def job_row(job: Job, args: list[Any] | None = None, total: Any = None, waits: Waits = NO_WAITS) -> dict[str, Any]:
    """A job as the overview and the job page show it. `args`, `total`: the spec's, when the job was read without its
    spec (`listed`); else they are read from the spec. `waits`: the engine's, for why a queued job waits."""
    target = steps_target({"args": args, "total_steps": total} if args is not None else job.spec)
    return {
        "id": job.id,
        "name": job.name,
        "owner": job.owner,
        "state": job.state,
        "priority": job.priority,
        "gpus": job.gpus,
        "devices": job.devices or [],
        "submitted_at": job.submitted_at,
        "last_step": job.last_step,
        "steps": target,
        "steps_per_s": job.steps_per_s,
        "last_loss": job.last_loss,
        "eta_s": eta_seconds(job, target),
        "progress": (job.last_step or 0) / target if target else None,
        "wait": WaitOut.fields(waits.of(job.id, job.state)),  # as the API gives it; _jobs.html words it
        "queue_wait_s": progress.queue_wait_s(job.submitted_at, job.started_at),
        "duration_s": progress.duration_s(job.started_at, job.ended_at),
    }


def select_rows() -> Select[tuple[Job, Any, Any]]:
    """Jobs without their specs (megabytes each, at worst), with only the spec's `args` and `total_steps` (the steps
    target)."""
    return select(Job, Job.spec["args"], Job.spec["total_steps"]).options(defer(Job.spec))


def listed(s: Session, query: Select[tuple[Job, Any, Any]], waits: Waits = NO_WAITS) -> list[dict[str, Any]]:
    return [job_row(job, args if isinstance(args, list) else [], total, waits) for job, args, total in s.execute(query)]


def overview(ctx: ServerContext, s: Session, telemetry: list[dict[str, Any]]) -> dict[str, Any]:
    """Devices with their jobs, the queue (first QUEUE_SHOWN, in the order the scheduler takes them), running jobs and
    the last finished ones. Indexed queries only: the page stays fast with thousands of jobs in the table."""
    waits = ctx.engine.waits()  # why each queued job waits, from the scheduler's last pass (treino.server.waits)
    active = listed(s, select_rows().where(Job.state.in_(list(ACTIVE_STATES))).order_by(Job.id), waits)
    queued_q = select_rows().where(Job.state == JobState.QUEUED)
    queue = listed(s, queued_q.order_by(Job.priority.desc(), Job.id).limit(QUEUE_SHOWN), waits)
    queued = s.scalar(select(func.count()).select_from(Job).where(Job.state == JobState.QUEUED)) or 0
    recent = listed(
        s, select_rows().where(Job.state.in_(list(FINAL_STATES))).order_by(Job.id.desc()).limit(RECENT_SHOWN)
    )
    holder = {d: j for j in active for d in j["devices"]}
    stats = {g["index"]: g for g in telemetry}
    devices = []
    inventory = ctx.engine.inventory
    for d in inventory.devices:
        g = stats.get(d.index, {})
        job = holder.get(d.index)
        devices.append(
            {
                "index": d.index,
                "kind": d.kind,
                "name": d.name,
                "node": d.node,
                "memory_total": d.memory_bytes or None,
                "memory_used": g.get("memory_used_bytes"),
                "util": g.get("util_percent"),
                "temperature": g.get("temperature_c"),
                "job": {"id": job["id"], "name": job["name"]} if job else None,
            }
        )
    return {
        "kind": inventory.kind,
        "description": inventory.describe(),
        "devices": devices,
        "nodes": [asdict(n) for n in inventory.nodes],
        "running": active,
        "queue": queue,
        "queued": queued,
        "recent": recent,
    }


def may_cancel(who: Principal, job: Job) -> bool:
    return (
        allowed(who.role, "jobs.cancel")
        and (who.role == Role.ADMIN or job.owner == who.name)
        and job.state not in FINAL_STATES
    )


def thin(rows: list[Any], limit: int) -> list[Any]:
    """At most `limit` rows, evenly spaced, always keeping the last."""
    if len(rows) <= limit:
        return rows
    stride = math.ceil(len(rows) / limit)
    return [*rows[::stride][: limit - 1], rows[-1]]


def curves(s: Session, job_id: int) -> dict[str, list[Any]]:
    """Loss per step, and steps/s between consecutive points (their step and time deltas), for the charts.
    A restarted attempt repeats steps; a point whose step or time does not advance gives no rate."""
    rows = s.execute(
        select(MetricPoint.step, MetricPoint.time, MetricPoint.values)
        .where(MetricPoint.job_id == job_id)
        .order_by(MetricPoint.time, MetricPoint.id)
    ).all()
    steps: list[int] = []
    loss: list[float | None] = []
    rate: list[float | None] = []
    prev: tuple[int, float] | None = None
    for step, t, values in rows:
        value = (values or {}).get("loss")
        steps.append(step)
        loss.append(value if isinstance(value, int | float) and math.isfinite(value) else None)
        ok = prev is not None and step > prev[0] and t > prev[1]
        rate.append((step - prev[0]) / (t - prev[1]) if ok and prev is not None else None)
        prev = (step, t)
    order = sorted(range(len(steps)), key=lambda i: steps[i])  # uPlot wants ascending x
    picked = thin(order, CHART_POINTS_MAX)
    return {"step": [steps[i] for i in picked], "loss": [loss[i] for i in picked], "rate": [rate[i] for i in picked]}


def svg_path(xs: list[Any], ys: list[Any], width: int = 600, height: int = 180) -> str:
    """An SVG path through the finite (x, y) points, scaled into width x height: the chart before (or without)
    JavaScript. One 'M'/'L' command per point, so its points can be counted."""
    pts = [(x, y) for x, y in zip(xs, ys, strict=True) if y is not None]
    pts = thin(pts, SVG_POINTS_MAX)
    if not pts:
        return ""
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    sx = (width - 10) / ((x1 - x0) or 1)
    sy = (height - 10) / ((y1 - y0) or 1)
    return " ".join(
        f"{'M' if i == 0 else 'L'}{5 + (x - x0) * sx:.1f},{height - 5 - (y - y0) * sy:.1f}"
        for i, (x, y) in enumerate(pts)
    )


def log_tail(ctx: ServerContext, job: Job) -> str:
    if job.attempts < 1:
        return ""
    path = ctx.engine.job_dir(job.id) / f"attempt-{job.attempts}" / "output.log"
    try:
        with path.open("rb") as f:
            f.seek(max(path.stat().st_size - LOG_TAIL_BYTES, 0))
            data = f.read()
    except OSError:
        return ""
    return data.decode(errors="replace")


def job_page(ctx: ServerContext, s: Session, job: Job, show_log: bool = True) -> dict[str, Any]:
    """What the job page shows; its log tail only with `show_log` (the visitor may read the job's logs), else None."""
    attempts = list(s.scalars(select(Attempt).where(Attempt.job_id == job.id).order_by(Attempt.number)))
    checkpoints = [
        {"step": c.step, "path": c.path, "bytes": c.bytes, "attempt": c.attempt, "exists": path_exists(c.path)}
        for c in s.scalars(select(Checkpoint).where(Checkpoint.job_id == job.id).order_by(Checkpoint.step))
    ]
    reads = s.execute(
        select(Dataset.name, DatasetVersion.number, DatasetVersion.sha256, DatasetVersion.purged_at, JobDataset)
        .join(DatasetVersion, DatasetVersion.dataset_id == Dataset.id)
        .join(JobDataset, JobDataset.version_id == DatasetVersion.id)
        .where(JobDataset.job_id == job.id)
    ).all()
    datasets = [
        {
            "name": n,
            "version": v,
            "sha256": sha,
            "erased": purged is not None,
            "purpose": jd.purpose,
            "first_read_at": jd.first_read_at,
        }
        for n, v, sha, purged, jd in reads
    ]
    models = [
        {
            "id": m.id,
            "kind": m.kind,
            "step": m.step,
            "path": m.path,
            "residency": m.residency,
            "erasure": m.erasure_id,
            # what became of a model an erasure marked: quarantined (by, at), its quarantine lifted (by, at, why)
            "quarantine": quarantine.state(s, m),
            "quarantined_by": m.quarantined_by,
            "quarantined_at": m.quarantined_at,
            "lift": quarantine.last_lift(s, m),
        }
        for m in s.scalars(select(Model).where(Model.job_id == job.id).order_by(Model.id))
    ]
    data = curves(s, job.id)
    return {
        "job": job_row(job, waits=ctx.engine.waits()),
        "full": job,
        "attempts": attempts,
        "checkpoints": checkpoints,
        "datasets": datasets,
        "models": models,
        "curves": data,
        "loss_path": svg_path(data["step"], data["loss"]),
        "rate_path": svg_path(data["step"], data["rate"]),
        "log": log_tail(ctx, job) if show_log else None,
        "final": job.state in FINAL_STATES,
        "metric_keys": metric_series.keys(s, job.id),
        # the step a resubmit would continue from (None: not finished, or no checkpoint left on disk)
        "continue_step": _newest_step(ctx, job) if job.state in FINAL_STATES else None,
    }


def metrics(s: Session, job: Job, wanted: list[str]) -> dict[str, Any]:
    """What the job page's metric charts fetch, for this job or one compared with it: the job, its keys, and the
    series of those of `wanted` it logged (each at most CHART_POINTS_MAX points; a key it never logged is left out)."""
    picked = metric_series.series(s, job.id, wanted, CHART_POINTS_MAX, strict=False)
    return {
        "job": {"id": job.id, "name": job.name, "state": job.state, "final": job.state in FINAL_STATES},
        "keys": metric_series.keys(s, job.id),
        "series": [{**x.stats(), "step": x.steps, "value": x.values} for x in picked],
    }


def _newest_step(ctx: ServerContext, job: Job) -> int | None:
    newest = newest_checkpoint(ctx.engine.checkpoint_dir(job.id))
    return newest[0] if newest else None


def live(ctx: ServerContext, s: Session, job: Job, show_log: bool = True) -> dict[str, Any]:
    """What the job page polls: state, progress, the log tail (None without `show_log`) and the curves."""
    return {
        **job_row(job, waits=ctx.engine.waits()),
        "final": job.state in FINAL_STATES,
        "log": log_tail(ctx, job) if show_log else None,
        "curves": curves(s, job.id),
    }


def data_audit(ctx: ServerContext, s: Session, actor: str, action: str, dataset: str) -> dict[str, Any]:
    """Datasets with versions and their lineage (version -> jobs -> models), erasure requests with their deadlines,
    the last AUDIT_SHOWN audit records matching the filters, and whether the chain verifies."""
    from treino.govern.audit import verify
    from treino.server.governance import dataset_lineage
    from treino.server.unlearning import WHAT_IT_PROVES

    datasets = [dataset_lineage(s, d).model_dump() for d in s.scalars(select(Dataset).order_by(Dataset.name))]
    job_names = dict(s.execute(select(Job.id, Job.name).where(Job.id.in_(list(_job_ids(datasets))))).tuples().all())
    erasures = list(s.scalars(select(Erasure).order_by(Erasure.id.desc())))
    query = select(AuditRecord).order_by(AuditRecord.seq.desc()).limit(AUDIT_SHOWN)
    if actor:
        query = query.where(AuditRecord.actor == actor)
    if action:
        query = query.where(AuditRecord.action == action)
    if dataset:
        query = query.where(AuditRecord.dataset == dataset)
    records = list(s.scalars(query))
    actions = list(s.scalars(select(AuditRecord.action).distinct().order_by(AuditRecord.action)))
    result = verify(s, ctx.audit.key, checkpoint_every=ctx.audit.checkpoint_every)
    return {
        "datasets": datasets,
        "job_names": job_names,
        "erasures": erasures,
        "memorisation_note": WHAT_IT_PROVES,  # what the erasures' memorisation check does and does not prove
        "records": records,
        "actions": actions,
        "verify": asdict(result),
        "filters": {"actor": actor, "action": action, "dataset": dataset},
    }


def _job_ids(datasets: list[dict[str, Any]]) -> set[int]:
    return {j for d in datasets for v in d["versions"] for j in v["jobs"]}
