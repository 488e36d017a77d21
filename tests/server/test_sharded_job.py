"""The FSDP2 example (examples/fsdp_train.py) under a real server: 2 ranks with sharded checkpoints saved in the
background; one rank SIGKILLed mid-run; the job restarts from its newest sharded checkpoint and logs, at every step,
the loss of a run that never stopped. SQLite only: the database plays no part in what is tested here."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import Servers
from tests.server.test_jobs import ROOT, Server, final, job_pids
from treino.server.lineage import tree_bytes

EXAMPLE = str(ROOT / "examples" / "fsdp_train.py")
STEPS = 24
SAVE_EVERY = 4
LOSS_TOLERANCE = 1e-6
PAUSE_ENV = "EXAMPLE_PAUSE_AT_STEP"
WAIT_S = 300.0  # generous: two torchrun attempts and a second job on a loaded machine (only a failure waits this long)


@pytest.fixture
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    servers = Servers(tmp_path_factory)  # SQLite
    try:
        yield Server(servers.start(devices="cpu:4"))  # both jobs at once: 2 ranks each
    finally:
        servers.close()


def fsdp_job(name: str, max_restarts: int, pause_at: int | None = None) -> dict[str, object]:
    """`pause_at`: the first attempt waits after saving that step until it is killed (the example's test hook), so
    the kill lands mid-run however slow the machine; waiting changes no loss."""
    return {
        "name": name,
        "script": EXAMPLE,
        "args": ["--steps", str(STEPS), "--save-every", str(SAVE_EVERY)],
        "gpus": 2,
        "workdir": str(ROOT),
        "env": {"OMP_NUM_THREADS": "1", **({PAUSE_ENV: str(pause_at)} if pause_at is not None else {})},
        "max_restarts": max_restarts,
    }


def losses(server: Server, job_id: int) -> list[tuple[int, float]]:
    points = server.api("GET", f"/api/v1/jobs/{job_id}/metrics").json()["points"]
    return [(p["step"], p["values"]["loss"]) for p in points]


def test_sigkill_of_an_fsdp_rank_resumes_from_the_sharded_checkpoint_on_the_same_trajectory(server: Server) -> None:
    clean = server.submit(fsdp_job("fsdp-clean", max_restarts=0))
    crashy = server.submit(fsdp_job("fsdp-crashy", max_restarts=1, pause_at=2 * SAVE_EVERY))
    server.wait(crashy, lambda j: (j["checkpoint_step"] or 0) >= 2 * SAVE_EVERY, WAIT_S)  # reported once complete
    (victim,) = job_pids(server.url, crashy, RANK="1")
    os.kill(victim, signal.SIGKILL)

    job = server.wait(crashy, final, WAIT_S)
    assert job["state"] == "succeeded", server.logs(crashy, attempt=2)
    assert job["attempts"] == 2 and job["history"][0]["outcome"] == "signal"
    second = server.logs(crashy, attempt=2)
    resumed = int(second.split("resumed from step=")[1].split()[0])
    assert resumed == 2 * SAVE_EVERY and f"done step={STEPS}" in second  # where the first attempt waited
    reference = server.wait(clean, final, WAIT_S)
    assert reference["state"] == "succeeded", server.logs(clean)

    # Every step's loss, logged by either attempt (a step logged by both: by each), equals
    # the uninterrupted run's.
    expected = dict(losses(server, clean))
    assert sorted(expected) == list(range(1, STEPS + 1))
    logged = losses(server, crashy)
    assert {step for step, _ in logged} == set(range(1, STEPS + 1))
    after_restart = [(s, loss) for s, loss in logged if s > resumed]
    assert len(after_restart) >= STEPS - resumed
    assert [(s, loss) for s, loss in logged if abs(loss - expected[s]) > LOSS_TOLERANCE] == []

    # The sharded folders are the job's checkpoints: recorded with their size, in the lineage, the newest 3 on disk.
    folder = server.data_dir / "jobs" / str(crashy) / "checkpoints"
    on_disk = sorted(p.name for p in folder.iterdir() if p.name.startswith("step-"))
    assert on_disk == [f"step-{s:09d}" for s in range(STEPS - 2 * SAVE_EVERY, STEPS + 1, SAVE_EVERY)]
    recorded = {Path(c["path"]).name: c for c in job["checkpoints"]}
    assert [recorded[name]["bytes"] for name in on_disk] == [tree_bytes(folder / name) for name in on_disk]
    assert set(recorded) >= {f"step-{s:09d}" for s in range(SAVE_EVERY, STEPS + 1, SAVE_EVERY)}
    assert job["checkpoint_step"] == STEPS
    models = server.api("GET", "/api/v1/models").json()["models"]
    assert ("final", STEPS) in {(m["kind"], m["step"]) for m in models if m["job"] == crashy}
    assert not any(p.name.startswith(".step-") for p in folder.iterdir())  # no temp folder left
