"""The overview's GPU cards, in-process: an inventory of two H200s and NVML's telemetry replaced by fixed readings
(this machine has no GPU; the cards' numbers come from treino.server.inventory.gpu_telemetry on a real one)."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from treino.server.api import build_app
from treino.server.backend import LocalBackend
from treino.server.context import ServerContext
from treino.server.db import Job, JobState, make_engine, make_sessionmaker, migrate, sqlite_url
from treino.server.inventory import Device, Inventory
from treino.server.settings import Settings

GIB = 2**30


@pytest.fixture
def client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    engine = make_engine(sqlite_url(tmp_path))
    migrate(engine)
    devices = tuple(Device(i, "gpu", "NVIDIA H200", 141 * GIB, 0) for i in range(2))
    settings = Settings(tmp_path, "http://127.0.0.1:0", key=b"k" * 32)
    ctx = ServerContext.create(settings, make_sessionmaker(engine), LocalBackend(Inventory("gpu", devices)))
    token = ctx.create_admin_token()
    with ctx.sessions.begin() as s:
        s.add(
            Job(
                name="llm-sft",
                spec={"name": "llm-sft", "script": "t.py", "args": ["--steps", "1000"], "gpus": 1},
                owner="admin",
                state=JobState.RUNNING,
                gpus=1,
                devices=[1],
                submitted_at=time.time(),
                job_token_hash="0" * 64,
                last_step=400,
                steps_per_s=2.0,
            )
        )
    telemetry: list[dict[str, Any]] = [
        {"index": 0, "util_percent": 3, "memory_used_bytes": 1 * GIB, "temperature_c": 31},
        {"index": 1, "util_percent": 97, "memory_used_bytes": 120 * GIB, "temperature_c": 64},
    ]
    monkeypatch.setattr("treino.server.inventory.gpu_telemetry", lambda: telemetry)
    c = TestClient(build_app(ctx))
    assert c.post("/login", data={"token": token}, follow_redirects=False).status_code == 303
    return c


def test_gpu_cards_show_model_utilisation_memory_temperature_and_the_holder(client: TestClient) -> None:
    html = client.get("/").text
    assert "GPU 1 · NVIDIA H200" in html and "97 %" in html and "64 °C" in html
    assert "120.00 GiB / 141.00 GiB" in html and '<a href="/jobs/1">#1 llm-sft</a>' in html
    assert "5.0 min" in html  # ETA: (1000 - 400) steps / 2 steps/s
    data = client.get("/overview.json").json()
    assert [d["job"] for d in data["devices"]] == [None, {"id": 1, "name": "llm-sft"}]
    assert data["running"][0]["eta_s"] == 300.0
