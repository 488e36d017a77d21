"""Tracker bridges: what `run.log` and `run.config` also write to TensorBoard, MLflow and Weights & Biases.

    tracker       package (extra `treino[trackers]`)   what it writes, under the trackers folder
    tensorboard   tensorboard>=2.17                     tensorboard/events.out.tfevents.*   (scalars; hparams plugin)
    mlflow        mlflow-skinny>=2.16                   mlflow/                             (a local file store)
    wandb         wandb>=0.19.10                        wandb/offline-run-*/                (offline mode, never synced)

Which trackers a run writes to, first match wins:
1. TREINO_TRACKERS (comma-separated; empty for none): the server sets it from the spec's `trackers` field;
2. `job.init(trackers=[...])`;
3. a managed run (under `treino server`, which sets TREINO_TRACKERS_DIR): DEFAULT_TRACKERS, TensorBoard; a local
   run: none.
A tracker asked for (1 or 2) whose package is missing is one warning and the run goes on without it (the server
refuses such a spec at submit already); the default's missing package is one info line.

The trackers folder is TREINO_TRACKERS_DIR (the server's `{job folder}/trackers`), else `job.init(trackers_dir=...)`,
else ./trackers. `run.config(**hparams)` also writes `config.json` there (merged across calls, replaced atomically).

Only rank 0 writes. Nothing here runs on the training loop's thread but `add` (a deque append) and `config` (a small
JSON file): one daemon thread, "treino-trackers", opens the trackers (`wandb.init` takes a second) and writes what
was logged every TRACKERS_FLUSH_INTERVAL_S. A tracker that raises is disabled after one warning; the others and the
training go on. At most TRACKERS_BUFFER_POINTS points wait; beyond that the oldest are dropped, with one warning.

No network, whatever the environment says, and as little as possible changed for the rest of the process (a
script's own `wandb.init()` or `report_to="wandb"` keeps syncing): W&B gets its run's settings in the call
(mode="offline", no git, code or system metrics capture, console="off": the job's output stays the job's), which win
over WANDB_MODE and the other WANDB_ variables; only WANDB_ERROR_REPORTING=false (no Sentry; W&B reads it nowhere
else) is set in this process's environment, and only when the wandb tracker is on. MLflow gets a `file:` tracking
URI on its client; MLFLOW_DISABLE_TELEMETRY=true, and MLFLOW_ALLOW_FILE_STORE=true (MLflow 3.x refuses a file store
without it), exist only as environment variables, set only when the mlflow tracker is on.
"""

from __future__ import annotations

import atexit
import collections
import difflib
import importlib
import importlib.util
import json
import logging
import math
import os
import secrets
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from treino.errors import JobError
from treino.i18n import Msg

log = logging.getLogger("treino.trackers")

# --- every default, interval and limit of the bridges, with its unit -----------------------------------------------
ENV_TRACKERS = "TREINO_TRACKERS"  # comma-separated tracker names; set (even empty) it decides
ENV_TRACKERS_DIR = "TREINO_TRACKERS_DIR"
TRACKERS = ("tensorboard", "mlflow", "wandb")
# tracker -> (the module the job's Python must find, what to pip install for it)
PACKAGES: dict[str, tuple[str, str]] = {
    "tensorboard": ("tensorboard", "tensorboard>=2.17"),
    "mlflow": ("mlflow", "mlflow-skinny>=2.16"),
    "wandb": ("wandb", "wandb>=0.19.10"),  # reinit="create_new" (0.19.10), the x_disable_* settings (0.19.0)
}
DEFAULT_TRACKERS = ("tensorboard",)  # a managed run whose spec has no `trackers`
DEFAULT_LOCAL_TRACKERS_DIR = "trackers"  # relative to the working directory, for local runs
CONFIG_FILE = "config.json"  # run.config()'s hyperparameters, in the trackers folder
TRACKERS_FLUSH_INTERVAL_S = 1.0  # the thread writes what was logged at least this often
TRACKERS_BUFFER_POINTS = 10_000  # points waiting for the thread; the oldest are dropped beyond this
TRACKERS_CLOSE_TIMEOUT_S = 15.0  # finish() waits this long for the last writes (wandb's finish takes ~1 s)
TENSORBOARD_FLUSH_S = 5  # the event writer's own flush period (the thread also flushes after every batch)
MLFLOW_BATCH_METRICS_MAX = 1000  # metrics per log_batch call (MLflow's own limit)
PROJECT = "treino"  # the MLflow experiment and the W&B project of every run


def unknown_trackers(names: Sequence[str]) -> list[str]:
    """The names that are not trackers, each with a "did you mean" where one is close (a Msg: the server's refusal of
    a spec is worded in its reader's language)."""
    out: list[str] = []
    for name in names:
        if name not in TRACKERS:
            close = difflib.get_close_matches(name, TRACKERS, n=1)
            out.append(Msg("{name!r} (did you mean {close!r}?)", name=name, close=close[0]) if close else repr(name))
    return out


def pip_hint(names: Sequence[str]) -> str:
    """`pip install 'a>=1' 'b>=2'` for the trackers `names`."""
    return "pip install " + " ".join(f"'{PACKAGES[n][1]}'" for n in names)


def missing_packages(names: Sequence[str]) -> list[str]:
    """The trackers among `names` whose package this Python cannot find (found, not imported: importing wandb and
    mlflow takes seconds)."""
    return [n for n in names if not _findable(PACKAGES[n][0])]


def _findable(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # sys.modules[module] is None: imports of it are blocked
        return False


def parse_trackers(raw: str) -> list[str]:
    """TREINO_TRACKERS's value as tracker names; JobError for an unknown one."""
    names = list(dict.fromkeys(n.strip().lower() for n in raw.split(",") if n.strip()))
    unknown = unknown_trackers(names)
    if unknown:
        raise JobError(
            f"{ENV_TRACKERS}={raw!r} names no tracker {', '.join(unknown)}. To fix: use some of "
            f"{', '.join(TRACKERS)}, comma-separated (empty for none)."
        )
    return names


def choose(asked: Sequence[str] | None, managed: bool) -> tuple[list[str], bool]:
    """(the trackers this run should write to, whether they were asked for); see the module docstring."""
    raw = os.environ.get(ENV_TRACKERS)
    if raw is not None:
        return parse_trackers(raw), True
    if asked is not None:
        return parse_trackers(",".join(asked)), True
    return (list(DEFAULT_TRACKERS), False) if managed else ([], False)


def flat_hparams(hparams: Mapping[str, Any], prefix: str = "") -> dict[str, bool | int | float | str]:
    """Nested mappings flattened with '.', each value a bool, int, float or str (anything else as its str())."""
    out: dict[str, bool | int | float | str] = {}
    for key, value in hparams.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(flat_hparams(value, f"{name}."))
        elif isinstance(value, bool | int | float | str):
            out[name] = value
        else:
            out[name] = str(value)
    return out


# --- the trackers --------------------------------------------------------------------------------------------------
Point = tuple[int, float, dict[str, float | None]]  # (step, unix time in s, values; None where nan or inf)


class Tracker(Protocol):
    name: str

    def open(self) -> None: ...
    def write(self, points: list[Point]) -> None: ...
    def config(self, hparams: dict[str, bool | int | float | str]) -> None: ...
    def close(self) -> None: ...


def _finite_or_nan(value: float | None) -> float:
    return math.nan if value is None else value


class TensorBoard:
    """Scalars as `Summary.Value(simple_value=...)` events and hyperparameters as the hparams plugin's
    session_start_info, written with TensorBoard's own EventFileWriter (no torch, no TensorFlow needed)."""

    name = "tensorboard"

    def __init__(self, folder: Path) -> None:
        self.folder = folder / "tensorboard"
        self._writer: Any = None

    def open(self) -> None:
        writer_module = importlib.import_module("tensorboard.summary.writer.event_file_writer")
        self._event_pb2 = importlib.import_module("tensorboard.compat.proto.event_pb2")
        self._summary_pb2 = importlib.import_module("tensorboard.compat.proto.summary_pb2")
        self._hparams = importlib.import_module("tensorboard.plugins.hparams.summary_v2")
        self.folder.mkdir(parents=True, exist_ok=True)
        self._writer = writer_module.EventFileWriter(str(self.folder), flush_secs=TENSORBOARD_FLUSH_S)

    def write(self, points: list[Point]) -> None:
        value_type, event_type = self._summary_pb2.Summary.Value, self._event_pb2.Event
        for step, wall_time, values in points:
            summary = self._summary_pb2.Summary(
                value=[value_type(tag=k, simple_value=_finite_or_nan(v)) for k, v in values.items()]
            )
            self._writer.add_event(event_type(wall_time=wall_time, step=step, summary=summary))
        self._writer.flush()

    def config(self, hparams: dict[str, bool | int | float | str]) -> None:
        summary = self._hparams.hparams_pb(hparams, start_time_secs=int(time.time()))
        self._writer.add_event(self._event_pb2.Event(wall_time=time.time(), step=0, summary=summary))
        self._writer.flush()

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()


class MLflow:
    """One MLflow run per job in the experiment PROJECT of a file store under the trackers folder, found again by
    its tag `treino.job_id` by a later attempt (a local run gets a new one each time)."""

    name = "mlflow"

    def __init__(self, folder: Path, job_id: int | None) -> None:
        self.folder = folder / "mlflow"
        self.job_id = job_id
        self._client: Any = None
        self.run_id = ""
        self._params: dict[str, str] = {}  # logged so far: MLflow keeps a parameter's first value for good
        self._warned_params = False

    def open(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        tracking = importlib.import_module("mlflow.tracking")
        self._entities = importlib.import_module("mlflow.entities")
        self._client = tracking.MlflowClient(tracking_uri=self.folder.as_uri())
        experiment = self._client.get_experiment_by_name(PROJECT)
        experiment_id = experiment.experiment_id if experiment else self._client.create_experiment(PROJECT)
        if self.job_id is not None:
            earlier = self._client.search_runs(
                [experiment_id], filter_string=f"tags.`treino.job_id` = '{self.job_id}'", max_results=1
            )
            if earlier:
                self.run_id = earlier[0].info.run_id
                self._params = dict(earlier[0].data.params)
                self._client.update_run(self.run_id, status="RUNNING")
                return
        name = f"job-{self.job_id}" if self.job_id is not None else "local"
        tags = {"treino.job_id": str(self.job_id)} if self.job_id is not None else {}
        self.run_id = self._client.create_run(experiment_id, run_name=name, tags=tags).info.run_id

    def write(self, points: list[Point]) -> None:
        metric = self._entities.Metric
        metrics = [
            metric(k, _finite_or_nan(v), int(t * 1000), step) for step, t, values in points for k, v in values.items()
        ]
        for i in range(0, len(metrics), MLFLOW_BATCH_METRICS_MAX):
            self._client.log_batch(self.run_id, metrics=metrics[i : i + MLFLOW_BATCH_METRICS_MAX])

    def config(self, hparams: dict[str, bool | int | float | str]) -> None:
        new = {k: str(v) for k, v in hparams.items() if k not in self._params}
        changed = sorted(k for k, v in hparams.items() if k in self._params and self._params[k] != str(v))
        if new:
            self._client.log_batch(self.run_id, params=[self._entities.Param(k, v) for k, v in new.items()])
            self._params.update(new)
        if changed and not self._warned_params:
            self._warned_params = True
            log.warning(
                "treino: MLflow keeps a parameter's first value; %s changed and keep it there (config.json and the "
                "other trackers have the new values).",
                ", ".join(changed),
            )

    def close(self) -> None:
        if self._client is not None and self.run_id:
            self._client.set_terminated(self.run_id, status="FINISHED")


class WandB:
    """A W&B run in offline mode under the trackers folder (`wandb sync` uploads it later, if anyone wants); a job's
    attempts share its id, `treino-job-{id}`."""

    name = "wandb"

    def __init__(self, folder: Path, job_id: int | None) -> None:
        self.folder = folder
        self.job_id = job_id
        self._run: Any = None

    def open(self) -> None:
        wandb = importlib.import_module("wandb")
        self.folder.mkdir(parents=True, exist_ok=True)
        settings = wandb.Settings(
            mode="offline",
            console="off",
            silent=True,
            save_code=False,
            disable_code=True,
            disable_git=True,
            disable_job_creation=True,
            x_disable_stats=True,
            x_disable_meta=True,
            x_disable_machine_info=True,
        )
        managed = self.job_id is not None
        self._run = wandb.init(
            dir=str(self.folder),
            project=os.environ.get("WANDB_PROJECT", PROJECT),
            name=f"job-{self.job_id}" if managed else "local",
            id=f"treino-job-{self.job_id}" if managed else f"treino-local-{secrets.token_hex(4)}",
            resume="allow" if managed else None,
            settings=settings,
            reinit="create_new",
        )

    def write(self, points: list[Point]) -> None:
        for step, _, values in points:
            self._run.log({k: _finite_or_nan(v) for k, v in values.items()}, step=step)

    def config(self, hparams: dict[str, bool | int | float | str]) -> None:
        self._run.config.update(hparams, allow_val_change=True)

    def close(self) -> None:
        if self._run is not None:
            self._run.finish()


# What the trackers need in this process's environment, having no setting for it in the call (module docstring).
OFFLINE_ENVIRONMENT: dict[str, dict[str, str]] = {
    "wandb": {"WANDB_ERROR_REPORTING": "false"},
    "mlflow": {"MLFLOW_DISABLE_TELEMETRY": "true", "MLFLOW_ALLOW_FILE_STORE": "true"},
}


def _offline_environment(names: Sequence[str]) -> None:
    """Set the environment variables the trackers `names` need and only those (see the module docstring)."""
    for name in names:
        os.environ.update(OFFLINE_ENVIRONMENT.get(name, {}))


def make(name: str, folder: Path, job_id: int | None) -> Tracker:
    if name == "tensorboard":
        return TensorBoard(folder)
    if name == "mlflow":
        return MLflow(folder, job_id)
    assert name == "wandb", name
    return WandB(folder, job_id)


# --- the bridge ----------------------------------------------------------------------------------------------------
class Bridge:
    """Rank 0's trackers and the thread that writes to them. `add` and `config` are all the training loop calls."""

    def __init__(self, trackers: list[Tracker], folder: Path, write_config_file: bool = True) -> None:
        self.folder = folder
        self.trackers = trackers
        self.hparams: dict[str, Any] = {}
        self._write_config_file = write_config_file
        self._queue: collections.deque[Point | dict[str, bool | int | float | str]] = collections.deque(
            maxlen=TRACKERS_BUFFER_POINTS
        )
        self._dropped = 0  # points the full queue dropped (warned about once)
        self._warned_drops = False
        self._warned_config = False
        self._stop = threading.Event()
        self._closed = False
        self._thread: threading.Thread | None = None
        if trackers:
            _offline_environment([t.name for t in trackers])
            self._thread = threading.Thread(target=self._loop, name="treino-trackers", daemon=True)
            self._thread.start()

    @property
    def names(self) -> list[str]:
        return [t.name for t in self.trackers]

    def add(self, step: int, wall_time: float, values: dict[str, float | None]) -> None:
        """Queue one logged point; returns at once (a full queue drops its oldest point)."""
        if not self.trackers:
            return
        if len(self._queue) == TRACKERS_BUFFER_POINTS:
            self._dropped += 1
        self._queue.append((step, wall_time, values))

    def config(self, hparams: Mapping[str, Any]) -> None:
        """Merge `hparams` into the run's, rewrite config.json, and queue them for the trackers."""
        self.hparams.update(hparams)
        if self._write_config_file:
            self._save_config_file()
        if self.trackers:
            self._queue.append(flat_hparams(self.hparams))

    def _save_config_file(self) -> None:
        path = self.folder / CONFIG_FILE
        temp = path.with_name(f".{CONFIG_FILE}.tmp-{os.getpid()}")
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            temp.write_text(json.dumps(self.hparams, indent=2, sort_keys=True, default=str) + "\n")
            os.replace(temp, path)
        except OSError as e:
            temp.unlink(missing_ok=True)
            if not self._warned_config:
                self._warned_config = True
                log.warning("treino: cannot write %s (%s); the trackers still get the hyperparameters.", path, e)

    def close(self) -> None:
        """Write what is queued, close every tracker (for at most TRACKERS_CLOSE_TIMEOUT_S); idempotent."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.close)
        self._stop.set()
        if self._thread is None:
            return
        self._thread.join(timeout=TRACKERS_CLOSE_TIMEOUT_S)
        if self._thread.is_alive():
            log.warning(
                "treino: the trackers (%s) did not finish writing within %.0f s; what is left is lost.",
                ", ".join(self.names),
                TRACKERS_CLOSE_TIMEOUT_S,
            )

    # -- the thread
    def _loop(self) -> None:
        for tracker in list(self.trackers):
            self._call(tracker, "open")
        # Registered after the trackers opened, so it runs before the atexit hooks they registered (wandb's finishes
        # its run): a script that never calls run.finish() still has its last points written.
        atexit.register(self.close)
        while True:
            stopping = self._stop.wait(TRACKERS_FLUSH_INTERVAL_S)
            self._drain()
            if stopping:
                break
        for tracker in list(self.trackers):
            self._call(tracker, "close")

    def _drain(self) -> None:
        if self._dropped and not self._warned_drops:
            self._warned_drops = True
            log.warning(
                "treino: the trackers (%s) are not keeping up; %d logged points were dropped, oldest first (this "
                "warning is shown once).",
                ", ".join(self.names),
                self._dropped,
            )
        points: list[Point] = []
        while self._queue:
            item = self._queue.popleft()
            if isinstance(item, dict):  # hyperparameters: after the points logged before them
                self._write(points)
                points = []
                for tracker in list(self.trackers):
                    self._call(tracker, "config", item)
            else:
                points.append(item)
        self._write(points)

    def _write(self, points: list[Point]) -> None:
        if points:
            for tracker in list(self.trackers):
                self._call(tracker, "write", points)

    def _call(self, tracker: Tracker, what: str, *args: Any) -> None:
        try:
            getattr(tracker, what)(*args)
        # A tracker is third-party code that may raise anything (protobuf, HTTP-less client errors, a full disk);
        # whatever it is, training must go on: one warning, and that tracker is off for the rest of the run.
        except Exception as e:
            if tracker in self.trackers:
                self.trackers.remove(tracker)
            log.warning(
                "treino: the %s tracker failed to %s (%s: %s); it is disabled for the rest of this run.",
                tracker.name,
                what,
                type(e).__name__,
                e,
            )


def start(
    asked: Sequence[str] | None, managed: bool, job_id: int | None, folder: str | os.PathLike[str] | None
) -> Bridge | None:
    """The bridge of rank 0 of a run (see the module docstring), or None when it has nothing to do."""
    env_folder = os.environ.get(ENV_TRACKERS_DIR, "")
    # The default is the server's to give: a managed run without the folder it names writes nothing by default
    names, explicit = choose(asked, managed and bool(env_folder))
    trackers_dir = Path(env_folder or folder or DEFAULT_LOCAL_TRACKERS_DIR).absolute()
    missing = missing_packages(names)
    if missing:
        say = log.warning if explicit else log.info
        say(
            "treino: tracker(s) %s skipped: this Python (%s) has no %s. To fix: %s, or 'pip install "
            '"treino[trackers]"\'.',
            ", ".join(missing),
            sys.executable,
            ", ".join(PACKAGES[n][0] for n in missing),
            pip_hint(missing),
        )
    names = [n for n in names if n not in missing]
    # config.json goes to the job's folder always, and to a local run's folder when it writes there anyway
    write_config_file = bool(env_folder or folder or names)
    if not names and not write_config_file:
        return None
    return Bridge([make(n, trackers_dir, job_id) for n in names], trackers_dir, write_config_file)
