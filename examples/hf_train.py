"""A tiny Llama trained by the Hugging Face Trainer under treino (treino.integrations.hf).

    treino submit examples/hf_job.yaml
    python examples/hf_train.py --steps 40           # locally: the Trainer's checkpoints go to ./checkpoints

The model is built from a config in code and the data are synthetic (no hub, no network): sequences that count up
modulo the vocabulary, so the loss falls within a few dozen steps on a CPU. The Trainer writes its own
`checkpoint-N/` folders in the job's checkpoint folder; TreinoCallback sends its logs to the server, registers each
folder, and saves and stops at SIGTERM; the next attempt resumes from the newest complete folder.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

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

from treino import job
from treino.integrations.hf import TreinoCallback, last_checkpoint

VOCAB = 64
SEQ_LEN = 16
SAMPLES = 512
PAUSE_ENV = "EXAMPLE_PAUSE_AT_STEP"  # tests: the first attempt waits after saving this step, to be killed there
PAUSE_MAX_S = 600.0
PAUSE_CHECK_S = 0.2


class CountingUp(torch.utils.data.Dataset[dict[str, torch.Tensor]]):
    """SAMPLES sequences (start, start+1, ...) modulo VOCAB, the same for a given seed."""

    def __init__(self, seed: int = 0) -> None:
        starts = torch.randint(0, VOCAB, (SAMPLES, 1), generator=torch.Generator().manual_seed(seed))
        self.ids = (starts + torch.arange(SEQ_LEN)) % VOCAB  # (SAMPLES, SEQ_LEN)

    def __len__(self) -> int:
        return SAMPLES

    def __getitem__(self, i: int) -> dict[str, torch.Tensor]:
        return {"input_ids": self.ids[i], "labels": self.ids[i]}


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


class Pace(TrainerCallback):
    """Counts the steps this process trained (a resumed attempt trains only the rest), optionally slows them, and
    pauses after a save when a test asks (pause_if_asked; it comes after TreinoCallback, which registered it)."""

    def __init__(self, run: job.Run, sleep_s: float) -> None:
        self.run = run
        self.sleep_s = sleep_s
        self.steps = 0

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any) -> None:
        self.steps += 1
        time.sleep(self.sleep_s)

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any) -> None:
        pause_if_asked(self.run, state.global_step)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--save-every", type=int, default=10)
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to pause after each step (tests)")
    args = parser.parse_args()

    run = job.init()
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=SEQ_LEN,
    )
    training = TrainingArguments(
        output_dir=str(run.checkpoint_dir),  # the Trainer's checkpoint-N folders, in the job's folder
        max_steps=args.steps,
        per_device_train_batch_size=16,
        learning_rate=3e-3,
        logging_steps=1,
        save_steps=args.save_every,
        save_total_limit=run.keep,
        report_to="none",
        use_cpu=True,
        seed=0,
        disable_tqdm=True,
    )
    pace = Pace(run, args.sleep)
    trainer = Trainer(
        model=LlamaForCausalLM(config),
        args=training,
        train_dataset=CountingUp(),
        callbacks=[TreinoCallback(run), pace],
    )
    resume = last_checkpoint(run)
    if resume is not None:
        print(f"resumed from {resume}", flush=True)
    result = trainer.train(resume_from_checkpoint=resume)
    state = trainer.state
    if run.should_stop:
        print(f"stopped step={state.global_step} trained={pace.steps}", flush=True)
    else:
        print(f"done step={state.global_step} trained={pace.steps} loss={result.training_loss:.4f}", flush=True)
    run.finish()


if __name__ == "__main__":
    main()
