"""`treino bench --train-step --model M`: time real training steps, report the MFU, calibrate the profile."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from treino.i18n import Msg, tr
from treino.plan.calibration import CLOSE_PARAMS_RATIO


def step_time(seconds: float) -> str:
    return tr("{n:,.1f} ms", n=seconds * 1e3) if seconds < 1 else tr("{n:,.2f} s", n=seconds)


def bench_train_step(
    model: str,
    *,
    micro_batch: int,
    seq_len: int,
    precision: str,
    steps_timed: int,
    warmup_steps: int,
    cpu_time: bool,
    save: Path | None,
    as_json: bool,
) -> None:
    from rich.console import Console

    from treino.bench.profile import load_profile, save_profile
    from treino.bench.train_step import add_to_profile, measure_train_step
    from treino.cli.progress import steps
    from treino.errors import UsageError

    if not model:
        raise UsageError(Msg("--train-step needs a model. To fix: add --model NAME (a preset or a config.json path)."))
    profile = load_profile(save) if save is not None and save.exists() else None
    err = Console(stderr=True)
    with steps("train step", total=2 + warmup_steps + steps_timed, enabled=not as_json, console=err) as on_step:
        run = measure_train_step(
            model,
            micro_batch=micro_batch,
            seq_len=seq_len,
            precision=precision,
            steps=steps_timed,
            warmup_steps=warmup_steps,
            cpu_time=cpu_time,
            profile=profile,
            on_step=on_step,
        )
    if save is not None:
        save_profile(add_to_profile(profile, run), save)
    if as_json:
        typer.echo(json.dumps(run.to_json(), indent=2))
        return
    p = run.point
    out = Console()
    lines = [
        tr(
            "Train step: {model} on {device}, micro-batch {micro_batch} x {seq_len} tokens, {precision}: {time} "
            "(median of {steps} steps; {warmup} warm-up step(s) excluded; {clock} time).",
            model=p.model,
            device=p.device_name or p.device,
            micro_batch=p.micro_batch,
            seq_len=p.seq_len,
            precision=p.precision,
            time=step_time(p.step_seconds),
            steps=p.steps,
            warmup=p.warmup_steps,
            clock=tr("CPU") if p.clock == "cpu" else tr("wall"),
        ),
        tr(
            "MFU {mfu} %: {flops} TFLOP per step (the planner's count) over a peak of {peak} TFLOP/s ({source}).",
            mfu=tr("{n:.1f}", n=100 * p.mfu),
            flops=tr("{n:,.3f}", n=p.flops_per_step / 1e12),
            peak=tr("{n:,.3f}", n=p.peak_tflops),
            source=tr("measured") if p.peak_source == "measured" else tr("datasheet"),
        ),
        tr(
            "The planner's prior predicted {predicted} (MFU {mfu} %, {source}): {error} % off the measured step.",
            predicted=step_time(run.prior_step_seconds),
            mfu=tr("{n:.1f}", n=100 * run.prior_mfu),
            source=tr(run.prior_source),
            error=tr("{n:+.0f}", n=100 * (run.prior_step_seconds / p.step_seconds - 1)),
        ),
    ]
    if save is not None:
        lines.append(
            tr(
                "Profile: {path}. Plans on {device} with --profile {path} now use this MFU for {family} models "
                "of {low} to {high} parameters.",
                path=str(save),
                device=p.device,
                family=p.family,
                low=_params(p.params / CLOSE_PARAMS_RATIO),
                high=_params(p.params * CLOSE_PARAMS_RATIO),
            )
        )
    for line in lines:
        out.print(line, highlight=False, soft_wrap=True)


def _params(n: float) -> str:
    if n >= 1e9:
        return tr("{n:,.2f} B", n=n / 1e9)
    if n >= 1e6:
        return tr("{n:,.1f} M", n=n / 1e6)
    return tr("{n:,.1f} k", n=n / 1e3)
