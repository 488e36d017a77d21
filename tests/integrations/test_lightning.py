"""treino.integrations.lightning with a real Lightning Trainer on the CPU: in process (SIGTERM saves and stops, the
next fit resumes; every file Lightning writes is registered), and examples/lightning_train.py as a job of a real
server, SIGKILLed mid-run and resumed by its next attempt."""

from __future__ import annotations

import logging
import os
import signal
from argparse import Namespace
from pathlib import Path
from typing import Any

import lightning as L
import pytest
import torch
from lightning.pytorch.utilities.exceptions import SIGTERMException
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from tests.integrations.conftest import STEPS, Jobs, kill_and_resume
from treino import job
from treino.integrations.lightning import TreinoCallback, TreinoCheckpoint, TreinoLogger, last_checkpoint
from treino.server.lineage import checkpoints_on_disk


class SigtermAt(L.Callback):
    """Sends this process SIGTERM at the end of step `step`, before TreinoCallback looks (it comes first)."""

    def __init__(self, step: int) -> None:
        self.step = step

    def on_train_batch_end(self, trainer: L.Trainer, *_: Any) -> None:
        if trainer.global_step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


class Tiny(L.LightningModule):
    """A linear regressor that counts its steps, and sends this process SIGTERM at the end of step `sigterm_at`
    after TreinoCallback looked (a module's hook runs after the callbacks')."""

    def __init__(self, sigterm_at: int | None = None) -> None:
        super().__init__()
        self.net = nn.Linear(4, 1)
        self.sigterm_at = sigterm_at
        self.trained = 0

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        loss = nn.functional.mse_loss(self.net(batch[0]), batch[1])
        self.log("loss", loss)
        self.trained += 1
        return loss

    def on_train_batch_end(self, outputs: Any, batch: Any, batch_idx: int) -> None:
        if self.trainer.global_step == self.sigterm_at:  # the module's hook runs before the callbacks'
            os.kill(os.getpid(), signal.SIGTERM)

    def configure_optimizers(self) -> Any:
        return torch.optim.SGD(self.parameters(), lr=0.1)


def fit(
    run: job.Run, model: Tiny, max_steps: int, every: int, ckpt_path: str | None, first: list[L.Callback]
) -> L.Trainer:
    g = torch.Generator().manual_seed(0)
    data = TensorDataset(torch.randn(64, 4, generator=g), torch.randn(64, 1, generator=g))
    trainer = L.Trainer(
        max_steps=max_steps,
        accelerator="cpu",
        logger=TreinoLogger(run),
        callbacks=[*first, TreinoCallback(run), TreinoCheckpoint(run, every_n_train_steps=every)],
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=run.checkpoint_dir,
    )
    trainer.fit(model, DataLoader(data, batch_size=4), ckpt_path=ckpt_path)
    return trainer


@pytest.mark.parametrize("when", ["before the callback looks", "after it looked"])
def test_sigterm_saves_a_checkpoint_stops_and_the_next_fit_resumes(
    local_run: job.Run, when: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    assert last_checkpoint(local_run) is None
    early = when.startswith("before")
    first = Tiny(sigterm_at=None if early else 5)
    with pytest.raises(SIGTERMException):  # Lightning's own ending at SIGTERM (a SystemExit): after our save
        fit(local_run, first, max_steps=12, every=4, ckpt_path=None, first=[SigtermAt(5)] if early else [])
    assert local_run.should_stop and first.trained == 5
    ckpt = local_run.checkpoint_dir
    assert sorted(p.name for p in ckpt.glob("*.ckpt")) == ["step-000000004.ckpt", "step-000000005.ckpt"]
    assert last_checkpoint(local_run) == str(ckpt / "step-000000005.ckpt")
    assert [p.step for p in local_run.metrics] == [0, 1, 2, 3, 4]  # Lightning's step: batches stepped before
    assert all(set(p.values) == {"loss", "epoch"} for p in local_run.metrics)

    # A file cut mid-write is never resumed from, newest or not.
    (ckpt / "step-000000007.ckpt").write_bytes(b"PK\x03\x04 cut")
    assert last_checkpoint(local_run) == str(ckpt / "step-000000005.ckpt")
    (ckpt / "step-000000007.ckpt").unlink()
    (ckpt / ".step-000000006.ckpt.tmp-1").write_bytes(b"PK")  # a killed writer's temp file

    local_run.finish()  # the next "attempt": a fresh run, no SIGTERM
    run = job.init(checkpoint_dir=ckpt, keep=2)
    try:
        second = Tiny()
        trainer = fit(run, second, max_steps=12, every=4, ckpt_path=last_checkpoint(run), first=[])
        assert trainer.global_step == 12 and second.trained == 7  # continued from step 5, not from 0
        assert not list(ckpt.glob(".*"))  # written atomically: no temp file left, the killed writer's removed
        # TreinoCheckpoint keeps the newest run.keep by step (the stop's step-5 is not one of its own files).
        assert sorted(p.name for p in ckpt.glob("*.ckpt")) == [
            "step-000000005.ckpt",
            "step-000000008.ckpt",
            "step-000000012.ckpt",
        ]
        # ... and the server's disk scan knows those names (for checkpoints whose report never arrived).
        assert [(s, p.name) for s, p, _ in checkpoints_on_disk(ckpt)] == [
            (5, "step-000000005.ckpt"),
            (8, "step-000000008.ckpt"),
            (12, "step-000000012.ckpt"),
        ]
        # A file saved outside the job's folder is not recorded by the server, which one warning says.
        with caplog.at_level(logging.WARNING, logger="treino.integrations"):
            trainer.save_checkpoint(tmp_path / "elsewhere" / "final.ckpt")
            trainer.save_checkpoint(tmp_path / "elsewhere" / "again.ckpt")
        assert [r.getMessage() for r in caplog.records if "not recorded" in r.getMessage()] == [
            f"treino: checkpoints in {tmp_path / 'elsewhere'} are not recorded by the server (only those under the "
            f"job's folder {ckpt} are). To fix: save them under run.checkpoint_dir (TreinoCheckpoint does)."
        ]
    finally:
        run.finish()


def test_a_sigkilled_lightning_job_resumes_from_its_last_registered_checkpoint(jobs: Jobs) -> None:
    resumed = kill_and_resume(jobs, "lightning_job.yaml", r"resumed from (\S+)/step-(\d{9})\.ckpt\n")
    job_id, done, step = resumed.job_id, resumed.done, resumed.step
    recorded = done["checkpoints"]
    assert all(Path(c["path"]).name == f"step-{c['step']:09d}.ckpt" for c in recorded)
    assert recorded[-1]["bytes"] == Path(recorded[-1]["path"]).stat().st_size
    assert done["checkpoint_step"] == STEPS

    # The second attempt logged the steps after its checkpoint, each once (Lightning logs a step's loss under the
    # number of steps done before it: the first point of a fit from step N is N).
    losses = [p for p in jobs.points(job_id) if p["values"].get("loss") is not None]
    started = done["history"][1]["started_at"]
    assert [p["step"] for p in losses if p["time"] >= started] == list(range(step, STEPS))


class WithHparams(Tiny):
    def __init__(self, lr: float = 0.1, layers: dict[str, Any] | None = None, dtype: torch.dtype = torch.float32):
        super().__init__()
        self.save_hyperparameters()


def test_the_module_s_hyperparameters_reach_run_config(local_run: job.Run) -> None:
    fit(local_run, WithHparams(layers={"n": 2, "act": nn.Tanh}), max_steps=1, every=100, ckpt_path=None, first=[])
    assert local_run.hparams == {
        "lr": 0.1,
        "layers": {"n": 2, "act": "<class 'torch.nn.modules.activation.Tanh'>"},
        "dtype": "torch.float32",
    }
    TreinoLogger(local_run).log_hyperparams(Namespace(batch=32, optim=Namespace(name="sgd")))
    assert local_run.hparams["batch"] == 32 and local_run.hparams["optim"] == {"name": "sgd"}
