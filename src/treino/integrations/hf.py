"""The Hugging Face `transformers.Trainer` under treino: its metrics, checkpoints, stop and resume through the SDK.

    from transformers import Trainer, TrainingArguments
    from treino import job
    from treino.integrations.hf import TreinoCallback, last_checkpoint

    run = job.init()
    args = TrainingArguments(
        output_dir=str(run.checkpoint_dir),     # the Trainer's checkpoint-N/ folders go in the job's folder
        save_steps=100, save_total_limit=run.keep, report_to="none",
    )
    trainer = Trainer(model=model, args=args, train_dataset=data, callbacks=[TreinoCallback(run)])
    trainer.train(resume_from_checkpoint=last_checkpoint(run))   # None at the first start
    run.finish()

What TreinoCallback does, on every process (the SDK sends from rank 0 only):
- on_log: every number in the Trainer's logs (loss, learning_rate, grad_norm, epoch, eval_*, train_runtime, ...)
  goes to `run.log(step=global_step, ...)`; strings and other values are left out;
- on_save: the folder the Trainer has just written, `{output_dir}/checkpoint-{global_step}`, is registered with
  the server as step `global_step` (`run.register_checkpoint`, which also marks it for the server's disk scan);
  the Trainer keeps deleting old ones itself (`save_total_limit`), as the server keeps their records;
- on_step_end: once `run.should_stop` (SIGTERM: preemption or cancel; under DDP all ranks agree), it sets
  `control.should_save` and `control.should_training_stop`: the Trainer saves checkpoint-N after this step and
  `train()` returns; the script then ends normally;
- on_train_begin: refuses an output_dir outside `run.checkpoint_dir` (the server records only that folder), and
  registers the complete checkpoint folders there that no report marked yet (a process killed between the
  Trainer's save and on_save), so that no checkpoint the next attempt resumes from escapes the lineage.

`last_checkpoint` is what `trainer.train(resume_from_checkpoint=...)` takes: the newest complete `checkpoint-N`
folder, or None. Complete means its `trainer_state.json` parses: Trainer._save_checkpoint writes it after the
model, optimizer, scheduler and RNG states, so a folder cut by SIGKILL mid-save lacks it (transformers' own
`get_last_checkpoint` would return such a folder, and `resume_from_checkpoint=True` fails when there is none).
"""

from __future__ import annotations

import json
import logging
import os
import re
from pathlib import Path
from typing import Any

from transformers import TrainerCallback, TrainerControl, TrainerState, TrainingArguments
from transformers.trainer_utils import PREFIX_CHECKPOINT_DIR

from treino.errors import JobError
from treino.job import FOLDER_MARKER_NAME, Run

log = logging.getLogger("treino.integrations")

TRAINER_STATE_NAME = "trainer_state.json"  # transformers.trainer.TRAINER_STATE_NAME, written last in a checkpoint
_CHECKPOINT_DIR_RE = re.compile(rf"^{PREFIX_CHECKPOINT_DIR}-(\d+)$")


def _complete_checkpoints(folder: Path) -> list[tuple[int, Path]]:
    """(step, path) of the complete `checkpoint-N` folders in `folder`, oldest first."""
    if not folder.is_dir():
        return []
    found = []
    for entry in folder.iterdir():
        if (m := _CHECKPOINT_DIR_RE.match(entry.name)) and entry.is_dir():
            try:
                json.loads((entry / TRAINER_STATE_NAME).read_bytes())
            except (OSError, ValueError):  # missing (cut mid-save) or torn
                log.warning("treino: %s is incomplete (no readable %s); not resumed from.", entry, TRAINER_STATE_NAME)
                continue
            found.append((int(m.group(1)), entry))
    return sorted(found)


def last_checkpoint(where: Run | str | os.PathLike[str]) -> str | None:
    """The newest complete Trainer checkpoint folder in `where` (a run: its checkpoint folder), for
    `trainer.train(resume_from_checkpoint=...)`; None when there is none (the first start)."""
    folder = where.checkpoint_dir if isinstance(where, Run) else Path(where)
    found = _complete_checkpoints(folder)
    return str(found[-1][1]) if found else None


class TreinoCallback(TrainerCallback):
    """Connects a `transformers.Trainer` to a treino run: pass it in `Trainer(callbacks=[TreinoCallback(run)])`.
    See the module docstring for what each event does."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._stopping = False

    def on_train_begin(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any) -> None:
        output_dir = Path(args.output_dir or ".").absolute()
        if not output_dir.resolve().is_relative_to(self.run.checkpoint_dir.resolve()):
            raise JobError(
                f"TrainingArguments(output_dir={args.output_dir!r}) is outside the job's checkpoint folder "
                f"{self.run.checkpoint_dir}: the server would record none of the Trainer's checkpoints. To fix: "
                "pass output_dir=str(run.checkpoint_dir)."
            )
        for step, folder in _complete_checkpoints(output_dir):
            if not (folder / FOLDER_MARKER_NAME).exists():
                self.run.register_checkpoint(folder, step)

    def on_log(
        self,
        args: TrainingArguments,
        state: TrainerState,
        control: TrainerControl,
        logs: dict[str, Any] | None = None,
        **_: Any,
    ) -> None:
        numbers = {k: v for k, v in (logs or {}).items() if isinstance(v, int | float) and not isinstance(v, bool)}
        if numbers:
            self.run.log(step=state.global_step, **numbers)

    def on_save(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any) -> None:
        folder = Path(args.output_dir or ".") / f"{PREFIX_CHECKPOINT_DIR}-{state.global_step}"
        self.run.register_checkpoint(folder, state.global_step)

    def on_step_end(self, args: TrainingArguments, state: TrainerState, control: TrainerControl, **_: Any) -> None:
        if self._stopping or not self.run.should_stop:
            return
        self._stopping = True
        log.warning("treino: asked to stop (SIGTERM); saving checkpoint-%d and stopping.", state.global_step)
        control.should_save = True
        control.should_training_stop = True
