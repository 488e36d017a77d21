"""`treino bench`: measure this server's GPUs, links, host, storage and data loader against the datasheet."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from treino.i18n import Msg


def bench(
    quick: Annotated[bool, typer.Option("--quick", help="Small sizes and few repeats (about a minute).")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output (docs/bench-json.md).")] = False,
    save: Annotated[
        Path | None, typer.Option("--save", help="Write a hardware profile for 'treino plan train --profile'.")
    ] = None,
    only: Annotated[
        str, typer.Option("--only", help="Comma-separated stages: gpu, collectives, host, storage, dataloader.")
    ] = "",
    path: Annotated[
        Path | None,
        typer.Option("--path", help="Directory whose filesystem the storage test reads (default: a temp dir)."),
    ] = None,
    feed_samples_per_s: Annotated[
        float, typer.Option("--feed-samples-per-s", help="Samples/s the GPUs consume; judges the data loader.")
    ] = 0.0,
    train_step: Annotated[
        bool,
        typer.Option(
            "--train-step", help="Time real training steps of --model and store their MFU in the --save profile."
        ),
    ] = False,
    model: Annotated[
        str, typer.Option("--model", "-m", help="With --train-step: preset name or config.json path.")
    ] = "",
    micro_batch: Annotated[int, typer.Option("--micro-batch", "-b", help="With --train-step: sequences per step.")] = 1,
    seq_len: Annotated[int, typer.Option("--seq-len", "-s", help="With --train-step: tokens per sequence.")] = 512,
    precision: Annotated[
        str, typer.Option(help="With --train-step: fp32, bf16-mixed, fp16-mixed, bf16-true.")
    ] = "bf16-mixed",
    steps_timed: Annotated[int, typer.Option("--steps", help="With --train-step: timed steps (the median).")] = 5,
    warmup_steps: Annotated[int, typer.Option("--warmup-steps", help="With --train-step: untimed steps first.")] = 2,
    cpu_time: Annotated[
        bool,
        typer.Option(
            "--cpu-time",
            help="With --train-step on a CPU: one thread, timed by CPU time (a shared host's load does not count).",
        ),
    ] = False,
) -> None:
    """Measure this server against what it promises: GPU bandwidth and TFLOP/s, collectives (algbw/busbw as
    nccl-tests), host memory, storage read and data-loader rate, with verdicts on sizing criteria (docs/catalog.md).
    With --train-step, time real training steps of a model instead and calibrate the planner's MFU."""
    from rich.console import Console

    from treino.i18n import current, tr

    if train_step:
        from treino.cli.train_step import bench_train_step

        bench_train_step(
            model,
            micro_batch=micro_batch,
            seq_len=seq_len,
            precision=precision,
            steps_timed=steps_timed,
            warmup_steps=warmup_steps,
            cpu_time=cpu_time,
            save=save,
            as_json=as_json,
        )
        return
    if model:
        from treino.errors import UsageError

        raise UsageError(Msg("--model is for --train-step. To fix: add --train-step, or drop --model."))

    from treino.bench.runner import parse_only, run_bench
    from treino.cli.progress import steps

    stages = parse_only(only)
    err = Console(stderr=True)
    with steps("bench", total=len(stages), enabled=not as_json, console=err) as on_stage:
        run = run_bench(stages, quick=quick, path=path, feed_samples_per_s=feed_samples_per_s, on_stage=on_stage)
    if save is not None:
        from treino import catalog
        from treino.bench.profile import build_profile, catalog_match, save_profile

        name = catalog_match(run.result["gpus"][0]["name"], catalog.gpus()) if run.result["gpus"] else None
        save_profile(build_profile(run.result, name), save)
    if as_json:
        for note in run.notes:
            err.print(current().msg(note), highlight=False, soft_wrap=True)
        typer.echo(json.dumps(run.result, indent=2))
        return
    from treino.bench.report import table, verdict_lines

    out = Console()
    for note in run.notes:
        out.print(current().msg(note), highlight=False, soft_wrap=True)
    out.print(table(run.result))
    for line in verdict_lines(run.result):
        out.print(line, highlight=False)
    if save is not None:
        out.print(
            tr("Profile: {path} (use it with 'treino plan train --profile {path}').", path=str(save)), highlight=False
        )
