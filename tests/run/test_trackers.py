"""The tracker bridges of the Job SDK (treino.trackers) in local runs: which trackers a run chooses, a tracker that
fails (one warning, then off; training and the other trackers go on), and a package that is missing (one warning
when asked for, one info line for the default; never a crash)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from treino import job, trackers
from treino.errors import JobError

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def local(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in (job.ENV_URL, job.ENV_JOB_ID, job.ENV_JOB_TOKEN, job.ENV_CHECKPOINT_DIR, "RANK"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv(trackers.ENV_TRACKERS, raising=False)
    monkeypatch.delenv(trackers.ENV_TRACKERS_DIR, raising=False)
    yield


def test_which_trackers_a_run_chooses(local: None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert trackers.choose(None, managed=False) == ([], False)  # a local run: none unless asked
    assert trackers.choose(None, managed=True) == (["tensorboard"], False)  # a managed one: the default
    assert trackers.choose(["wandb", "mlflow"], managed=True) == (["wandb", "mlflow"], True)
    monkeypatch.setenv(trackers.ENV_TRACKERS, "")  # the spec said [] : it wins over the script
    assert trackers.choose(["wandb"], managed=True) == ([], True)
    monkeypatch.setenv(trackers.ENV_TRACKERS, "mlflow, TensorBoard")
    assert trackers.choose(["wandb"], managed=False) == (["mlflow", "tensorboard"], True)
    monkeypatch.setenv(trackers.ENV_TRACKERS, "tensorbord")
    with pytest.raises(JobError, match=r"no tracker 'tensorbord' \(did you mean 'tensorboard'\?\)"):
        trackers.choose(None, managed=True)


def test_no_default_tracker_without_the_folder_the_server_names(local: None, tmp_path: Path) -> None:
    # a managed run's environment made by hand (no TREINO_TRACKERS_DIR): nothing written to the working directory
    assert trackers.start(None, managed=True, job_id=7, folder=None) is None
    bridge = trackers.start(["tensorboard"], managed=True, job_id=7, folder=tmp_path)  # asked for: it is written
    assert bridge is not None and bridge.names == ["tensorboard"]
    bridge.close()


def test_a_local_run_without_trackers_writes_nothing(
    local: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    run = job.init(checkpoint_dir=tmp_path / "ckpt")
    run.config(lr=0.1)
    run.log(step=1, loss=1.0)
    run.finish()
    assert run.hparams == {"lr": 0.1}
    assert list(tmp_path.iterdir()) == []  # no trackers folder, no config.json


def test_a_failing_tracker_is_one_warning_and_the_others_go_on(
    local: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    folder = tmp_path / "trackers"
    folder.mkdir()
    (folder / "tensorboard").write_text("a file where TensorBoard wants its folder")
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    with caplog.at_level(logging.INFO, logger="treino"):
        run = job.init(checkpoint_dir=tmp_path / "ckpt", trackers=["tensorboard", "mlflow"], trackers_dir=folder)
        run.config(lr=0.1, model={"layers": 2})
        for step in range(1, 4):
            run.log(step=step, loss=1.0 / step)
        run.config(lr=0.2, warmup=10)  # MLflow cannot change a parameter: it keeps 0.1, says so, and goes on
        run.finish()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 2, warnings
    assert warnings[0].startswith("treino: the tensorboard tracker failed to open (FileExistsError")
    assert warnings[1].startswith("treino: MLflow keeps a parameter's first value; lr changed")
    assert [(p.step, p.values["loss"]) for p in run.metrics] == [(1, 1.0), (2, 0.5), (3, 1.0 / 3)]

    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(folder / "mlflow").as_uri())
    experiment = client.get_experiment_by_name("treino")
    assert experiment is not None
    [mlflow_run] = client.search_runs([experiment.experiment_id])
    assert mlflow_run.data.params == {"lr": "0.1", "model.layers": "2", "warmup": "10"}
    history = client.get_metric_history(mlflow_run.info.run_id, "loss")
    assert [(m.step, m.value) for m in history] == [(1, 1.0), (2, 0.5), (3, 1.0 / 3)]
    assert json.loads((folder / "config.json").read_text()) == {"lr": 0.2, "model": {"layers": 2}, "warmup": 10}


# A Python that finds no tracker package: the interpreter without its site-packages (-S), treino from the source.
MISSING = textwrap.dedent(
    """
    import logging, os, sys
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(message)s", stream=sys.stdout)
    from treino import job, trackers
    if sys.argv[1] == "default":  # a managed run's default, TensorBoard, in the folder the server names
        os.environ["TREINO_TRACKERS_DIR"] = sys.argv[2]
        bridge = trackers.start(None, managed=True, job_id=7, folder=None)
        print("bridge", bridge is not None and bridge.names)
    else:
        os.environ["TREINO_TRACKERS"] = "tensorboard,wandb"
        run = job.init(checkpoint_dir=os.path.join(sys.argv[2], "ckpt"), trackers_dir=sys.argv[2])
        run.config(lr=0.1)
        run.log(step=1, loss=2.0)
        run.finish()
        print("logged", [p.values for p in run.metrics])
    """
)


@pytest.mark.parametrize("case", ["asked", "default"])
def test_a_missing_package_is_one_line_and_the_run_goes_on(case: str, local: None, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    out = subprocess.run(
        [sys.executable, "-S", "-c", MISSING, case, str(tmp_path)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    lines = [line for line in out.stdout.splitlines() if "treino:" in line]
    assert len(lines) == 1, out.stdout
    if case == "asked":
        assert lines[0].startswith("WARNING treino: tracker(s) tensorboard, wandb skipped")
        assert "To fix: pip install 'tensorboard>=2.17' 'wandb>=0.19.10'" in lines[0]
        assert "logged [{'loss': 2.0}]" in out.stdout
        assert (tmp_path / "config.json").is_file()  # the hyperparameters are kept all the same
    else:
        assert lines[0].startswith("INFO treino: tracker(s) tensorboard skipped")
        assert "bridge []" in out.stdout


# A script with its own W&B habits: WANDB_MODE=online in its environment. The bridges leave that alone (its own
# wandb.init() would sync) and their W&B run is offline all the same, reaching for no network.
OWN_ENVIRONMENT = textwrap.dedent(
    """
    import json, os, socket, sys
    attempts = []
    def watch(event, args):
        if event == "socket.getaddrinfo" and str(args[0]) not in ("127.0.0.1", "localhost", "::1", "None"):
            attempts.append(f"resolve {args[0]}")
        elif event == "socket.connect" and args[0].family in (socket.AF_INET, socket.AF_INET6):
            if args[1][0] not in ("127.0.0.1", "::1"):
                attempts.append(f"connect {args[1]}")
    sys.addaudithook(watch)
    from treino import job
    os.environ["WANDB_MODE"] = "online"
    before = dict(os.environ)
    run = job.init(checkpoint_dir=os.path.join(sys.argv[1], "ckpt"), trackers=sys.argv[2:], trackers_dir=sys.argv[1])
    run.log(step=1, loss=2.0)
    run.finish()
    changed = {k: v for k, v in os.environ.items() if before.get(k) != v}
    print(json.dumps({"changed": changed, "network": attempts}))
    """
)


@pytest.mark.parametrize("asked", [["tensorboard"], ["wandb"]])
def test_the_bridges_leave_the_script_s_own_tracker_environment_alone(
    asked: list[str], local: None, tmp_path: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    for marker in ("PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS"):  # as in production (quiet libraries stay quiet)
        env.pop(marker, None)
    out = subprocess.run(
        [sys.executable, "-c", OWN_ENVIRONMENT, str(tmp_path), *asked],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout.splitlines()[-1])
    assert result["network"] == []
    if asked == ["tensorboard"]:  # nothing of W&B's or MLflow's is touched for TensorBoard
        assert result["changed"] == {}
    else:  # W&B's run is offline (its settings win over WANDB_MODE=online); only its Sentry switch is set
        result["changed"].pop("WANDB_SERVICE", None)  # W&B's own: its service's address, for the process's runs
        assert result["changed"] == {"WANDB_ERROR_REPORTING": "false"}
        assert len(list((tmp_path / "wandb").glob("offline-run-*/run-*.wandb"))) == 1
