"""`treino` commands. Each parses its options, calls one library function and renders the result."""

from __future__ import annotations

import json
import sys
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict, cast

import typer

from treino import catalog
from treino.cli import usage
from treino.cli.bench import bench
from treino.cli.catalog_cmds import FxRateOpt, fx_json, fx_line, fx_rate, offers_cmd, sites_cmd
from treino.cli.client import cancel, jobs, logs, show, submit
from treino.cli.completion import completion
from treino.cli.govern import (
    audit_app,
    data_app,
    erase,
    grant,
    grants_app,
    lineage_app,
    subject_app,
    tokens_app,
    transfer_app,
    users_app,
)
from treino.cli.metrics import metrics
from treino.cli.resubmit import resubmit
from treino.cli.server import server
from treino.errors import EXIT_NO_FIT, TreinoError, UsageError
from treino.i18n import N_, Msg, current, from_env, language, tr, use

if TYPE_CHECKING:
    from treino.plan import TrainPlan

EXIT_CODES_HELP = (
    "Exit codes, the same with --json: 0 done; 1 a runtime failure (the server, a file, a failed job); "
    "2 a usage error (a bad option or value); 3 the answer is no (the plan does not fit, no offer qualifies). "
    "Settings: ~/.config/treino/config.yaml (url:, token:); see the README."
)

app = typer.Typer(
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish and PowerShell
    epilog=EXIT_CODES_HELP,
    pretty_exceptions_enable=False,
    help="Plan, benchmark, run and govern ML training on dedicated GPU servers.",
)
plan_app = typer.Typer(no_args_is_help=True, help="Will it fit, and with which settings?")
app.add_typer(plan_app, name="plan")

app.command("bench")(bench)
app.command("completion")(completion)
app.command("offers")(offers_cmd)
app.command("sites")(sites_cmd)
app.command("server")(server)
app.command("submit")(submit)
app.command("jobs")(jobs)
app.command("show")(show)
app.command("logs")(logs)
app.command("cancel")(cancel)
app.command("metrics")(metrics)
app.command("resubmit")(resubmit)
app.add_typer(users_app, name="users")
app.add_typer(tokens_app, name="tokens")
app.command("grant")(grant)
app.add_typer(grants_app, name="grants")
app.add_typer(transfer_app, name="transfer")
app.add_typer(data_app, name="data")
app.add_typer(audit_app, name="audit")
app.add_typer(lineage_app, name="lineage")
app.command("erase")(erase)
app.add_typer(subject_app, name="subject")
usage.register(app)  # treino usage, treino quotas

_state = {"debug": False}


def _show_version(show: bool) -> None:
    if show:
        from importlib.metadata import version

        typer.echo(f"treino {version('treino')}")
        raise typer.Exit(0)


def _set_lang(code: str) -> str:
    """--lang, read before any command runs (eager), so that help and errors are in that language too."""
    try:
        use(language(code) if code else from_env())
    except ValueError as exc:
        raise typer.BadParameter(current().error(exc)) from exc
    return code


@app.callback()
def _root(
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks.")] = False,
    _lang: Annotated[
        str,
        typer.Option(
            "--lang",
            callback=_set_lang,
            is_eager=True,
            help="Language of the output: en or pt-BR (default: from LC_ALL, LC_MESSAGES or LANG).",
        ),
    ] = "",
    _version: Annotated[
        bool,
        typer.Option("--version", "-V", callback=_show_version, is_eager=True, help="Show treino's version and exit."),
    ] = False,
) -> None:
    _state["debug"] = debug


def _print_json(data: object) -> None:
    typer.echo(json.dumps(data, indent=2, ensure_ascii=False))


@plan_app.command("train")
def plan_train(
    model: Annotated[
        str, typer.Option("--model", "-m", help="Preset name, config.json path, or module:function (trace).")
    ],
    gpu: Annotated[
        str, typer.Option("--gpu", "-g", help="GPU name from 'treino gpus', or cpu to plan for the CPU host.")
    ],
    gpus: Annotated[int, typer.Option("--gpus", help="GPUs in the job.")] = 1,
    micro_batch: Annotated[int, typer.Option("--micro-batch", "-b", help="Sequences per GPU per step.")] = 1,
    seq_len: Annotated[int, typer.Option("--seq-len", "-s", help="Tokens per sequence.")] = 2048,
    grad_accum: Annotated[int, typer.Option("--grad-accum", help="Micro-batches per optimizer step.")] = 1,
    precision: Annotated[
        str,
        typer.Option(
            help="fp32, bf16-mixed, fp16-mixed, bf16-master, bf16-true, fp8 (torchao float8), bf16-fsdp (FSDP2's "
            "MixedPrecisionPolicy: bf16 gathers and compute, fp32 gradient reduce; with --zero 2 or 3)."
        ),
    ] = "bf16-mixed",
    optimizer: Annotated[str, typer.Option(help="adamw, adamw-8bit, sgd, sgd-momentum, adafactor, lion.")] = "adamw",
    attention: Annotated[str, typer.Option(help="sdpa (flash-style) or eager.")] = "sdpa",
    checkpointing: Annotated[str, typer.Option(help="Activation checkpointing: none, selective, full.")] = "none",
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage 0-3 (FSDP full shard = 3).")] = 0,
    tp: Annotated[int, typer.Option("--tp", help="Tensor-parallel size.")] = 1,
    pp: Annotated[int, typer.Option("--pp", help="Pipeline stages (1F1B).")] = 1,
    pp_interleave: Annotated[int, typer.Option("--pp-interleave", help="Virtual stages per GPU.")] = 1,
    offload: Annotated[str, typer.Option(help="none, optimizer, optimizer+params.")] = "none",
    lora_rank: Annotated[int, typer.Option("--lora-rank", help="LoRA rank; 0 = full fine-tune.")] = 0,
    lora_targets: Annotated[
        str,
        typer.Option(
            "--lora-targets",
            help="Comma-separated module names (default: the attention projections, q_proj,k_proj,v_proj,o_proj; "
            "DeepSeek-V3: q_a_proj,q_b_proj,kv_a_proj_with_mqa,kv_b_proj,o_proj).",
        ),
    ] = "",
    quant: Annotated[str, typer.Option(help="Base weights for LoRA: none or nf4 (QLoRA).")] = "none",
    kernels: Annotated[str, typer.Option(help="hf (Hugging Face modules) or megatron (fused kernels).")] = "hf",
    sequence_parallel: Annotated[
        bool, typer.Option("--sequence-parallel", help="Megatron sequence parallelism over the TP group.")
    ] = False,
    method: Annotated[
        str, typer.Option(help="analytic (formulas) or trace (real model on fake tensors).")
    ] = "analytic",
    loop: Annotated[
        str,
        typer.Option(
            "--loop",
            help="The training loop: plain (its `outputs` hold the logits through backward) or trainer (Hugging "
            "Face's Trainer, which keeps only the loss).",
        ),
    ] = "plain",
    tokens: Annotated[float, typer.Option("--tokens", help="Tokens in the dataset (e.g. 2e9), for the run time.")] = 0,
    epochs: Annotated[int, typer.Option("--epochs", help="Passes over --tokens.")] = 1,
    interconnect: Annotated[str, typer.Option(help="nvlink or pcie (default: nvlink where the GPU has it).")] = "",
    fabric: Annotated[
        str,
        typer.Option(
            "--fabric",
            help="Network between servers beyond 8 GPUs: 8x400g-ib, 32x100g-efa, 2x100g-eth, none (default: "
            "8x400g-ib for NVLink, 2x100g-eth for PCIe).",
        ),
    ] = "",
    gpus_per_server: Annotated[
        int, typer.Option("--gpus-per-server", help="GPUs in each server, sharing its fabric ports.", min=1)
    ] = 8,
    nvlink_domain: Annotated[
        int | None, typer.Option("--nvlink-domain", help="GPUs one NVLink domain joins (72 for an NVL72 rack).", min=1)
    ] = None,
    mfu: Annotated[float | None, typer.Option("--mfu", help="Model FLOPs utilisation; default: a cited prior.")] = None,
    data: Annotated[
        str, typer.Option(help="tokens (pre-tokenised), text, or images (--seq-len = patches).")
    ] = "tokens",
    storage: Annotated[str, typer.Option(help="nvme-gen5, nvme-gen4, sata-ssd, hdd, nfs-10gbe.")] = "nvme-gen4",
    cpu_cores: Annotated[int, typer.Option("--cpu-cores", help="Server CPU cores (default: 8 per GPU).")] = 0,
    ram_gb: Annotated[float, typer.Option("--ram-gb", help="Server RAM, GB (default: 128 per GPU).")] = 0,
    dataset_gb: Annotated[float, typer.Option("--dataset-gb", help="Dataset size on disk, GB.")] = 0,
    offer: Annotated[str, typer.Option("--offer", help="Price the run on this offer (see 'treino offers').")] = "",
    runs_per_month: Annotated[float, typer.Option("--runs-per-month")] = 1,
    months: Annotated[int, typer.Option("--months")] = 1,
    fx_given: FxRateOpt = None,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Hardware profile from 'treino bench --save': measured figures.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Training memory per GPU, the fit verdict, what to change when it does not fit, the run time, whether
    storage and CPUs keep the GPUs fed, and (with --offer) what it costs."""
    from treino.bench.train_step import PlanDevice, plan_device
    from treino.plan import TrainSetup, plan_training
    from treino.plan.kernels import CPU_DEVICE_NAME, device_for_gpu
    from treino.plan.memory import DEFAULT_CUDA_CONTEXT_BYTES

    on_cpu = gpu.strip().lower() == CPU_DEVICE_NAME
    if on_cpu and offer:
        raise UsageError(
            Msg("--gpu cpu plans the CPU host itself, which no offer rents. To fix: drop --offer, or name a GPU.")
        )
    if on_cpu and (gpus > 1 or fabric or precision == "fp8"):
        raise UsageError(
            Msg(
                "--gpu cpu plans one CPU host: no --gpus beyond 1, no --fabric, no fp8 (CPUs have no FP8 matmuls). "
                "To fix: drop those options, or name a GPU."
            )
        )
    if on_cpu and profile is None:  # memory only: RAM to fill, no throughput to time a step by
        from treino.plan.hardware import cpu_host

        device = PlanDevice(cpu_host(int(ram_gb * 1e9) if ram_gb else _host_ram_bytes()), None, ())
    else:  # the catalog GPU, its measured figures and training steps; or the CPU a profile measured
        device = plan_device(gpu, profile)
    gpu_spec, measured = device.spec, device.measured
    target = device_for_gpu(gpu_spec.name)
    setup = TrainSetup(
        micro_batch=micro_batch,
        seq_len=seq_len,
        grad_accum=grad_accum,
        precision=precision,
        optimizer=optimizer,
        attention=attention,
        checkpointing=checkpointing,
        gpus=gpus,
        zero=zero,
        tp=tp,
        pp=pp,
        pp_interleave=pp_interleave,
        offload=offload,
        lora_rank=lora_rank,
        lora_targets=tuple(t.strip() for t in lora_targets.split(",") if t.strip()),
        quant=quant,
        kernels=kernels,
        sequence_parallel=sequence_parallel,
        device=target.kind,
        sm=target.sm,
        cuda_context_bytes=0 if on_cpu else DEFAULT_CUDA_CONTEXT_BYTES,  # no CUDA context on a CPU host
        loop=loop,
    )
    if method == "trace":
        from treino.cli.progress import steps
        from treino.trace.plan import TRACE_STEPS, plan_by_trace

        with steps("trace", TRACE_STEPS, enabled=not as_json) as on_step:
            result = plan_by_trace(model, gpu_spec, setup, on_step)
    elif method == "analytic":
        result = plan_training(catalog.model(model), gpu_spec, setup)
    else:
        raise UsageError(Msg("Unknown --method {method!r}. To fix: use analytic or trace.", method=method))
    if on_cpu and profile is None:  # memory only: the catalog has no throughput for a CPU host
        _print_cpu_plan(result, as_json)
        return
    from treino.plan.performance import estimate_time

    if epochs < 1:
        raise UsageError(Msg("--epochs must be at least 1, got {epochs}.", epochs=epochs))
    link = interconnect or gpu_spec.interconnect
    from treino.plan.fabric import parse_fabric

    network = parse_fabric(fabric) if fabric else None
    timing = estimate_time(
        result.model,
        gpu_spec,
        setup,
        tokens=tokens * epochs,
        interconnect=link,
        mfu=mfu,
        gpus_per_server=gpus_per_server,
        fabric=network,
        nvlink_domain=nvlink_domain,
        calibration=device.calibration,
    )
    from treino.plan.pipeline import estimate_pipeline

    # The seed article's rule for a server: at least 8 CPU cores and 128 GB of RAM per high-end GPU.
    feed = estimate_pipeline(
        tokens_per_s=timing.tokens_per_second,
        gpus=setup.gpus,
        data=data,
        storage=storage,
        cpu_cores=cpu_cores or 8 * setup.gpus,
        ram_gb=ram_gb or 128 * setup.gpus,
        dataset_gb=dataset_gb,
        seq_len=setup.seq_len,
        storage_read_gb_s=measured.storage_read_gb_s if measured else None,  # the profile's disk beats --storage
    )
    cost = _job_cost(
        offer, gpu_spec.name, setup.gpus, timing.total_seconds, runs_per_month, months, dataset_gb, fx_given
    )
    if as_json:
        _print_json(
            {
                **result.to_json(),
                "time": {"interconnect": link, **asdict(timing)},
                "pipeline": {**asdict(feed), "advice": list(feed.advice)},
                "cost": cost,
                **({"profile": measured.to_json()} if measured else {}),
            }
        )
        if not result.fits:
            raise typer.Exit(EXIT_NO_FIT)
        return
    from treino.cli.render import console, pipeline_line, time_line, train_plan

    if measured:
        console().print(measured.line(), highlight=False)
    console().print(train_plan(result))
    console().print(time_line(timing, link))
    console().print(pipeline_line(feed))
    if cost:
        from treino.plan.cost import format_brl

        console().print(
            tr(
                "Cost on {offer}: {total} for {months} month(s) ({per_month} a month; prices as of {as_of}).",
                offer=offer,
                total=format_brl(cost["total_brl"]),
                months=months,
                per_month=format_brl(cost["per_month_brl"]),
                as_of=cost["price_as_of"],
            )
        )
        if cost["fx_brl_per_usd"] is not None:
            console().print(fx_line(fx_rate(fx_given)), style="dim", highlight=False)
    if not result.fits:
        raise typer.Exit(EXIT_NO_FIT)


def _host_ram_bytes() -> int:
    """The machine's physical memory (`--gpu cpu` without --ram-gb)."""
    import os

    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


def _print_cpu_plan(result: TrainPlan, as_json: bool) -> None:
    """`plan train --gpu cpu`: the memory plan and its verdict against the host's RAM, no time or cost."""
    if as_json:
        _print_json({**result.to_json(), "time": None, "pipeline": None, "cost": None})
    else:
        from treino.cli.render import console, train_plan

        console().print(train_plan(result))
    if not result.fits:
        raise typer.Exit(EXIT_NO_FIT)


@plan_app.command("scale")
def plan_scale(
    model: Annotated[str, typer.Option("--model", "-m", help="Preset name or config.json path.")],
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="GPU name from 'treino gpus'.")],
    micro_batch: Annotated[int, typer.Option("--micro-batch", "-b")] = 1,
    seq_len: Annotated[int, typer.Option("--seq-len", "-s")] = 4096,
    grad_accum: Annotated[int, typer.Option("--grad-accum")] = 1,
    precision: Annotated[str, typer.Option()] = "bf16-mixed",
    checkpointing: Annotated[str, typer.Option()] = "none",
    zero: Annotated[int, typer.Option("--zero", help="ZeRO stage used from 2 GPUs on.")] = 3,
    max_gpus: Annotated[
        int, typer.Option("--max-gpus", help="Largest count, a power of two (on paper up to 1024).")
    ] = 64,
    mfu: Annotated[float | None, typer.Option("--mfu")] = None,
    fabric: Annotated[
        str,
        typer.Option(
            "--fabric",
            help="Network between servers: NICs x rate-kind (8x400g-ib, 32x100g-efa, 8x400g-roce, 2x100g-eth) "
            "or none (default: 8x400g-ib for NVLink servers, 2x100g-eth for PCIe ones).",
        ),
    ] = "",
    gpus_per_server: Annotated[int, typer.Option("--gpus-per-server", min=1)] = 8,
    nvlink_domain: Annotated[
        int | None, typer.Option("--nvlink-domain", help="GPUs one NVLink domain joins (72 for an NVL72 rack).", min=1)
    ] = None,
    profile: Annotated[
        Path | None, typer.Option("--profile", help="Hardware profile from 'treino bench --save': measured figures.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Step time and efficiency for 1, 2, 4 ... GPUs, NVLink against PCIe inside a server, the fabric between
    servers (weak scaling)."""
    from treino.plan import TrainSetup
    from treino.plan.fabric import parse_fabric
    from treino.plan.performance import scale

    if not 1 <= max_gpus <= 1024:
        raise UsageError(Msg("--max-gpus must be between 1 and 1024, got {max_gpus}.", max_gpus=max_gpus))
    counts = [2**i for i in range(max_gpus.bit_length()) if 2**i <= max_gpus]
    setup = TrainSetup(
        micro_batch=micro_batch,
        seq_len=seq_len,
        grad_accum=grad_accum,
        precision=precision,
        checkpointing=checkpointing,
        zero=zero,
    )
    from treino.bench.train_step import plan_device
    from treino.plan.performance import estimate_time

    device = plan_device(gpu, profile)
    spec, gpu_spec = catalog.model(model), device.spec
    network = parse_fabric(fabric) if fabric else None
    points = scale(
        spec,
        gpu_spec,
        setup,
        counts,
        mfu=mfu,
        fabric=network,
        gpus_per_server=gpus_per_server,
        nvlink_domain=nvlink_domain,
        calibration=device.calibration,
    )
    link = gpu_spec.interconnect
    one = estimate_time(spec, gpu_spec, setup, interconnect=link, mfu=mfu, calibration=device.calibration)
    if as_json:
        _print_json(
            {
                "model": spec.name,
                "gpu": gpu_spec.name,
                "mfu": {"value": one.mfu, "origin": one.mfu_origin, "source": one.mfu_source},
                "points": [asdict(p) for p in points],
            }
        )
        return
    from treino.cli.render import console, scale_table

    console().print(scale_table(spec, gpu_spec, points, gpus_per_server, counts[-1], nvlink_domain))
    console().print(tr("MFU {mfu} % ({source}).", mfu=tr("{n:.0f}", n=100 * one.mfu), source=one.mfu_source))


@plan_app.command("shared")
def plan_shared(
    model: Annotated[str, typer.Option("--model", "-m", help="Preset name or config.json path.")],
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="GPU name from 'treino gpus'.")],
    tokens: Annotated[float, typer.Option("--tokens", help="Tokens to train on (e.g. 2e9).")],
    micro_batch: Annotated[int, typer.Option("--micro-batch", "-b")] = 1,
    seq_len: Annotated[int, typer.Option("--seq-len", "-s")] = 2048,
    precision: Annotated[str, typer.Option()] = "bf16-mixed",
    checkpointing: Annotated[str, typer.Option()] = "none",
    lora_rank: Annotated[int, typer.Option("--lora-rank")] = 0,
    mig: Annotated[str, typer.Option("--mig", help="MIG profile of the shared GPU: 1g, 2g, 3g, 4g, 7g.")] = "",
    time_slice: Annotated[int, typer.Option("--time-slice", help="Neighbours taking turns on the GPU.")] = 0,
    interruptions_per_day: Annotated[float, typer.Option("--interruptions-per-day")] = 0.5,
    checkpoint_minutes: Annotated[float, typer.Option("--checkpoint-minutes")] = 60.0,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Dedicated against shared GPU for this job: memory, time, interruptions, NVLink and isolation, computed."""
    from treino.plan import TrainSetup, plan_training
    from treino.plan.performance import estimate_time
    from treino.plan.shared import SharedGpu, estimate_shared, seed_table

    if bool(mig) == bool(time_slice):
        raise UsageError(Msg("Say how the GPU is shared. To fix: give --mig 3g, or --time-slice 1 (one neighbour)."))
    setup = TrainSetup(
        micro_batch=micro_batch, seq_len=seq_len, precision=precision, checkpointing=checkpointing, lora_rank=lora_rank
    )
    spec, gpu_spec = catalog.model(model), catalog.gpu(gpu)
    plan = plan_training(spec, gpu_spec, setup)
    run = estimate_time(spec, gpu_spec, setup, tokens=tokens, interconnect=gpu_spec.interconnect)
    share = (
        SharedGpu("mig", mig_profile=mig, interruptions_per_day=interruptions_per_day)
        if mig
        else SharedGpu("time-slice", neighbours=time_slice, interruptions_per_day=interruptions_per_day)
    )
    nvlink = gpu_spec.gpu_link != "none"
    est = estimate_shared(
        gpu_name=gpu_spec.name,
        gpu_memory_bytes=gpu_spec.memory_bytes,
        gpu_has_nvlink=nvlink,
        peak_bytes=plan.memory.peak_bytes,
        run_seconds=run.total_seconds,
        shared=share,
        checkpoint_minutes=checkpoint_minutes,
    )
    rows = seed_table(
        dedicated_memory=gpu_spec.memory_bytes,
        dedicated_seconds=run.total_seconds,
        shared=est,
        peak_bytes=plan.memory.peak_bytes,
        gpu_has_nvlink=nvlink,
        kind=share.kind,
    )
    if as_json:
        _print_json(
            {
                "dedicated": {"fits": plan.fits, "seconds": run.total_seconds},
                "shared": asdict(est),
                "table": [asdict(r) for r in rows],
            }
        )
        return
    from rich.table import Table

    from treino.cli.render import console

    how = Msg("MIG {profile}", profile=mig) if mig else Msg("time slice with {n} neighbour(s)", n=time_slice)
    table = Table(
        title=tr("{model} on {gpu}: dedicated vs shared ({how})", model=spec.name, gpu=gpu_spec.display_name, how=how),
        title_justify="left",
    )
    for col in (N_("aspect"), N_("dedicated"), N_("shared")):
        table.add_column(tr(col))
    for r in rows:
        table.add_row(tr(r.aspect), tr(r.dedicated), tr(r.shared))
    console().print(table)


@plan_app.command("cost")
def plan_cost(
    model: Annotated[str, typer.Option("--model", "-m", help="Preset name or config.json path.")],
    tokens: Annotated[float, typer.Option("--tokens", help="Tokens per run (e.g. 2e9).")],
    dedicated: Annotated[str, typer.Option("--dedicated", help="A dedicated offer (monthly, BRL).")],
    cloud: Annotated[str, typer.Option("--cloud", help="A cloud offer (hourly, USD).")],
    seq_len: Annotated[int, typer.Option("--seq-len", "-s")] = 4096,
    precision: Annotated[str, typer.Option()] = "bf16-mixed",
    runs_per_month: Annotated[float, typer.Option("--runs-per-month")] = 1,
    months: Annotated[int, typer.Option("--months")] = 12,
    dataset_gb: Annotated[float, typer.Option("--dataset-gb", help="Leaves the provider once.")] = 0,
    checkpoint_gb: Annotated[float, typer.Option("--checkpoint-gb", help="Downloaded after each run.")] = 0,
    fx_move: Annotated[float, typer.Option("--fx-move", help="Exchange-rate move to show, %.")] = 20,
    offers_file: Annotated[str, typer.Option("--offers", help="Your own quotes (CSV or YAML).")] = "",
    fx_given: FxRateOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Dedicated server against cloud for this job: total cost in BRL, break-even, exchange-rate risk."""
    from treino.catalog import offers as offer_catalog
    from treino.plan.cost import format_brl
    from treino.plan.tco import compare

    local = offer_catalog.load_offers_file(offers_file) if offers_file else {}
    fx = fx_rate(fx_given)
    result = compare(
        catalog.model(model),
        offer_catalog.candidate(dedicated, local),
        offer_catalog.candidate(cloud, local),
        fx,
        tokens=tokens,
        seq_len=seq_len,
        precision=precision,
        runs_per_month=runs_per_month,
        months=months,
        dataset_gb=dataset_gb,
        checkpoint_gb=checkpoint_gb,
        fx_move_pct=fx_move,
    )
    if as_json:
        _print_json({**asdict(result), "fx": fx_json(fx)})
        return
    from rich import box
    from rich.table import Table
    from rich.text import Text

    from treino.cli.render import console, identity_column

    table = Table(
        title=tr(
            "{model}: {runs:g} run(s) a month of {tokens:,.0f} tokens, {months} months",
            model=model,
            runs=runs_per_month,
            tokens=tokens,
            months=months,
        ),
        title_justify="left",
    )
    table.box, table.show_edge = box.SIMPLE_HEAD, False  # 80 columns hold it
    identity_column(table, tr("offer"))  # the offer's id whole; under it, which side it is and its GPUs
    table.add_column(tr("hours per run"), justify="right", min_width=6)  # "treino", pt-BR's longest word, whole
    table.add_column(tr("per month"), justify="right", no_wrap=True)
    widest = max(len(format_brl(oc.total_brl)) for oc in (result.dedicated, result.cloud))
    table.add_column(tr("total, {months} months", months=months), justify="right", min_width=widest)  # egress under
    for label, oc in (("dedicated", result.dedicated), ("cloud", result.cloud)):
        table.add_row(
            Text.assemble((oc.choice.offer, "bold"), (f"\n{tr(label)} · {oc.choice.gpus}x {oc.choice.gpu}", "dim")),
            tr("{n:,.1f}", n=oc.choice.hours),
            format_brl(oc.per_month_brl),
            Text.assemble(
                format_brl(oc.total_brl), ("\n" + tr("egress {pct:.1f} %", pct=100 * oc.egress_share), "dim")
            ),
        )
    console().print(table)
    console().print(
        Text(
            tr("Cheaper")
            + f": {tr(result.cheaper)}. "
            + tr(
                "The dedicated server pays off above {runs} runs a month.",
                runs=tr("{n:,.1f}", n=result.break_even_runs_per_month),
            ),
            style="bold",
        )
    )
    console().print(
        tr(
            "A {move:g} % move of the BRL/USD rate puts the cloud total between {low} and {high}.",
            move=fx_move,
            low=format_brl(result.cloud_total_low_brl),
            high=format_brl(result.cloud_total_high_brl),
        )
    )
    console().print(
        Text(
            fx_line(fx)
            + " "
            + tr(
                "Prices: {dedicated} ({dedicated_as_of}); {cloud} ({cloud_as_of}).",
                dedicated=result.dedicated.cost.price_source,
                dedicated_as_of=result.dedicated.cost.price_as_of,
                cloud=result.cloud.cost.price_source,
                cloud_as_of=result.cloud.cost.price_as_of,
            ),
            style="dim",
        )
    )


@plan_app.command("infer")
def plan_infer(
    model: Annotated[str, typer.Option("--model", "-m", help="Preset name or config.json path.")],
    gpu: Annotated[str, typer.Option("--gpu", "-g", help="GPU name from 'treino gpus'.")],
    batch: Annotated[int, typer.Option("--batch", help="Concurrent sequences.")] = 1,
    context: Annotated[int, typer.Option("--context", help="Tokens per sequence (prompt + output).")] = 4096,
    weights: Annotated[str, typer.Option(help="bf16, fp16, fp32, int8, int4.")] = "bf16",
    gpus: Annotated[int, typer.Option("--gpus", help="Tensor-parallel GPUs.")] = 1,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Inference memory (weights, KV cache, activations) and a bound on decode speed."""
    from treino.plan import estimate_inference

    spec = catalog.model(model)
    gpu_spec = catalog.gpu(gpu)
    est = estimate_inference(spec, gpu_spec, batch=batch, context=context, weights=weights, gpus=gpus)
    fits = est.peak_bytes <= gpu_spec.memory_bytes
    if as_json:
        _print_json(
            {
                "model": spec.name,
                "gpu": gpu_spec.name,
                "params": spec.params,
                **asdict(est),
                "fits": fits,
                "headroom_bytes": gpu_spec.memory_bytes - est.peak_bytes,
            }
        )
    else:
        from treino.cli.render import console, infer_plan

        console().print(infer_plan(spec, gpu_spec, est, batch, context, weights))
    if not fits:
        raise typer.Exit(EXIT_NO_FIT)


@app.command("gpus")
def gpus_cmd(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The GPU catalog."""
    table = list(catalog.gpus().values())
    if as_json:
        _print_json([asdict(g) for g in table])
        return
    from treino.cli.render import console, gpus_table

    console().print(gpus_table(table))


@app.command("models")
def models_cmd(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """The model presets."""
    specs = [catalog.model(name) for name in catalog.model_names()]
    if as_json:
        _print_json(
            [
                {
                    "name": m.name,
                    "family": m.family,
                    "params": m.params,
                    "layers": m.num_layers,
                    "hidden_size": m.hidden_size,
                    "vocab_size": m.vocab_size,
                    "source": catalog.model_config(m.name).get("treino_source", ""),
                }
                for m in specs
            ]
        )
        return
    from treino.cli.render import console, models_table

    console().print(models_table(specs))


class _JobCost(TypedDict):
    """`plan train --json`'s `cost` object: plan.cost.CostBreakdown's fields, then the servers it takes."""

    offer: str
    months: int
    compute_brl: float
    egress_brl: float
    hours_per_month: float
    utilisation: float
    fx_brl_per_usd: float | None
    fx_date: str | None
    price_source: str
    price_as_of: str
    servers: int
    total_brl: float  # compute for every server, plus egress
    per_month_brl: float
    fx_source: str


def _job_cost(
    offer_name: str,
    gpu: str,
    gpus: int,
    run_seconds: float,
    runs_per_month: float,
    months: int,
    dataset_gb: float,
    fx_given: float | None = None,
) -> _JobCost | None:
    """The `cost` object of `plan train --json`: this run on `offer_name`, enough servers for `gpus`."""
    if not offer_name:
        return None
    from treino.catalog import offers as offer_catalog
    from treino.plan.cost import project_cost

    offer = offer_catalog.offer(offer_name)
    if offer.gpu != gpu:
        raise UsageError(
            Msg(
                "Offer {name!r} has {offer_gpu} GPUs, not {gpu}. To fix: --gpu {offer_gpu}.",
                name=offer.name,
                offer_gpu=offer.gpu,
                gpu=gpu,
            )
        )
    if run_seconds <= 0:
        raise UsageError(Msg("Pricing a run needs its length. To fix: add --tokens."))
    servers = -(-gpus // offer.gpus)
    fx = fx_rate(fx_given)
    one = project_cost(offer, fx, run_seconds / 3600, runs_per_month, months, dataset_gb)
    total = one.compute_brl * servers + one.egress_brl
    # asdict is typed dict[str, Any]; its keys are CostBreakdown's fields, as _JobCost lists them.
    return cast(
        _JobCost,
        {
            **asdict(one),
            "servers": servers,
            "total_brl": total,
            "per_month_brl": total / months,
            "fx_source": fx.source,
        },
    )


def _hours(text: str) -> float:
    """'3d', '72h', '90m' or a number of hours."""
    units = {"d": 24.0, "h": 1.0, "m": 1 / 60}
    value, unit = (text[:-1], text[-1]) if text and text[-1] in units else (text, "h")
    try:
        return float(value) * units[unit]
    except ValueError as exc:
        raise UsageError(
            Msg("Cannot read the deadline {text!r}. To fix: write e.g. 3d, 72h or 90m.", text=text)
        ) from exc


def _brl(text: str) -> float:
    """'R$ 50.000', '50000', '50.000,00' -> 50000.0 (Brazilian thousands and decimal separators)."""
    cleaned = text.replace("R$", "").replace(" ", "")
    if "," in cleaned:
        cleaned = cleaned.replace(".", "").replace(",", ".")
    elif cleaned.count(".") >= 1 and len(cleaned.rsplit(".", 1)[1]) == 3:
        cleaned = cleaned.replace(".", "")
    try:
        return float(cleaned)
    except ValueError as exc:
        raise UsageError(
            Msg('Cannot read the budget {text!r}. To fix: write e.g. "R$ 50.000" or 50000.', text=text)
        ) from exc


@app.command("recommend")
def recommend_cmd(
    model: Annotated[str, typer.Option("--model", "-m", help="Preset name or config.json path.")],
    tokens: Annotated[float, typer.Option("--tokens", help="Tokens to train on (e.g. 2e9).")],
    seq_len: Annotated[int, typer.Option("--seq-len", "-s")] = 4096,
    precision: Annotated[str, typer.Option()] = "bf16-mixed",
    deadline: Annotated[str, typer.Option("--deadline", help="e.g. 3d or 72h.")] = "",
    budget: Annotated[str, typer.Option("--budget", help='e.g. "R$ 50.000".')] = "",
    residency: Annotated[
        str, typer.Option("--residency", help="Country the data must stay in: ISO-2 (e.g. BR) or a site (its country).")
    ] = "",
    offers_file: Annotated[
        str, typer.Option("--offers", help="Your own quotes (CSV or YAML), added to the catalog.")
    ] = "",
    max_gpus: Annotated[int, typer.Option("--max-gpus")] = 64,
    fx_given: FxRateOpt = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    html: Annotated[str, typer.Option("--html", help="Also write a self-contained HTML report with plots.")] = "",
    profile: Annotated[
        Path | None,
        typer.Option("--profile", help="Profile from 'treino bench --train-step --save': measured MFU for its GPU."),
    ] = None,
) -> None:
    """Which server to rent: the cheapest configurations that fit, meet the deadline and budget, and keep
    the data where it may be."""
    from treino.catalog import offers as offer_catalog
    from treino.catalog.residency import residency_country
    from treino.cli.progress import steps
    from treino.plan.recommend import recommend

    residency = residency_country(residency) if residency else ""  # 'br', a site -> 'BR'; 'Brasil' -> exit 2
    candidates = offer_catalog.candidates(offers_file)
    from treino.bench.train_step import profile_steps

    calibration = profile_steps(profile)  # measured training steps: a close one replaces an offer's MFU prior
    spec, fx = catalog.model(model), fx_rate(fx_given)
    deadline_hours, budget_brl = (_hours(deadline) if deadline else None), (_brl(budget) if budget else None)
    total = 1
    if html:
        from treino.report.html import REPORT_STEPS

        total += REPORT_STEPS
    with steps("recommend", total, enabled=not as_json) as on_step:
        on_step(Msg("planning {n} offers", n=len(candidates)))
        result = recommend(
            spec,
            candidates,
            fx,
            tokens=tokens,
            seq_len=seq_len,
            precision=precision,
            deadline_hours=deadline_hours,
            budget_brl=budget_brl,
            residency=residency or None,
            max_gpus=max_gpus,
            calibration=calibration,
        )
        if html:
            from treino.report import write_recommendation_report

            written = write_recommendation_report(
                html,
                spec,
                result,
                candidates,
                fx,
                tokens,
                seq_len,
                precision=precision,
                deadline_hours=deadline_hours,
                budget_brl=budget_brl,
                residency=residency or None,
                on_step=on_step,
            )
    if html and as_json:  # stderr, so stdout stays one JSON document
        print(tr("Report: {path}", path=str(written)), file=sys.stderr)
    if as_json:
        _print_json(
            {
                "choices": [asdict(c) for c in result.choices],
                "rejected": [asdict(r) for r in result.rejected],
                "best_effort": asdict(result.best_effort) if result.best_effort else None,
                "miss": result.miss,
                "fx": fx_json(fx),
            }
        )
    else:
        from treino.cli.render import console, recommendation

        console().print(recommendation(result))
        shown = list(result.choices) or ([result.best_effort] if result.best_effort else [])
        for gpu_name, source in sorted({(c.gpu, c.mfu_source) for c in shown if calibration and c.mfu_source}):
            console().print(tr("MFU on {gpu}: {source}.", gpu=gpu_name, source=source), style="dim", highlight=False)
        console().print(fx_line(fx), style="dim", highlight=False)
        if html:
            print(tr("Report: {path}", path=str(written)))
    if not result.choices:
        raise typer.Exit(EXIT_NO_FIT)


def main() -> None:
    """Entry point: TreinoError -> one red line and its exit code (treino.errors: 1 a failure, 2 a usage error);
    traceback only with --debug. The language is the environment's (LC_ALL, LC_MESSAGES, LANG) until --lang says
    otherwise."""
    from treino.cli.extras import naming_missing_extras
    from treino.cli.i18n import help_language, localize

    use(help_language(sys.argv[1:]))
    try:
        with naming_missing_extras(app, sys.argv[1:]):  # a package of a missing extra -> MissingExtra, one line
            command = typer.main.get_command(app)  # what app() runs; its help texts in the user's language first
            localize(command, current())
            command()
    except TreinoError as exc:
        if _state["debug"] or "--debug" in sys.argv:
            raise
        from rich.console import Console
        from rich.markup import escape

        # escape(): a message may hold brackets ("pip install 'treino[torch]'") that are not Rich markup.
        line = f"[bold red]{escape(tr('error'))}:[/] {escape(current().error(exc))}"
        Console(stderr=True).print(line, highlight=False, soft_wrap=True)
        sys.exit(exc.exit_code)
