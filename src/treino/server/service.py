"""The server's engine room: submit, cancel, the scheduling loop, attempt outcomes and crash reconciliation.

All job state lives in the database; this object holds nothing that a restart could lose. One loop thread calls
`tick()` every TICK_S (and at once after a submit or cancel): it collects finished attempts, enforces timeouts and
grace periods, then asks the pure scheduler (treino.server.scheduler) what to start and what to preempt.
"""

from __future__ import annotations

import hashlib
import logging
import re
import secrets
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session, sessionmaker

from treino.errors import JobError, PolicyViolation
from treino.govern.access import Principal, Site, check_grant, check_residency
from treino.govern.models import Dataset, DatasetVersion, JobDataset, Model, User
from treino.server import scheduler
from treino.server.backend import Backend, BackendUnavailable, ExitInfo, LaunchRequest
from treino.server.db import (
    ACTIVE_STATES,
    FINAL_STATES,
    TRANSITIONS,
    Attempt,
    Checkpoint,
    FailureReason,
    Job,
    JobState,
    StopRequest,
)
from treino.server.inventory import Inventory
from treino.server.spec import DEFAULT_GRACE_S, JobSpec

log = logging.getLogger("treino.server")

TICK_S = 0.2  # scheduling loop period; submits and cancels wake it at once
AUDIT_CHECKPOINT_S = 300.0  # signed checkpoints of the audit head, besides one every AuditLog.checkpoint_every
SWEEP_S = 5.0  # how often the backend's hygiene runs (the local backend: NVML's processes vs the running jobs)
BACKEND_RETRY_S = 5.0  # after the backend was unreachable at a launch, how long before the next start
LOST_ATTEMPTS_MAX = 3  # attempts in a row whose supervisor vanished before the job is failed, not requeued
KILL_MARGIN_S = 10.0  # after a stop's grace period, how long the supervisor gets before the server SIGKILLs itself
# What a failed attempt's output says about why (the classes SkyPilot and Determined separate, reference §2-3).
OOM_PATTERNS = re.compile(r"CUDA out of memory|OutOfMemoryError|HIP out of memory|CUBLAS_STATUS_ALLOC_FAILED")
SIGNAL_PATTERNS = re.compile(r"Signal \d+ \(SIG\w+\) received|exitcode\s*:\s*-\d+|Killed")
NODE_PATTERNS = re.compile(r"uncorrectable ECC|Xid \d+|GPU has fallen off the bus|NCCL error.*unhandled system error")


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def classify(info: ExitInfo) -> tuple[str, str]:
    """(outcome, detail) of an ended attempt: succeeded, or a FailureReason with the line that shows it."""
    if info.reason is not None:  # the backend knows (Slurm's TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ...)
        return info.reason, info.detail
    if info.returncode == 0:
        return "succeeded", ""
    if info.returncode is None:
        return FailureReason.NODE_FAULT, "the attempt's supervisor vanished without an exit status (crash or reboot)"
    if info.detail:  # the backend refused to start it (e.g. sbatch's error)
        return FailureReason.USER_ERROR, info.detail
    for reason, pattern in (
        (FailureReason.OOM, OOM_PATTERNS),
        (FailureReason.NODE_FAULT, NODE_PATTERNS),
        (FailureReason.SIGNAL, SIGNAL_PATTERNS),
    ):
        lines = [line for line in info.log_tail.splitlines() if pattern.search(line)]
        if lines:
            return reason, lines[-1].strip()[:500]
    if info.returncode < 0:
        return FailureReason.SIGNAL, f"killed by signal {-info.returncode}"
    last = [line for line in info.log_tail.splitlines() if line.strip()]
    return FailureReason.USER_ERROR, (last[-1].strip()[:500] if last else f"exit code {info.returncode}")


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    url: str  # how job processes reach this server (TREINO_URL)
    python: str = sys.executable
    key: bytes = b""  # the server key: audit checkpoints (HMAC) and subject pseudonyms
    site: Site | None = None  # where this server is (sites catalog): residency decisions
    import_roots: tuple[Path, ...] = ()  # where datasets may be registered from
    controller: str = "(controller: set with treino server --controller)"  # named in the Art. 37 records
    # Slurm backend: the site of each partition jobs may run on (--partition NAME=SITE); residency is checked
    # against every one of them, and a job is kept to the partitions its data may be processed in.
    partition_sites: dict[str, Site | None] = field(default_factory=dict)
    # Where job folders (logs, checkpoints) and the dataset store live: on a cluster, a filesystem every node
    # mounts at the same path (--shared-dir); None: the data dir.
    shared_dir: Path | None = None

    @property
    def store(self) -> Path:
        return (self.shared_dir or self.data_dir) / "store"

    @property
    def jobs_dir(self) -> Path:
        return (self.shared_dir or self.data_dir) / "jobs"


class Service:
    def __init__(self, settings: Settings, sessions: sessionmaker[Session], backend: Backend):
        self.settings = settings
        self.sessions = sessions
        self.backend = backend
        self.lock = threading.RLock()  # one writer of job state at a time: the loop, submit and cancel
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.advice: dict[int, str] = {}  # job id -> the planner's advice, for OOM failures
        self.token_cache: dict[str, tuple[float, Principal]] = {}  # the API's authentication cache
        from treino.govern.audit import AuditLog

        self.audit_log = AuditLog(settings.key or secrets.token_bytes(32))  # no key: an ephemeral one (tests)
        self._last_sweep = 0.0
        self.backend_unavailable_until = 0.0  # no starts before this (monotonic), after a BackendUnavailable
        self._last_audit_checkpoint = time.monotonic()

    @property
    def inventory(self) -> Inventory:
        return self.backend.inventory()

    # --- lifecycle -------------------------------------------------------------------------------------------
    def start(self, reconcile: bool = True) -> None:
        if reconcile:
            self.reconcile()
        self._thread = threading.Thread(target=self._loop, name="treino-scheduler", daemon=True)
        self._thread.start()

    def shutdown(self) -> None:
        """Stop scheduling; running jobs keep running (their supervisors are detached) and are adopted next start."""
        self._stop.set()
        self._wake.set()
        if self._thread:
            self._thread.join(timeout=10)
        self.sign_audit()

    def sign_audit(self) -> None:
        """An HMAC checkpoint of the audit chain's head now: records after the last checkpoint are not protected
        against a cut tail, so the loop signs every AUDIT_CHECKPOINT_S and the server on shutdown."""
        with self.sessions.begin() as s:
            self.audit_log.checkpoint(s)
        self._last_audit_checkpoint = time.monotonic()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self.tick()
            except Exception:  # the loop must survive a bad tick; the error is logged with its traceback
                log.exception("scheduler tick failed")
            self._wake.wait(TICK_S)
            self._wake.clear()

    def wake(self) -> None:
        self._wake.set()

    # --- API-facing ------------------------------------------------------------------------------------------
    def submit(self, spec: JobSpec, who: Principal | str) -> tuple[Job, str]:
        """A queued job and its job token (returned once, passed to the job's processes).

        Datasets are admitted here: each must exist, the submitter must hold a grant for the spec's purpose, and the
        server's site must satisfy its residency; the latest version of each is pinned to the job. The decision, an
        admission or a denial naming its rule, goes into the audit chain either way."""
        owner = who if isinstance(who, str) else who.name
        job_token = "trj_" + secrets.token_urlsafe(24)
        try:
            with self.lock, self.sessions.begin() as s:
                pins, partitions = self._admit_datasets(s, spec, who)
                self._check_partitions(spec, partitions)
                job = Job(
                    name=spec.name,
                    spec=spec.model_dump(mode="json"),
                    owner=owner,
                    state=JobState.QUEUED,
                    priority=spec.priority,
                    gpus=spec.gpus,
                    submitted_at=time.time(),
                    job_token_hash=token_hash(job_token),
                    partitions=partitions,
                )
                s.add(job)
                s.flush()
                for dataset, version, reason in pins:
                    s.add(JobDataset(job_id=job.id, version_id=version.id, purpose=spec.purpose or ""))
                    self.audit(
                        s,
                        owner,
                        "job.admit",
                        dataset=dataset.name,
                        job_id=job.id,
                        detail={
                            "version": version.number,
                            "sha256": version.sha256,
                            "purpose": spec.purpose,
                            **self._where(partitions),
                            "residency": reason,
                        },
                    )
        except PolicyViolation as exc:
            with self.sessions.begin() as s:
                self.audit(
                    s,
                    owner,
                    "job.deny",
                    detail={"job": spec.name, "rule": exc.rule, "reason": str(exc), "datasets": spec.datasets},
                )
            raise
        self.wake()
        return job, job_token

    def capacity_error(self, spec: JobSpec) -> tuple[str, str] | None:
        """(field, message) when this server could never run `spec`, whatever else runs: refused at submit."""
        inventory = self.inventory
        if spec.nodes > 1 and not self.backend.multi_node:
            return (
                "nodes",
                f"asks for {spec.nodes} nodes, but this server runs jobs on one machine. To fix: nodes: 1, or "
                "start the server on a Slurm cluster with 'treino server --backend slurm' (docs/cluster.md).",
            )
        nodes, per_node = inventory.node_count(), inventory.max_devices_per_node()
        if spec.nodes > nodes:
            return "nodes", f"asks for {spec.nodes} nodes but {inventory.describe()}. To fix: nodes <= {nodes}."
        if spec.gpus > per_node:
            has = (
                f"per node but a node has at most {per_node}" if inventory.nodes else f"but this server has {per_node}"
            )
            more = ", and more nodes" if inventory.nodes else ""
            return "gpus", f"asks for {spec.gpus} {has} ({inventory.describe()}). To fix: gpus <= {per_node}{more}."
        return None

    def _admit_datasets(
        self, s: Session, spec: JobSpec, who: Principal | str
    ) -> tuple[list[tuple[Dataset, DatasetVersion, str]], list[str] | None]:
        """The dataset versions to pin, and the Slurm partitions the job may run on (None: any, or no Slurm)."""
        pins = []
        partitions = sorted(self.settings.partition_sites) or None
        for name in spec.datasets:
            dataset = s.scalar(select(Dataset).where(Dataset.name == name))
            if dataset is None:
                raise PolicyViolation("dataset", f"unknown dataset {name!r}. To fix: see 'treino data list'.")
            user = s.get(User, who.user_id) if isinstance(who, Principal) and who.user_id else None
            if user is None:
                raise PolicyViolation("grant", f"the submitter has no user record to hold a grant on {name}.")
            check_grant(s, user, dataset, spec.purpose)
            reason, partitions = self._check_residency(s, dataset, partitions)
            version = s.scalar(
                select(DatasetVersion)
                .where(DatasetVersion.dataset_id == dataset.id, DatasetVersion.purged_at.is_(None))
                .order_by(DatasetVersion.number.desc())
                .limit(1)
            )
            if version is None:
                raise PolicyViolation("dataset", f"dataset {name} has no version with its bytes present.")
            pins.append((dataset, version, reason))
        return pins, partitions

    def _check_residency(
        self, s: Session, dataset: Dataset, partitions: list[str] | None
    ) -> tuple[str, list[str] | None]:
        """On one machine: the server's site. On Slurm: every partition the job could still run on is checked
        against its own site; the job keeps those that pass, and is refused (with the first refusal's reason,
        which names the rule and the fix) when none does."""
        if partitions is None:
            return check_residency(s, dataset, self.settings.site), None
        kept, reasons, refusals = [], [], []
        for partition in partitions:
            try:
                reasons.append(f"{partition}: {check_residency(s, dataset, self.settings.partition_sites[partition])}")
                kept.append(partition)
            except PolicyViolation as exc:
                refusals.append(exc)
        if not kept:
            raise PolicyViolation(
                refusals[0].rule, f"no partition of this cluster may process it: {refusals[0].detail}"
            )
        return "; ".join(reasons), kept

    def _check_partitions(self, spec: JobSpec, partitions: list[str] | None) -> None:
        """A job kept to some partitions (its data's residency) must fit in them."""
        if partitions is None:
            return
        inventory = self.inventory
        shape = scheduler.Queued(0, 0, spec.gpus, 0.0, None, spec.nodes, node_groups(inventory, partitions))
        if not scheduler.could_ever_fit(inventory.devices, shape):
            raise JobError(
                f"asks for {spec.nodes} node(s) x {spec.gpus} GPU(s), more than the partitions its data may be "
                f"processed in ({', '.join(partitions)}) have up now ({inventory.describe()}). To fix: fewer nodes "
                "or GPUs per node, or bring nodes of those partitions back (sinfo -R tells why they are down)."
            )

    def _where(self, partitions: list[str] | None) -> dict[str, Any]:
        """Where a job's data may be processed, for audit records."""
        if partitions is None:
            return {"site": self.settings.site.name if self.settings.site else None}
        sites = self.settings.partition_sites
        return {"partitions": {p: (sites[p].name if sites.get(p) else None) for p in partitions}}

    def job_site(self, s: Session, job: Job) -> Site | None:
        """The site a job's processes are at now: its partition's on Slurm, else this server's."""
        if not self.settings.partition_sites:
            return self.settings.site
        if job.attempts < 1:
            return None
        partition = self._latest_attempt(s, job).handle.get("partition")
        return self.settings.partition_sites.get(partition) if isinstance(partition, str) else None

    def register_model(self, s: Session, job: Job, kind: str, path: str, step: int | None) -> Model:
        """A checkpoint or final model in the lineage. It inherits the classification and the strictest residency
        of the dataset versions its job read, because models memorise (lgpd-requirements.md §2.3, §3.3)."""
        rows = s.execute(
            select(Dataset, DatasetVersion)
            .join(DatasetVersion, DatasetVersion.dataset_id == Dataset.id)
            .join(JobDataset, JobDataset.version_id == DatasetVersion.id)
            .where(JobDataset.job_id == job.id)
        ).all()
        residencies = sorted({d.residency for d, _ in rows if d.residency not in ("any", "")})
        model = Model(
            job_id=job.id,
            kind=kind,
            step=step,
            path=path,
            personal_data=any(d.personal_data for d, _ in rows),
            sensitive=any(d.sensitive for d, _ in rows),
            residency=residencies[0] if len(residencies) == 1 else ("+".join(residencies) or "any"),
        )
        s.add(model)
        s.flush()
        if rows:
            self.audit(
                s,
                job.owner,
                "model.register",
                job_id=job.id,
                detail={
                    "model": model.id,
                    "kind": kind,
                    "step": step,
                    "path": path,
                    "versions": [{"dataset": d.name, "version": v.number, "sha256": v.sha256} for d, v in rows],
                },
            )
        return model

    def forget_tokens(self) -> None:
        """A token was revoked: the API's authentication cache must not vouch for it any longer."""
        self.token_cache.clear()

    def audit(self, s: Session, actor: str, action: str, **fields: Any) -> None:
        """One record in the audit chain, inside the caller's transaction."""
        self.audit_log.append(s, actor=actor, action=action, **fields)

    def cancel(self, job_id: int) -> Job:
        with self.lock, self.sessions.begin() as s:
            job = s.get(Job, job_id)
            if job is None:
                raise JobError(f"No job {job_id}.")
            if job.state in FINAL_STATES:
                raise JobError(f"Job {job_id} is already {job.state}; nothing to cancel.")
            if job.state == JobState.QUEUED:
                self._transition(job, JobState.CANCELLED)
                job.ended_at = time.time()
            elif job.stop_request != StopRequest.CANCEL:
                self._request_stop(s, job, StopRequest.CANCEL)
        self.wake()
        return job

    # --- the loop --------------------------------------------------------------------------------------------
    def tick(self) -> None:
        with self.lock:
            to_start: list[tuple[int, LaunchRequest]] = []
            self._tick(to_start)
            # The attempts are committed before their processes start: a server that dies in between leaves an
            # attempt with no process (requeued), never a process the database does not know of.
            for attempt_id, request in to_start:
                self._start(attempt_id, request)

    def _tick(self, to_start: list[tuple[int, LaunchRequest]]) -> None:
        with self.sessions.begin() as s:
            now = time.time()
            for job in s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES)))):
                attempt = self._latest_attempt(s, job)
                info = self.backend.poll(attempt.handle)
                if info is not None:
                    self._finish(s, job, attempt, info)
                    continue
                self._place(s, job, attempt)
                timeout = _timeout_s(job)
                if job.state == JobState.RUNNING and timeout and now > attempt.started_at + timeout:
                    self._request_stop(s, job, StopRequest.TIMEOUT)
                elif (
                    job.state == JobState.STOPPING
                    and job.stop_requested_at is not None
                    and now > job.stop_requested_at + _grace_s(job) + KILL_MARGIN_S
                ):
                    self.backend.kill(attempt.handle)  # the supervisor did not finish the job off: we do
            self._schedule(s, now, to_start)
            if time.monotonic() - self._last_audit_checkpoint > AUDIT_CHECKPOINT_S:
                self._last_audit_checkpoint = time.monotonic()
                self.audit_log.checkpoint(s)
            if now - self._last_sweep > SWEEP_S:
                self._last_sweep = now
                active = s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES))))
                self.backend.sweep([self._latest_attempt(s, j).handle for j in active])

    def _place(self, s: Session, job: Job, attempt: Attempt) -> None:
        """Record where a live attempt runs (Slurm: its job id, nodes and partition, or why it is still pending);
        when it starts on machines it was not on before, a job that reads datasets gets an audit record of them."""
        placement = self.backend.placement(attempt.handle)
        if placement is None:
            return
        seen = {"state": placement.state, "nodes": list(placement.nodes), "reason": placement.reason}
        if attempt.handle.get("placement") == seen:
            return
        was_running = (attempt.handle.get("placement") or {}).get("state") == "running"
        attempt.handle = {**attempt.handle, **placement.extra, "placement": seen}
        if placement.state != "running" or not placement.nodes:
            return
        if not was_running:
            # Time pending in the backend's queue (Slurm's) is not the job's: its timeout counts from its start.
            attempt.started_at = time.time()
        if s.scalar(select(func.count()).select_from(JobDataset).where(JobDataset.job_id == job.id)):
            self.audit(
                s,
                job.owner,
                "job.start",
                job_id=job.id,
                detail={
                    "attempt": attempt.number,
                    "backend": self.backend.name,
                    "nodes": list(placement.nodes),
                    **placement.extra,
                },
            )

    def _schedule(self, s: Session, now: float, to_start: list[tuple[int, LaunchRequest]]) -> None:
        if time.monotonic() < self.backend_unavailable_until:
            return
        queued = list(s.scalars(select(Job).where(Job.state == JobState.QUEUED)))
        if not queued:
            return
        inventory = self.inventory
        active = list(s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES)))))
        running = []
        for job in active:
            attempt = self._latest_attempt(s, job)
            stopping_until = (job.stop_requested_at or now) + _grace_s(job) if job.state == JobState.STOPPING else None
            running.append(
                scheduler.Running(
                    job.id,
                    job.priority,
                    tuple(job.devices or ()),
                    attempt.started_at,
                    _timeout_s(job),
                    stopping_until,
                )
            )
        waiting = [
            scheduler.Queued(
                j.id,
                j.priority,
                j.gpus,
                j.submitted_at,
                _timeout_s(j),
                int(j.spec.get("nodes", 1)),
                node_groups(inventory, j.partitions),
            )
            for j in queued
        ]
        decision = scheduler.schedule(inventory.devices, waiting, running, now)
        by_id = {j.id: j for j in [*queued, *active]}
        for job_id in decision.preempt:
            self._request_stop(s, by_id[job_id], StopRequest.PREEMPT)
        for job_id, devices in decision.start:
            to_start.append(self._prepare(s, by_id[job_id], devices, inventory))

    # --- transitions -----------------------------------------------------------------------------------------
    @staticmethod
    def _transition(job: Job, new: JobState) -> None:
        old = JobState(job.state)
        if new not in TRANSITIONS[old]:
            raise AssertionError(f"job {job.id}: {old} -> {new} is not a transition")
        job.state = new

    @staticmethod
    def _latest_attempt(s: Session, job: Job) -> Attempt:
        attempt = s.scalars(
            select(Attempt).where(Attempt.job_id == job.id).order_by(Attempt.number.desc()).limit(1)
        ).one()
        return attempt

    def job_dir(self, job_id: int) -> Path:
        return self.settings.jobs_dir / str(job_id)

    def _prepare(
        self, s: Session, job: Job, devices: tuple[int, ...], inventory: Inventory
    ) -> tuple[int, LaunchRequest]:
        """The attempt's row, its devices and the job's running state, in `s`; the processes start after commit."""
        spec = JobSpec.model_validate(job.spec)
        number = job.attempts + 1
        job_token = "trj_" + secrets.token_urlsafe(24)  # a fresh token per attempt; the old one stops working
        job.job_token_hash = token_hash(job_token)
        checkpoint_dir = self.job_dir(job.id) / "checkpoints"
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
        env = {
            **_base_env(),
            **spec.env,
            "TREINO_URL": self.settings.url,
            "TREINO_JOB_ID": str(job.id),
            "TREINO_JOB_TOKEN": job_token,
            "TREINO_CHECKPOINT_DIR": str(checkpoint_dir),
            "TREINO_ATTEMPT": str(number),
        }
        node_of = {d.index: d.node for d in inventory.devices}
        nodes = tuple(dict.fromkeys(node_of[i] for i in devices))  # in order, once each
        request = LaunchRequest(
            job_id=job.id,
            attempt=number,
            argv=spec.argv(spec.gpus, self.settings.python),
            cwd=spec.workdir or str(self.job_dir(job.id)),
            env=env,
            grace_s=spec.grace_seconds,
            attempt_dir=self.job_dir(job.id) / f"attempt-{number}",
            key=secrets.token_hex(16),
            devices=devices,
            nodes=nodes,
            gpus_per_node=spec.gpus,
            script=spec.script_argv(),
            python=self.settings.python,
            timeout_s=_timeout_s(job),
            partitions=tuple(job.partitions) if job.partitions is not None else None,
        )
        handle = self.backend.handle_for(request)
        attempt = Attempt(job_id=job.id, number=number, devices=list(devices), handle=handle, started_at=time.time())
        s.add(attempt)
        self._transition(job, JobState.RUNNING)
        job.attempts = number
        job.devices = list(devices)
        job.started_at = job.started_at or time.time()
        s.flush()
        return attempt.id, request

    def _start(self, attempt_id: int, request: LaunchRequest) -> None:
        try:
            handle = self.backend.launch(request)
        except BackendUnavailable as exc:
            # Nothing started (e.g. slurmctld down): the job goes back to the queue as it was, attempt undone.
            log.warning("job %s: not started, will retry: %s", request.job_id, exc)
            self._unlaunch(attempt_id)
            return
        except Exception as exc:  # refused (e.g. sbatch's error): the attempt fails with the reason
            log.exception("job %s attempt %s: the launch failed", request.job_id, request.attempt)
            handle = {**self._handle_of(attempt_id), "launch_error": str(exc)[:2000]}
        with self.sessions.begin() as s:
            attempt = s.get(Attempt, attempt_id)
            assert attempt is not None
            attempt.handle = handle
        log.info("job %s attempt %s started", request.job_id, request.attempt)

    def _handle_of(self, attempt_id: int) -> dict[str, Any]:
        with self.sessions() as s:
            attempt = s.get(Attempt, attempt_id)
            assert attempt is not None
            return dict(attempt.handle)

    def _unlaunch(self, attempt_id: int) -> None:
        with self.lock, self.sessions.begin() as s:
            attempt = s.get(Attempt, attempt_id)
            assert attempt is not None
            job = s.get(Job, attempt.job_id)
            assert job is not None
            s.delete(attempt)
            job.attempts -= 1
            job.devices = None
            if job.attempts == 0:
                job.started_at = None
            job.state = JobState.QUEUED  # back where it was: not a transition of the job's life
            job.job_token_hash = token_hash(secrets.token_urlsafe(24))
        self.backend_unavailable_until = time.monotonic() + BACKEND_RETRY_S

    def _request_stop(self, s: Session, job: Job, why: StopRequest) -> None:
        if job.state == JobState.RUNNING:
            self._transition(job, JobState.STOPPING)
        job.stop_request = why
        job.stop_requested_at = time.time()
        self.backend.stop(self._latest_attempt(s, job).handle, _grace_s(job))
        log.info("job %s: %s requested", job.id, why)

    def _finish(self, s: Session, job: Job, attempt: Attempt, info: ExitInfo) -> None:
        outcome, detail = classify(info)
        # The attempt's token dies with it: a finished job may no longer read datasets or write lineage.
        job.job_token_hash = token_hash(secrets.token_urlsafe(24))
        attempt.ended_at = time.time()
        attempt.exit_code = info.returncode
        spec = JobSpec.model_validate(job.spec)
        job.devices = None
        job.exit_code = info.returncode
        stop = job.stop_request
        job.stop_request, job.stop_requested_at = None, None
        attempt.outcome = stop or outcome
        if stop == StopRequest.CANCEL:
            self._end(job, JobState.CANCELLED)
        elif stop == StopRequest.PREEMPT:
            job.preemptions += 1
            self._transition(job, JobState.QUEUED)  # keeps its submission time: first in line again
        elif stop == StopRequest.TIMEOUT:
            self._end(job, JobState.FAILED, FailureReason.TIMEOUT, f"ran past timeout_minutes={spec.timeout_minutes}")
        elif outcome == "succeeded":
            self._end(job, JobState.SUCCEEDED)
            job.failure_reason = job.failure_detail = None
            last = s.scalar(
                select(Checkpoint).where(Checkpoint.job_id == job.id).order_by(Checkpoint.step.desc()).limit(1)
            )
            if last is not None:
                self.register_model(s, job, "final", last.path, last.step)
        elif info.reason in (FailureReason.TIMEOUT, FailureReason.SIGNAL):
            # The backend's own verdict (Slurm's time limit; cancelled in Slurm by an operator): final, as a
            # treino timeout or cancel is; a retry would meet the same limit or overrule the operator.
            self._end(job, JobState.FAILED, outcome, detail)
        elif outcome == FailureReason.OOM:
            advice = self.advice.get(job.id, "")
            self._end(job, JobState.FAILED, outcome, detail + (f" | planner: {advice}" if advice else ""))
        elif outcome == FailureReason.NODE_FAULT and info.returncode is None and not self._lost_repeatedly(s, job):
            # Not the job's fault (the machine went down): requeue without spending a restart.
            job.failure_reason, job.failure_detail = outcome, detail
            self._transition(job, JobState.QUEUED)
        elif job.restarts < spec.max_restarts:
            job.restarts += 1
            job.failure_reason, job.failure_detail = outcome, detail
            self._transition(job, JobState.QUEUED)
        else:
            self._end(job, JobState.FAILED, outcome, detail)
        said = f"{stop} requested" if stop else detail  # a requested stop explains the end, whatever Slurm says
        log.info("job %s attempt %s ended: %s (%s) -> %s", job.id, attempt.number, attempt.outcome, said, job.state)

    @staticmethod
    def _lost_repeatedly(s: Session, job: Job) -> bool:
        """The last LOST_ATTEMPTS_MAX attempts all vanished: something about this job kills its supervisor, so
        requeueing it for free again would loop forever."""
        outcomes = s.scalars(
            select(Attempt.outcome)
            .where(Attempt.job_id == job.id)
            .order_by(Attempt.number.desc())
            .limit(LOST_ATTEMPTS_MAX)
        ).all()
        return len(outcomes) == LOST_ATTEMPTS_MAX and all(o == FailureReason.NODE_FAULT for o in outcomes)

    def _end(self, job: Job, state: JobState, reason: str | None = None, detail: str | None = None) -> None:
        self._transition(job, state)
        job.ended_at = time.time()
        if reason:
            job.failure_reason, job.failure_detail = reason, detail

    # --- restart ---------------------------------------------------------------------------------------------
    def reconcile(self) -> dict[str, int]:
        """After a (crashed) server starts: finished attempts are recorded, live ones adopted, lost ones requeued.
        Devices are taken from the database's active jobs only, so none is handed out twice."""
        counts = {"adopted": 0, "finished": 0, "requeued": 0}
        with self.lock, self.sessions.begin() as s:
            for job in s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES)))):
                attempt = self._latest_attempt(s, job)
                info = self.backend.poll(attempt.handle)
                if info is None:
                    counts["adopted"] += 1
                    log.info("job %s: attempt %s still running, adopted", job.id, attempt.number)
                    continue
                self.backend.kill(attempt.handle)  # nothing of a lost attempt may keep a GPU
                self._finish(s, job, attempt, info)
                counts["requeued" if job.state == JobState.QUEUED else "finished"] += 1
        return counts

    def queue_length(self) -> int:
        with self.sessions() as s:
            return int(s.scalar(select(func.count()).select_from(Job).where(Job.state == JobState.QUEUED)) or 0)


def _timeout_s(job: Job) -> float | None:
    """The spec's timeout in seconds. Specs are validated once, at submit: the loop reads the stored dict rather
    than re-validating every job's spec every tick."""
    minutes = job.spec.get("timeout_minutes")
    return float(minutes) * 60 if minutes else None


def _grace_s(job: Job) -> float:
    return float(job.spec.get("grace_seconds", DEFAULT_GRACE_S))


def node_groups(inventory: Inventory, partitions: list[Any] | None) -> tuple[frozenset[str], ...] | None:
    """The machines of each of `partitions`, one group each: a job's nodes all come from one partition, which
    sbatch needs (None: no partitions, any machine)."""
    if partitions is None:
        return None
    return tuple(frozenset(n.name for n in inventory.nodes if p in n.partitions) for p in partitions)


def _base_env() -> dict[str, str]:
    """The server's environment minus treino's own variables: PATH, HOME, locale, proxies for the job."""
    import os

    return {k: v for k, v in os.environ.items() if not k.startswith("TREINO_") and k != "CUDA_VISIBLE_DEVICES"}


def visible_spec(spec: dict[str, Any], show_env: bool) -> dict[str, Any]:
    """The spec as a reader may see it: env values (often secrets: HF_TOKEN, ...) only for its owner and admins."""
    if show_env or not spec.get("env"):
        return spec
    return {**spec, "env": {k: "(hidden)" for k in spec["env"]}}


def job_json(job: Job, show_env: bool = False) -> dict[str, Any]:
    return {
        "id": job.id,
        "name": job.name,
        "owner": job.owner,
        "state": job.state,
        "priority": job.priority,
        "gpus": job.gpus,
        "devices": job.devices,
        "submitted_at": job.submitted_at,
        "started_at": job.started_at,
        "ended_at": job.ended_at,
        "attempts": job.attempts,
        "restarts": job.restarts,
        "preemptions": job.preemptions,
        "stop_request": job.stop_request,
        "exit_code": job.exit_code,
        "failure_reason": job.failure_reason,
        "failure_detail": job.failure_detail,
        "checkpoint_step": job.checkpoint_step,
        "last_step": job.last_step,
        "last_loss": job.last_loss,
        "steps_per_s": job.steps_per_s,
        "spec": visible_spec(job.spec, show_env),
    }
