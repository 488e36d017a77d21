"""PyTorch Lightning under treino: its metrics, checkpoints, stop and resume through the SDK.

    import lightning as L
    from treino import job
    from treino.integrations.lightning import TreinoCallback, TreinoCheckpoint, TreinoLogger, last_checkpoint

    run = job.init()
    trainer = L.Trainer(
        max_steps=1000,
        logger=TreinoLogger(run),
        callbacks=[TreinoCallback(run), TreinoCheckpoint(run, every_n_train_steps=100)],
    )
    trainer.fit(model, data, ckpt_path=last_checkpoint(run))   # None at the first start
    run.finish()

- TreinoLogger: what Lightning logs (`self.log(...)` in the module, and its `epoch`) goes to `run.log(step=...)`;
  the hyperparameters Lightning logs (`self.save_hyperparameters()`) go to `run.config(...)`.
- TreinoCheckpoint: a ModelCheckpoint that writes `step-{global_step:09d}.ckpt` in the job's checkpoint folder
  every `every_n_train_steps` and keeps the newest `run.keep` (a name the server's disk scan knows).
- TreinoCallback:
  - at setup it wraps the strategy's CheckpointIO, so that every file Lightning writes through it (any
    ModelCheckpoint, `trainer.save_checkpoint(path)`, its own stop checkpoint) is written atomically (a hidden temp
    file in the same folder, fsynced, renamed into place, as `run.save` does) and registered with the server as step
    `global_step` (`run.register_checkpoint`, rank 0). A file outside `run.checkpoint_dir` is neither:
    the server records only that folder, and one warning says so. Strategies that write sharded checkpoints
    without CheckpointIO (FSDP's "sharded" state, DeepSpeed) and AsyncCheckpointIO (the file is not there yet when
    the call returns) are not covered: register those with `run.register_checkpoint` yourself;
  - after each training batch, once `run.should_stop` (SIGTERM: preemption or cancel; under DDP all ranks agree),
    it saves `step-{global_step:09d}.ckpt` in the checkpoint folder and sets `trainer.should_stop`. Lightning
    notices the SIGTERM too (its handler runs treino's): it ends the batch with SIGTERMException, a SystemExit
    (exit status 0) that leaves `fit()`, so code after `fit()` does not run (`run.finish()` still runs at exit).
    A SIGTERM that arrives after the callback looked reaches it that way, in `on_exception`, and is saved there.

`last_checkpoint(run)` is what `trainer.fit(ckpt_path=...)` takes: the newest `.ckpt` file under the checkpoint
folder (by modification time, as Lightning's own ckpt_path="last" picks) that is a complete archive, or None. A
file cut by SIGKILL mid-write (one not saved through TreinoCallback: Lightning's own local save is not atomic
across file systems) is skipped.
"""

from __future__ import annotations

import logging
import os
from argparse import Namespace
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import lightning.pytorch as pl
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.loggers import Logger
from lightning.pytorch.plugins.io import AsyncCheckpointIO, CheckpointIO
from lightning.pytorch.utilities.exceptions import SIGTERMException

from treino.errors import JobError
from treino.job import Run, _fsync_dir, _is_intact_archive

log = logging.getLogger("treino.integrations")

CHECKPOINT_SUFFIX = ".ckpt"  # Lightning's ModelCheckpoint.FILE_EXTENSION


def checkpoint_name(step: int) -> str:
    """`step-000000100.ckpt`: the name TreinoCheckpoint and TreinoCallback's stop checkpoint use."""
    return f"step-{step:09d}{CHECKPOINT_SUFFIX}"


def last_checkpoint(where: Run | str | os.PathLike[str]) -> str | None:
    """The newest complete `.ckpt` under `where` (a run: its checkpoint folder), for `trainer.fit(ckpt_path=...)`;
    None when there is none (the first start)."""
    folder = where.checkpoint_dir if isinstance(where, Run) else Path(where)
    if not folder.is_dir():
        return None
    candidates = sorted(
        ((p.stat().st_mtime_ns, p.name, p) for p in folder.rglob(f"*{CHECKPOINT_SUFFIX}") if p.is_file()),
        reverse=True,
    )
    for _, _, path in candidates:
        if _is_intact_archive(path):
            return str(path)
        log.warning("treino: %s is torn or corrupt; not resumed from.", path)
    return None


class _RegisteringCheckpointIO(CheckpointIO):
    """The strategy's CheckpointIO; each file it saves under the job's folder is written atomically, then registered
    with the server."""

    def __init__(self, inner: CheckpointIO, run: Run) -> None:
        self.inner = inner
        self.run = run
        self._warned: set[Path] = set()

    def save_checkpoint(self, checkpoint: dict[str, Any], path: str | Path, storage_options: Any | None = None) -> None:
        target = Path(path).absolute()
        if not target.resolve().is_relative_to(self.run.checkpoint_dir.resolve()):
            self.inner.save_checkpoint(checkpoint, path, storage_options=storage_options)
            if target.parent not in self._warned:
                self._warned.add(target.parent)
                log.warning(
                    "treino: checkpoints in %s are not recorded by the server (only those under the job's folder "
                    "%s are). To fix: save them under run.checkpoint_dir (TreinoCheckpoint does).",
                    target.parent,
                    self.run.checkpoint_dir,
                )
            return
        # Written as a hidden temp file in the same folder and renamed into place, as the SDK's own: Lightning's
        # local save goes through a temp file in /tmp, whose move is a copy (a kill leaves a torn file) when the
        # checkpoint folder is on another file system.
        temp = target.with_name(f".{target.name}.tmp-{os.getpid()}")
        try:
            self.inner.save_checkpoint(checkpoint, temp, storage_options=storage_options)
            with open(temp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(temp, target)
        finally:
            temp.unlink(missing_ok=True)
        _fsync_dir(target.parent)
        self.run.register_checkpoint(target, int(checkpoint.get("global_step", 0)))

    def load_checkpoint(
        self, path: str | Path, map_location: Any | None = None, weights_only: bool | None = None
    ) -> dict[str, Any]:
        return self.inner.load_checkpoint(path, map_location=map_location, weights_only=weights_only)

    def remove_checkpoint(self, path: str | Path) -> None:
        self.inner.remove_checkpoint(path)

    def teardown(self) -> None:
        self.inner.teardown()


class TreinoCallback(Callback):
    """Registers Lightning's checkpoint files with the server and saves and stops at SIGTERM; pass it in
    `Trainer(callbacks=[TreinoCallback(run), ...])`. See the module docstring."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._stopping = False

    def setup(self, trainer: pl.Trainer, pl_module: pl.LightningModule, stage: str) -> None:
        io = trainer.strategy.checkpoint_io
        if isinstance(io, _RegisteringCheckpointIO):
            return
        if isinstance(io, AsyncCheckpointIO):
            raise JobError(
                "TreinoCallback cannot register checkpoints saved by AsyncCheckpointIO: the file is not written yet "
                "when Lightning's call returns. To fix: drop the AsyncCheckpointIO plugin, or register each file "
                "with run.register_checkpoint(path, step) once it is written."
            )
        trainer.strategy.checkpoint_io = _RegisteringCheckpointIO(io, self.run)
        if trainer.is_global_zero and self.run.checkpoint_dir.is_dir():  # temp files of a writer that was killed
            for temp in self.run.checkpoint_dir.glob(f".*{CHECKPOINT_SUFFIX}.tmp-*"):
                temp.unlink(missing_ok=True)

    def on_train_batch_end(
        self, trainer: pl.Trainer, pl_module: pl.LightningModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        if not self._stopping and self.run.should_stop:
            self._save_and_stop(trainer)

    def on_exception(self, trainer: pl.Trainer, pl_module: pl.LightningModule, exception: BaseException) -> None:
        # A SIGTERM that came after on_train_batch_end looked: Lightning ends the batch with SIGTERMException.
        if isinstance(exception, SIGTERMException) and not self._stopping:
            self._save_and_stop(trainer)

    def _save_and_stop(self, trainer: pl.Trainer) -> None:
        self._stopping = True
        path = self.run.checkpoint_dir / checkpoint_name(trainer.global_step)
        log.warning("treino: asked to stop (SIGTERM); saving %s and stopping.", path.name)
        trainer.save_checkpoint(path)  # registered by the CheckpointIO above
        trainer.should_stop = True


class TreinoCheckpoint(ModelCheckpoint):
    """A ModelCheckpoint for treino: `step-{global_step:09d}.ckpt` in `run.checkpoint_dir` every
    `every_n_train_steps`, the newest `run.keep` kept. Other ModelCheckpoint arguments pass through."""

    def __init__(self, run: Run, every_n_train_steps: int, **kwargs: Any) -> None:
        super().__init__(
            dirpath=run.checkpoint_dir,
            filename="step-{step:09d}",
            auto_insert_metric_name=False,
            monitor="step",  # the newest `save_top_k` by step: the last K, not the best K
            mode="max",
            save_top_k=run.keep,
            every_n_train_steps=every_n_train_steps,
            enable_version_counter=False,  # a step saved again overwrites its file instead of adding `-v1`
            **kwargs,
        )


def _plain_hparams(params: Mapping[Any, Any] | Namespace) -> dict[str, Any]:
    """`params` with str keys and plain values (see TreinoLogger.log_hyperparams)."""
    out: dict[str, Any] = {}
    for key, value in (vars(params) if isinstance(params, Namespace) else params).items():
        if isinstance(value, Mapping | Namespace):
            out[str(key)] = _plain_hparams(value)
        elif value is None or isinstance(value, bool | int | float | str):
            out[str(key)] = value
        else:
            out[str(key)] = str(value)
    return out


class TreinoLogger(Logger):
    """Lightning's logged metrics to `run.log`; pass it as `Trainer(logger=TreinoLogger(run))`."""

    def __init__(self, run: Run) -> None:
        super().__init__()
        self.run = run

    @property
    def name(self) -> str:
        return "treino"

    @property
    def version(self) -> str:
        return str(self.run.job_id) if self.run.job_id is not None else "local"

    def log_metrics(self, metrics: dict[str, float], step: int | None = None) -> None:
        self.run.log(step=step or 0, **metrics)

    def log_hyperparams(self, params: dict[str, Any] | Namespace, *args: Any, **kwargs: Any) -> None:
        """The module's (and datamodule's) hyperparameters, `save_hyperparameters()`'s, to `run.config`: nested
        dicts and Namespaces stay nested (the trackers flatten them with '.'), numbers, strings, bools and None stay
        as they are, anything else becomes its str() (a class, a dtype, a path)."""
        plain = _plain_hparams(params)
        if plain:
            self.run.config(**plain)
