"""A tiny LightningModule trained by PyTorch Lightning under treino (treino.integrations.lightning).

    treino submit examples/lightning_job.yaml
    python examples/lightning_train.py --steps 40     # locally: checkpoints in ./checkpoints

A two-layer regressor on synthetic data (y = sin of a random projection, fixed seed; no network). Lightning's
metrics go to the server through TreinoLogger; TreinoCheckpoint writes `step-N.ckpt` every --save-every steps,
TreinoCallback registers each with the server and saves and stops at SIGTERM; the next attempt resumes from the
newest complete one.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import lightning as L
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

from treino import job
from treino.integrations.lightning import TreinoCallback, TreinoCheckpoint, TreinoLogger, last_checkpoint

FEATURES = 8
SAMPLES = 512
PAUSE_ENV = "EXAMPLE_PAUSE_AT_STEP"  # tests: the first attempt waits after saving this step, to be killed there
PAUSE_MAX_S = 600.0
PAUSE_CHECK_S = 0.2


def pause_if_asked(run: job.Run, step: int) -> None:
    """With EXAMPLE_PAUSE_AT_STEP=N in the job's environment (a test sets it in the spec), the first attempt waits
    here once it has saved step N, until it is killed or stopped (at most PAUSE_MAX_S): a kill lands at a known step
    however loaded the machine is. Without it, nothing."""
    if run.attempt != 1 or os.environ.get(PAUSE_ENV) != str(step):
        return
    for _ in range(int(PAUSE_MAX_S / PAUSE_CHECK_S)):
        if run.should_stop:
            return
        time.sleep(PAUSE_CHECK_S)


class PauseIfAsked(L.Callback):
    """pause_if_asked before each batch: the checkpoint of the step before it is saved and registered by then."""

    def __init__(self, run: job.Run) -> None:
        self.run = run

    def on_train_batch_start(self, trainer: L.Trainer, *_: Any) -> None:
        pause_if_asked(self.run, trainer.global_step)


class Regressor(L.LightningModule):
    def __init__(self, sleep_s: float = 0.0) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(FEATURES, 32), nn.Tanh(), nn.Linear(32, 1))
        self.sleep_s = sleep_s
        self.trained = 0  # steps this process trained (a resumed attempt trains only the rest)

    def training_step(self, batch: tuple[torch.Tensor, torch.Tensor], batch_idx: int) -> torch.Tensor:
        x, y = batch
        loss = nn.functional.mse_loss(self.net(x), y)
        self.log("loss", loss)
        self.trained += 1
        time.sleep(self.sleep_s)
        return loss

    def configure_optimizers(self) -> Any:
        return torch.optim.AdamW(self.parameters(), lr=1e-2)


def synthetic() -> TensorDataset:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(SAMPLES, FEATURES, generator=g)
    y = torch.sin(x @ torch.randn(FEATURES, 1, generator=g))  # (SAMPLES, 1)
    return TensorDataset(x, y)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to pause after each step (tests)")
    args = parser.parse_args()

    run = job.init()
    L.seed_everything(0, verbose=False)
    model = Regressor(args.sleep)
    trainer = L.Trainer(
        max_steps=args.steps,
        accelerator="cpu",
        devices=1,
        logger=TreinoLogger(run),
        callbacks=[
            TreinoCallback(run),
            TreinoCheckpoint(run, every_n_train_steps=args.save_every),
            PauseIfAsked(run),
        ],
        log_every_n_steps=1,
        enable_progress_bar=False,
        enable_model_summary=False,
        default_root_dir=run.checkpoint_dir,
    )
    resume = last_checkpoint(run)
    if resume is not None:
        print(f"resumed from {resume}", flush=True)
    loader = DataLoader(synthetic(), batch_size=32, shuffle=True, generator=torch.Generator().manual_seed(0))
    trainer.fit(model, loader, ckpt_path=resume)  # at SIGTERM Lightning ends this with SystemExit after our save
    loss = float(trainer.callback_metrics["loss"])
    print(f"done step={trainer.global_step} trained={model.trained} loss={loss:.4f}", flush=True)
    run.finish()


if __name__ == "__main__":
    main()
