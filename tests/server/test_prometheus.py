"""`/metrics` follows Prometheus's conventions: a real server scraped after two tiny jobs (one succeeds, one fails
and is restarted once), parsed with prometheus_client's own parser; the GPU gauges in-process with NVML's readings
replaced (this machine has no GPU); docs/server.md lists exactly the names exported, and docs/grafana-treino.json
asks for no other."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from prometheus_client.metrics_core import Metric
from prometheus_client.parser import text_string_to_metric_families

from tests.server.conftest import Servers
from treino.server.api import build_app
from treino.server.backend import LocalBackend
from treino.server.context import ServerContext
from treino.server.db import make_engine, make_sessionmaker, migrate, sqlite_url
from treino.server.inventory import Device, Inventory
from treino.server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs" / "server.md"
DASHBOARD = ROOT / "docs" / "grafana-treino.json"
JOB_WAIT_S = 60.0
GIB = 2**30
SLURM_ONLY = {"treino_node_gpus", "treino_node_usable"}  # exported on a cluster only (tests/cluster reads them)
NAME = re.compile(r"^[a-z_:][a-z0-9_:]*$")
BASE_UNITS_NOT = ("percent", "milliseconds", "_ms", "kilobytes", "megabytes", "_mb", "_gb", "minutes", "hours")


@pytest.fixture(scope="module")
def scraped(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Metric]]:
    """/metrics of a server (SQLite: the database plays no part) after one job succeeded, one failed twice and
    one request came with a bad token."""
    servers = Servers(tmp_path_factory)
    try:
        server = servers.start()
        with server.client() as http:
            ok = http.post("/api/v1/jobs", json={"name": "ok", "command": ["true"]}).json()["id"]
            bad = http.post("/api/v1/jobs", json={"name": "bad", "command": ["false"], "max_restarts": 1}).json()["id"]
            for job_id in (ok, bad):
                wait_final(http, job_id)
            bad_token = {"Authorization": "Bearer trn_wrong"}
            assert httpx.get(f"{server.url}/api/v1/jobs", headers=bad_token).status_code == 401
            text = http.get("/metrics").text
        yield {f.name: f for f in text_string_to_metric_families(text)}
    finally:
        servers.close()


def wait_final(http: httpx.Client, job_id: int) -> dict[str, Any]:
    deadline = time.monotonic() + JOB_WAIT_S
    while True:
        job: dict[str, Any] = http.get(f"/api/v1/jobs/{job_id}").json()
        if job["state"] in ("succeeded", "failed", "cancelled"):
            return job
        assert time.monotonic() < deadline, f"job {job_id} still {job['state']} after {JOB_WAIT_S:g} s"
        time.sleep(0.2)


def samples(families: dict[str, Metric], name: str) -> dict[tuple[tuple[str, str], ...], float]:
    """{sorted labels: value} of the samples called `name` (a sample name: with _total, _bucket, ...)."""
    out = {}
    for family in families.values():
        for sample in family.samples:
            if sample.name == name:
                out[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def test_every_family_follows_the_naming_conventions(scraped: dict[str, Metric]) -> None:
    assert len(scraped) > 10
    for name, family in scraped.items():
        assert NAME.match(name) and name.startswith("treino_"), name
        assert not any(word in name for word in BASE_UNITS_NOT), f"{name}: not a base unit"
        names = {s.name for s in family.samples}
        if family.type == "counter":
            assert names == {f"{name}_total"}, (name, names)
        elif family.type == "histogram":
            assert names == {f"{name}_{x}" for x in ("bucket", "sum", "count")}, (name, names)
            assert name.endswith("_seconds"), name
            buckets = [s for s in family.samples if s.name.endswith("_bucket")]
            assert buckets[-1].labels["le"] == "+Inf"
            assert [s.value for s in buckets] == sorted(s.value for s in buckets)  # cumulative
        else:
            assert family.type == "gauge", (name, family.type)
            assert not name.endswith(("_total", "_created")), f"{name}: a gauge named as a counter"
        for sample in family.samples:
            if name.endswith("_ratio"):
                assert 0 <= sample.value <= 1, (sample.name, sample.value)
    # Each name once: a sample name of one family is not another family's name.
    sample_names = [s.name for f in scraped.values() for s in f.samples if "le" not in s.labels]
    families_of = {n: [f.name for f in scraped.values() if n in {s.name for s in f.samples}] for n in sample_names}
    assert all(len(owners) == 1 for owners in families_of.values()), families_of


def test_the_events_of_the_two_jobs_are_counted_and_observed(scraped: dict[str, Metric]) -> None:
    assert samples(scraped, "treino_jobs_submitted_total") == {(): 2.0}
    assert samples(scraped, "treino_attempts_started_total") == {(): 3.0}
    finished = samples(scraped, "treino_attempts_finished_total")
    assert finished == {(("outcome", "succeeded"),): 1.0, (("outcome", "user_error"),): 2.0}
    assert samples(scraped, "treino_job_restarts_total") == {(): 1.0}
    jobs = samples(scraped, "treino_jobs_finished_total")
    assert jobs == {(("state", "succeeded"),): 1.0, (("state", "failed"),): 1.0}
    assert samples(scraped, "treino_orphan_processes_killed_total") == {(): 0.0}
    assert samples(scraped, "treino_auth_failures_total") == {(): 1.0}  # the one bad token
    # Queue wait: once per job (its first attempt only); attempt durations: once per attempt.
    assert samples(scraped, "treino_queue_wait_seconds_count") == {(): 2.0}
    assert samples(scraped, "treino_attempt_duration_seconds_count") == {(): 3.0}
    assert 0 < samples(scraped, "treino_attempt_duration_seconds_sum")[()] < JOB_WAIT_S * 3
    inf = samples(scraped, "treino_queue_wait_seconds_bucket")[(("le", "+Inf"),)]
    assert inf == 2.0
    # States read from the database stay gauges: both jobs are final, none queued.
    assert scraped["treino_jobs"].type == "gauge" and scraped["treino_queue_length"].type == "gauge"
    assert samples(scraped, "treino_jobs")[(("state", "failed"),)] == 1.0
    assert samples(scraped, "treino_queue_length") == {(): 0.0}


def documented() -> dict[str, str]:
    """{name: type} of the table in docs/server.md's Prometheus section."""
    section = DOCS.read_text().split("## Prometheus\n", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(treino_[a-z0-9_]+)` \| (\w+) \|", section, re.MULTILINE)
    assert len(rows) == len({n for n, _ in rows}), "a name listed twice"
    return dict(rows)


def exported_name(family: Metric) -> str:
    """The name a family is listed under: a counter's with its _total (the parser drops it)."""
    return f"{family.name}_total" if family.type == "counter" else family.name


def test_the_docs_list_exactly_the_names_exported(scraped: dict[str, Metric]) -> None:
    exported = {exported_name(f): f.type for f in scraped.values()}
    docs = documented()
    assert {n: t for n, t in docs.items() if n not in SLURM_ONLY} == exported
    assert set(docs) >= SLURM_ONLY


def test_the_grafana_dashboard_asks_only_for_exported_names(scraped: dict[str, Metric]) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert len(exprs) >= 6
    sample_names = {f"{n}_{x}" for n, t in documented().items() if t == "histogram" for x in ("bucket", "sum", "count")}
    sample_names |= {n for n, t in documented().items() if t != "histogram"}
    used = {m for e in exprs for m in re.findall(r"\btreino_[a-z0-9_]+", e)}
    assert used and used <= sample_names, used - sample_names
    for family in ("treino_queue_length", "treino_gpu_utilization_ratio", "treino_queue_wait_seconds_bucket"):
        assert family in used
    assert any("histogram_quantile(0.95" in e and "treino_queue_wait_seconds_bucket" in e for e in exprs)
    assert any("treino_attempt_duration_seconds" in e for e in exprs)
    assert any("treino_attempts_finished_total" in e and "outcome" in e for e in exprs)  # failures by reason


def test_gpu_utilisation_is_a_ratio(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = make_engine(sqlite_url(tmp_path))
    migrate(engine)
    devices = tuple(Device(i, "gpu", "NVIDIA H200", 141 * GIB, 0) for i in range(2))
    settings = Settings(tmp_path, "http://127.0.0.1:0", key=b"k" * 32)
    ctx = ServerContext.create(settings, make_sessionmaker(engine), LocalBackend(Inventory("gpu", devices)))
    token = ctx.create_admin_token()
    telemetry = [
        {"index": 0, "util_percent": 3, "memory_used_bytes": 1 * GIB, "temperature_c": 31},
        {"index": 1, "util_percent": 100, "memory_used_bytes": 120 * GIB, "temperature_c": 64},
    ]
    monkeypatch.setattr("treino.server.inventory.gpu_telemetry", lambda: telemetry)
    text = TestClient(build_app(ctx)).get("/metrics", headers={"Authorization": f"Bearer {token}"}).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    assert samples(families, "treino_gpu_utilization_ratio") == {(("gpu", "0"),): 0.03, (("gpu", "1"),): 1.0}
    assert samples(families, "treino_gpu_memory_used_bytes")[(("gpu", "1"),)] == 120 * GIB
    assert samples(families, "treino_devices") == {(("kind", "gpu"),): 2.0}
