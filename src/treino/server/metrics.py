"""`/metrics` in the Prometheus text format: queue, jobs by state, per-job step rate and loss, GPU telemetry."""

from __future__ import annotations

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest
from sqlalchemy import func, select

from treino.server.context import ServerContext
from treino.server.db import Job, JobState


def render(ctx: ServerContext) -> tuple[bytes, str]:
    registry = CollectorRegistry()
    queue = Gauge("treino_queue_length", "Jobs waiting for devices.", registry=registry)
    by_state = Gauge("treino_jobs", "Jobs by state.", ["state"], registry=registry)
    devices = Gauge("treino_devices", "Devices the server hands out, by kind.", ["kind"], registry=registry)
    busy = Gauge("treino_devices_busy", "Devices held by running or stopping jobs.", registry=registry)
    rate = Gauge(
        "treino_job_steps_per_second", "Training steps per second (job SDK).", ["job", "name"], registry=registry
    )
    loss = Gauge("treino_job_last_loss", "The last loss a job logged.", ["job", "name"], registry=registry)
    step = Gauge("treino_job_last_step", "The last step a job logged.", ["job", "name"], registry=registry)
    util = Gauge("treino_gpu_utilization_percent", "GPU utilisation (NVML).", ["gpu"], registry=registry)
    mem = Gauge("treino_gpu_memory_used_bytes", "GPU memory in use (NVML).", ["gpu"], registry=registry)
    foreign = Gauge(
        "treino_gpu_foreign_processes", "Processes on a GPU that no treino job owns (NVML).", ["gpu"], registry=registry
    )
    orphans = Gauge(
        "treino_orphan_processes_killed", "Processes of finished attempts found on GPUs.", registry=registry
    )
    temp = Gauge("treino_gpu_temperature_celsius", "GPU temperature (NVML).", ["gpu"], registry=registry)
    with ctx.sessions() as s:
        counts = dict(s.execute(select(Job.state, func.count()).group_by(Job.state)).tuples().all())
        for state in JobState:
            by_state.labels(state=state.value).set(counts.get(state.value, 0))
        queue.set(counts.get(JobState.QUEUED.value, 0))
        held = 0
        for job in s.scalars(select(Job).where(Job.state.in_([JobState.RUNNING, JobState.STOPPING]))):
            held += len(job.devices or [])
            labels = {"job": str(job.id), "name": job.name}
            if job.steps_per_s is not None:
                rate.labels(**labels).set(job.steps_per_s)
            if job.last_loss is not None:
                loss.labels(**labels).set(job.last_loss)
            if job.last_step is not None:
                step.labels(**labels).set(job.last_step)
    inventory = ctx.engine.inventory
    devices.labels(kind=inventory.kind).set(len(inventory.devices))
    busy.set(held)
    if inventory.nodes:  # a cluster: its machines as Slurm reports them
        node_gpus = Gauge(
            "treino_node_gpus",
            "GPUs of a cluster node (Slurm GRES).",
            ["node", "state", "partitions"],
            registry=registry,
        )
        node_usable = Gauge(
            "treino_node_usable",
            "1 when a cluster node may be given jobs (up, not draining).",
            ["node"],
            registry=registry,
        )
        for n in inventory.nodes:
            node_gpus.labels(node=n.name, state=n.state, partitions=",".join(n.partitions)).set(n.gpus)
            node_usable.labels(node=n.name).set(1 if n.usable else 0)
    for g in ctx.backend.telemetry():
        util.labels(gpu=str(g["index"])).set(g["util_percent"])
        mem.labels(gpu=str(g["index"])).set(g["memory_used_bytes"])
        temp.labels(gpu=str(g["index"])).set(g["temperature_c"])
    hygiene = ctx.backend.metrics()
    for gpu_index, pids in hygiene.get("foreign_gpu_pids", {}).items():
        foreign.labels(gpu=str(gpu_index)).set(len(pids))
    orphans.set(hygiene.get("orphans_killed", 0))
    return generate_latest(registry), CONTENT_TYPE_LATEST
