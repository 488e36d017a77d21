"""Training frameworks under treino: each module adapts one framework's loop to the job SDK (treino.job).

    treino.integrations.hf          transformers.Trainer: TreinoCallback, last_checkpoint
    treino.integrations.lightning   PyTorch Lightning: TreinoCallback, TreinoCheckpoint, TreinoLogger, last_checkpoint

Each does the same four things for its framework: the framework's metrics go to `run.log`; the checkpoints the
framework writes itself (in the job's checkpoint folder) are registered with the server through
`run.register_checkpoint`; `run.should_stop` (SIGTERM: preemption or cancel) makes the framework save and stop
after the current step; and `last_checkpoint(run)` names what the framework resumes from at the next attempt.

Importing this package imports no framework: each module imports its own, and only it (the `hf` and `lightning`
extras install them). See docs/integrations.md.
"""
