"""`/metrics` in the Prometheus text format: queue, jobs by state, per-job step rate and loss, GPU telemetry, and
the engine's event counters and histograms (treino.server.meters).

Prometheus conventions (https://prometheus.io/docs/practices/naming/): counters end in `_total`, ratios are 0-1 and
end in `_ratio`, units are base units in the name (`_seconds`, `_bytes`). What is read from the database or the
devices at scrape time is a state, not a count of events, and stays a gauge (a restart of the server loses none of
it); counts of events are counters, held in this process (a restart resets them: treino.server.meters). Every name
is listed in docs/server.md (tests/server/test_prometheus.py checks both).
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Gauge, generate_latest
from prometheus_client.core import CounterMetricFamily
from prometheus_client.registry import Collector
from sqlalchemy import func, select

from treino.server.context import ServerContext
from treino.server.db import Job, JobState


class _Counted(Collector):
    """A counter the backend keeps (a plain int): exported as a counter, not a gauge, since it only grows."""

    def __init__(self, name: str, documentation: str, value: float) -> None:
        self.name, self.documentation, self.value = name, documentation, value

    def collect(self) -> Iterator[CounterMetricFamily]:
        yield CounterMetricFamily(self.name, self.documentation, value=self.value)


def render(ctx: ServerContext) -> tuple[bytes, str]:
    registry = CollectorRegistry()
    # Gauges: each is read at scrape time (the database, the inventory, NVML), so it is a state, not a count.
    queue = Gauge("treino_queue_length", "Jobs waiting for devices.", registry=registry)
    by_state = Gauge("treino_jobs", "Jobs by state.", ["state"], registry=registry)
    devices = Gauge("treino_devices", "Devices the server hands out, by kind.", ["kind"], registry=registry)
    busy = Gauge("treino_devices_busy", "Devices held by running or stopping jobs.", registry=registry)
    rate = Gauge(
        "treino_job_steps_per_second", "Training steps per second (job SDK).", ["job", "name"], registry=registry
    )
    loss = Gauge("treino_job_last_loss", "The last loss a job logged.", ["job", "name"], registry=registry)
    step = Gauge("treino_job_last_step", "The last step a job logged.", ["job", "name"], registry=registry)
    util = Gauge("treino_gpu_utilization_ratio", "GPU utilisation, 0-1 (NVML).", ["gpu"], registry=registry)
    mem = Gauge("treino_gpu_memory_used_bytes", "GPU memory in use (NVML).", ["gpu"], registry=registry)
    foreign = Gauge(
        "treino_gpu_foreign_processes", "Processes on a GPU that no treino job owns (NVML).", ["gpu"], registry=registry
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
        util.labels(gpu=str(g["index"])).set(g["util_percent"] / 100)
        mem.labels(gpu=str(g["index"])).set(g["memory_used_bytes"])
        temp.labels(gpu=str(g["index"])).set(g["temperature_c"])
    hygiene = ctx.backend.metrics()
    for gpu_index, pids in hygiene.get("foreign_gpu_pids", {}).items():
        foreign.labels(gpu=str(gpu_index)).set(len(pids))
    # Counted by the backend since this server started (only grows): a counter.
    orphans = hygiene.get("orphans_killed", 0)
    killed = "Processes of finished attempts found on GPUs and killed."
    registry.register(_Counted("treino_orphan_processes_killed", killed, orphans))
    refused = "Tokens refused (API and login page) since this server started."
    registry.register(_Counted("treino_auth_failures", refused, ctx.auth.failures.failures_total))
    return generate_latest(registry) + generate_latest(ctx.engine.meters.registry), CONTENT_TYPE_LATEST
