"""treino.integrations.hf with a real transformers.Trainer: in process (SIGTERM saves and stops, the next run
resumes), and examples/hf_train.py as a job of a real server, SIGKILLed mid-run and resumed by its next attempt."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest
import torch
from transformers import (
    LlamaConfig,
    LlamaForCausalLM,
    Trainer,
    TrainerCallback,
    TrainerControl,
    TrainerState,
    TrainingArguments,
)

from tests.integrations.conftest import STEPS, Jobs, kill_and_resume
from treino import job
from treino.errors import JobError
from treino.integrations.hf import TreinoCallback, last_checkpoint


class Sequences(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    def __init__(self) -> None:
        self.ids = torch.arange(64 * 8).reshape(64, 8) % 32  # (64, 8)

    def __len__(self) -> int:
        return len(self.ids)

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


class SigtermAt(TrainerCallback):
    """Sends this process SIGTERM at the end of step `step` (before TreinoCallback looks), and counts steps."""

    def __init__(self, step: int | None) -> None:
        self.step = step
        self.trained = 0

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any) -> None:
        self.trained += 1
        if state.global_step == self.step:
            os.kill(os.getpid(), signal.SIGTERM)


def tiny_trainer(run: job.Run, max_steps: int, callbacks: list[TrainerCallback], output_dir: Path) -> Trainer:
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=32, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2
    )
    args = TrainingArguments(
        output_dir=str(output_dir),
        max_steps=max_steps,
        per_device_train_batch_size=4,
        logging_steps=1,
        save_steps=100,  # no periodic save in these runs: only the stop's
        report_to="none",
        use_cpu=True,
        disable_tqdm=True,
    )
    return Trainer(
        model=LlamaForCausalLM(config),
        args=args,
        train_dataset=Sequences(),
        callbacks=[*callbacks, TreinoCallback(run)],
    )


def test_sigterm_saves_the_trainer_s_checkpoint_stops_and_the_next_run_resumes(local_run: job.Run) -> None:
    assert last_checkpoint(local_run) is None
    first = SigtermAt(step=3)
    trainer = tiny_trainer(local_run, max_steps=8, callbacks=[first], output_dir=local_run.checkpoint_dir)
    trainer.train(resume_from_checkpoint=last_checkpoint(local_run))
    assert local_run.should_stop and trainer.state.global_step == 3 and first.trained == 3
    saved = local_run.checkpoint_dir / "checkpoint-3"
    assert last_checkpoint(local_run) == str(saved)
    assert json.loads((saved / job.FOLDER_MARKER_NAME).read_text()) == {"step": 3}  # registered
    logged = [p for p in local_run.metrics if "loss" in p.values]
    assert [p.step for p in logged] == [1, 2, 3]
    assert all(set(p.values) >= {"loss", "learning_rate", "epoch"} for p in logged)

    # A folder cut mid-save (no trainer_state.json) is never resumed from.
    (local_run.checkpoint_dir / "checkpoint-5").mkdir()
    (local_run.checkpoint_dir / "checkpoint-5" / "model.safetensors").write_bytes(b"cut")
    assert last_checkpoint(local_run) == str(saved)

    # As if killed between the Trainer's save and the report: the next run registers it when training begins.
    (saved / job.FOLDER_MARKER_NAME).unlink()

    local_run.finish()  # the next "attempt": a fresh run, no SIGTERM
    run = job.init(checkpoint_dir=local_run.checkpoint_dir)
    try:
        second = SigtermAt(step=None)
        trainer = tiny_trainer(run, max_steps=8, callbacks=[second], output_dir=run.checkpoint_dir)
        trainer.train(resume_from_checkpoint=last_checkpoint(run))
        assert trainer.state.global_step == 8 and second.trained == 5  # continued from step 3, not from 0
        assert [p.step for p in run.metrics if "loss" in p.values] == [4, 5, 6, 7, 8]
        assert json.loads((saved / job.FOLDER_MARKER_NAME).read_text()) == {"step": 3}
        assert not (local_run.checkpoint_dir / "checkpoint-5" / job.FOLDER_MARKER_NAME).exists()  # incomplete
    finally:
        run.finish()


def test_an_output_dir_outside_the_checkpoint_folder_is_refused(local_run: job.Run, tmp_path: Path) -> None:
    trainer = tiny_trainer(local_run, max_steps=1, callbacks=[], output_dir=tmp_path / "elsewhere")
    with pytest.raises(JobError, match=r"outside the job's checkpoint folder.*To fix: pass output_dir"):
        trainer.train()


def test_a_sigkilled_trainer_job_resumes_from_its_last_registered_checkpoint(jobs: Jobs) -> None:
    resumed = kill_and_resume(jobs, "hf_job.yaml", r"resumed from (\S+)/checkpoint-(\d+)\n")
    job_id, done, step = resumed.job_id, resumed.done, resumed.step
    # Every checkpoint the Trainer wrote, in either attempt, is recorded once (kill_and_resume), with its folder's
    # bytes.
    recorded = done["checkpoints"]
    assert all(Path(c["path"]).name == f"checkpoint-{c['step']}" for c in recorded)
    assert Path(recorded[0]["path"]).parent == Path(resumed.where.group(1))
    newest = Path(recorded[-1]["path"])
    assert recorded[-1]["bytes"] == sum(f.stat().st_size for f in newest.rglob("*") if f.is_file())
    assert done["checkpoint_step"] == STEPS

    # The Trainer's loss reached the server: the second attempt logged the steps after its checkpoint, each once.
    losses = [p for p in jobs.points(job_id) if p["values"].get("loss") is not None]
    started = done["history"][1]["started_at"]
    assert [p["step"] for p in losses if p["time"] >= started] == list(range(step + 1, STEPS + 1))
    # The first logged every step up to its checkpoint before reporting it (on_log comes before on_save).
    assert set(range(1, step + 1)) <= {p["step"] for p in losses if p["time"] < started}
