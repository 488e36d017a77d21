"""Every metric a job logged, by key: the API (/metrics/keys, /metrics/series, downsampling, repeated steps) and the
CLI (`treino show ID --metric NAME`, `treino metrics ID [--csv|--json]`), against a real server. One job logs its
keys through the real SDK; the long and the restarted runs are posted with the admin's token, as the SDK would."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from tests.conftest import Database
from tests.server.conftest import ServerProcess
from tests.server.test_cli_client import treino, wait_state, write_spec
from treino.server.settings import METRIC_SERIES_POINTS_MAX

# Four keys: loss and lr every step, val_acc every 5th step (a second run.log at the same step), and a NaN.
SDK_SCRIPT = """
import treino.job as tj
run = tj.init()
for step in range(1, 21):
    run.log(step, loss=10.0 / step, lr=0.5 ** step)
    if step % 5 == 0:
        run.log(step, val_acc=step / 20)
run.log(20, diverged=float("nan"))
run.finish()
"""
KEYS = ["diverged", "loss", "lr", "val_acc"]


@pytest.fixture(scope="module")
def sdk_job(shared: ServerProcess, tmp_path_factory: pytest.TempPathFactory) -> int:
    folder = tmp_path_factory.mktemp("sdk")
    (folder / "train.py").write_text(SDK_SCRIPT)
    spec = write_spec(folder / "job.yaml", name="keys", script="train.py")
    out = treino("submit", "--json", spec.name, cwd=folder, server=shared)
    assert out.returncode == 0, out.stderr
    job_id = int(json.loads(out.stdout)["id"])
    job = wait_state(shared, job_id, {"succeeded", "failed", "cancelled"}, timeout_s=180)  # generous under load
    assert job["state"] == "succeeded", job
    return job_id


def posted_job(shared: ServerProcess, points: list[dict[str, object]], name: str) -> int:
    """A finished job whose metric points are `points`, posted in order (batches of 1000, as the SDK sends)."""
    with shared.client() as http:
        r = http.post("/api/v1/jobs", json={"name": name, "command": ["true"], "workdir": "/tmp"})
        assert r.status_code == 201, r.text
        job_id = int(r.json()["id"])
        for i in range(0, len(points), 1000):
            r = http.post(f"/api/v1/jobs/{job_id}/metrics", json={"points": points[i : i + 1000]})
            assert r.status_code == 204, r.text
    return job_id


def test_every_key_the_sdk_logged_with_its_statistics(shared: ServerProcess, sdk_job: int) -> None:
    with shared.client() as http:
        keys = {k["key"]: k for k in http.get(f"/api/v1/jobs/{sdk_job}/metrics/keys").json()["keys"]}
        assert list(keys) == KEYS
        assert keys["loss"] == {
            "key": "loss",
            "points": 20,
            "first_step": 1,
            "last_step": 20,
            "last": 0.5,
            "min": 0.5,
            "max": 10.0,
        }
        assert (keys["val_acc"]["points"], keys["val_acc"]["first_step"]) == (4, 5)
        assert (keys["diverged"]["last"], keys["diverged"]["min"]) == (None, None)  # NaN is a gap, not a number

        r = http.get(f"/api/v1/jobs/{sdk_job}/metrics/series", params={"key": ["val_acc", "lr"]})
        assert r.status_code == 200, r.text
        val_acc, lr = r.json()["series"]
        assert (val_acc["step"], val_acc["value"]) == ([5, 10, 15, 20], [0.25, 0.5, 0.75, 1.0])
        assert val_acc["downsampled"] is False
        assert lr["value"] == [0.5**s for s in range(1, 21)]

        r = http.get(f"/api/v1/jobs/{sdk_job}/metrics/series", params={"key": ["loss", "los"]})
        assert r.status_code == 404
        assert r.json()["detail"] == (
            f"Job {sdk_job} never logged a metric 'los'. Did you mean 'loss'? It logged: diverged, loss, lr, val_acc. "
            f"To fix: name one of those (treino metrics {sdk_job} lists them)."
        )
        assert http.get("/api/v1/jobs/999999/metrics/keys").status_code == 404
        for bad in (1, METRIC_SERIES_POINTS_MAX + 1):
            params: dict[str, object] = {"key": "loss", "max_points": bad}
            assert http.get(f"/api/v1/jobs/{sdk_job}/metrics/series", params=params).status_code == 422
        assert http.get(f"/api/v1/jobs/{sdk_job}/metrics/series").status_code == 422  # no key
    assert shared.client().get(f"/api/v1/jobs/{sdk_job}/metrics/keys", headers={"Authorization": ""}).status_code == 401


def test_a_long_run_is_downsampled_keeping_its_spike_and_a_restart_counts_each_step_once(
    shared: ServerProcess,
) -> None:
    n = 5000
    spike = 3333
    points: list[dict[str, object]] = [
        {"step": s, "time": 1000.0 + s, "values": {"loss": 100.0 if s == spike else 1 + 1 / s}} for s in range(1, n + 1)
    ]
    # a restart from the checkpoint at step 4000 logs steps 4001..5000 again, later and lower
    points += [{"step": s, "time": 9000.0 + s, "values": {"loss": 0.5}} for s in range(4001, n + 1)]
    job_id = posted_job(shared, points, "long")
    with shared.client() as http:
        r = http.get(f"/api/v1/jobs/{job_id}/metrics/series", params={"key": "loss", "max_points": 100})
        (loss,) = r.json()["series"]
    assert (loss["points"], loss["downsampled"]) == (n, True)
    assert len(loss["step"]) <= 100 and loss["step"] == sorted(set(loss["step"]))
    assert (loss["step"][0], loss["step"][-1], loss["last"]) == (1, n, 0.5)
    assert spike in loss["step"] and loss["max"] == 100.0  # even thinning (every 50th step) would have lost it
    assert max(loss["value"]) == 100.0 and min(loss["value"]) == 0.5
    assert all(v == 0.5 for s, v in zip(loss["step"], loss["value"], strict=True) if s > 4000)  # the restart's


def test_cli_show_metric_and_metrics(shared: ServerProcess, sdk_job: int, database: Database, tmp_path: Path) -> None:
    if database.kind != "sqlite":
        pytest.skip("the CLI reads the same API answers on either database: [sqlite] runs it")
    out = treino("show", str(sdk_job), "--metric", "val_acc", cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0] == f"Job {sdk_job}: val_acc, 4 point(s), steps 5..20"
    assert lines[1] == "val_acc  ▁▃▆█"
    assert lines[2] == "last 1 (step 20) · min 0.25 (step 5) · max 1 (step 20)"
    table = [line.replace("│", " ").split() for line in lines[-4:]]
    assert table == [["5", "0.25"], ["10", "0.5"], ["15", "0.75"], ["20", "1"]]

    out = treino("show", str(sdk_job), "--metric", "lr", "--json", cwd=tmp_path, server=shared)
    lr = json.loads(out.stdout)
    assert (lr["key"], lr["points"], lr["step"], lr["last"]) == ("lr", 20, list(range(1, 21)), 0.5**20)

    out = treino("show", str(sdk_job), "--metric", "los", cwd=tmp_path, server=shared)
    assert out.returncode == 1 and out.stdout == ""
    message = " ".join(out.stderr.split())
    assert message.startswith(f"error: Job {sdk_job} never logged a metric 'los'. Did you mean 'loss'?")
    assert "It logged: diverged, loss, lr, val_acc." in message

    out = treino("metrics", str(sdk_job), "--csv", cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    rows = list(csv.reader(io.StringIO(out.stdout)))
    assert rows[0] == ["step", "time", *KEYS]
    assert len(rows) == 1 + 20 + 4 + 1  # every point: 20 of loss and lr, 4 of val_acc, 1 NaN
    step5 = [r for r in rows[1:] if r[0] == "5"]
    assert [r[2:] for r in step5] == [["", "2.0", "0.03125", ""], ["", "", "", "0.25"]]
    assert rows[-1][2:] == ["nan", "", "", ""]

    out = treino("metrics", str(sdk_job), "--json", cwd=tmp_path, server=shared)
    data = json.loads(out.stdout)
    assert (data["job"], data["keys"], len(data["points"])) == (sdk_job, KEYS, 25)
    assert data["points"][-1]["values"] == {"diverged": None}

    out = treino("metrics", str(sdk_job), cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "val_acc" in line)
    assert [c.strip() for c in row.split("│")[1:-1]] == ["val_acc", "4", "5..20", "1", "0.25", "1", "▁▃▆█"]

    out = treino("metrics", str(sdk_job), "--csv", "--json", cwd=tmp_path, server=shared)
    assert out.returncode == 2 and "give one of them" in out.stderr


# Keys a page or a terminal could take for markup: each must come back as the text it is.
HOSTILE_KEYS = [
    "<!--<script>",
    "</script><img src=x onerror=alert(1)>",
    "[/]",
    "[link=https://evil.example]x",
    "k" * 200,
]


def test_a_job_s_keys_are_bounded(shared: ServerProcess) -> None:
    job_id = posted_job(shared, [{"step": 0, "time": 1.0, "values": {f"k{i}": 1.0 for i in range(999)}}], "many")
    with shared.client() as http:
        r = http.post(f"/api/v1/jobs/{job_id}/metrics", json={"points": [{"step": 1, "time": 2.0, "values": {"x": 1}}]})
        assert r.status_code == 204, r.text  # the 1000th key
        points = [{"step": 2, "time": 3.0, "values": {"k1": 5.0}}, {"step": 3, "time": 4.0, "values": {"y": 1.0}}]
        r = http.post(f"/api/v1/jobs/{job_id}/metrics", json={"points": points})
        assert r.status_code == 422 and "at most 1,000" in r.text and "'y'" in r.text and "To fix" in r.text, r.text
        r = http.post(f"/api/v1/jobs/{job_id}/metrics", json={"points": points[:1]})
        assert r.status_code == 204, r.text  # a key it has logged: still welcome
        steps = [p["step"] for p in http.get(f"/api/v1/jobs/{job_id}/metrics").json()["points"]]
        assert steps == [0, 1, 2]  # nothing of the refused batch was stored
        too_long = {"step": 4, "time": 5.0, "values": {"k" * 201: 1.0}}
        r = http.post(f"/api/v1/jobs/{job_id}/metrics", json={"points": [too_long]})
        assert r.status_code == 422 and "200 characters" in r.text, r.text
        # Keys no job can have logged are keys it did not log (404), on PostgreSQL too, whose text refuses NUL.
        for odd in ("nul\x00key", "k" * 201):
            r = http.get(f"/api/v1/jobs/{job_id}/metrics/series", params={"key": odd})
            assert r.status_code == 404 and "never logged a metric" in r.text, r.text


def test_hostile_keys_are_text_to_the_cli(shared: ServerProcess, database: Database, tmp_path: Path) -> None:
    if database.kind != "sqlite":
        pytest.skip("the CLI reads the same API answers on either database: [sqlite] runs it")
    points: list[dict[str, object]] = [
        {"step": s, "time": float(s), "values": dict.fromkeys(HOSTILE_KEYS, s)} for s in range(3)
    ]
    job_id = posted_job(shared, points, "hostile")
    out = treino("metrics", str(job_id), cwd=tmp_path, server=shared, COLUMNS="400")
    assert out.returncode == 0, out.stderr
    for key in HOSTILE_KEYS:
        assert key in out.stdout, key  # printed as typed: '[/]' no MarkupError, '[link=...]' no terminal link
    out = treino("show", str(job_id), "--metric", "[/]", cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == f"Job {job_id}: [/], 3 point(s), steps 0..2"
    assert out.stdout.splitlines()[-5].split() == ["step", "┃", "[/]"]  # the table's header


def test_a_point_repeated_within_one_post_is_stored_once(shared: ServerProcess) -> None:
    """A point is its (step, time): a body that repeats one, as a hostile or buggy client may (10,000 times, the
    most one post takes), stores it once, the first copy; a replay of the same body stores nothing more."""
    same = [{"step": 0, "time": 0.0, "values": {"loss": float(i)}} for i in range(10_000)]
    job_id = posted_job(shared, [], "repeats")
    with shared.client() as http:
        for _ in range(2):
            r = http.post(f"/api/v1/jobs/{job_id}/metrics", json={"points": same})
            assert r.status_code == 204, r.text
        stored = http.get(f"/api/v1/jobs/{job_id}/metrics").json()["points"]
    assert stored == [{"step": 0, "time": 0.0, "values": {"loss": 0.0}}]
