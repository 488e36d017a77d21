"""Admission control: a job with a `plan` is refused at submit when the planner says it cannot fit on this server's
GPUs, with the planner's advice in the message (a late OOM costs hours; reference job-servers-compared §9).

The advice names job spec keys, in YAML (`gpus: 4, plan: {zero: 3}`), never CLI flags: each option, merged into
the spec, is admitted. An option that would need more GPUs per node than this server has is not offered."""

from __future__ import annotations

from collections.abc import Callable

from treino import catalog
from treino.errors import SpecError
from treino.i18n import Joined, Msg
from treino.plan import TrainSetup, plan_training
from treino.plan.advice import advise, spec_keys_for
from treino.plan.hardware import GpuSpec
from treino.server.spec import JobSpec

GIB = 2**30


def gpu_for(device_name: str) -> GpuSpec | None:
    """The catalog GPU an NVML device name is; None when the catalog has no match."""
    from treino.bench.profile import catalog_match

    name = catalog_match(device_name, catalog.gpus())
    return catalog.gpu(name) if name else None


def admission_for(gpu: GpuSpec, gpus_per_node: Callable[[], int] | None = None) -> Callable[[JobSpec], str]:
    """A check for `gpu`: returns the plan's one-line verdict, raises SpecError (field `plan`) when the job cannot
    fit, with the planner's advice as spec keys; none of it asks for more GPUs per node than `gpus_per_node()`
    (the server's inventory now; None: no limit)."""

    def check(spec: JobSpec) -> str:
        assert spec.plan is not None
        p = spec.plan
        setup = TrainSetup(
            micro_batch=p.micro_batch,
            seq_len=p.seq_len,
            grad_accum=p.grad_accum,
            precision=p.precision,
            optimizer=p.optimizer,
            attention=p.attention,
            checkpointing=p.checkpointing,
            gpus=spec.gpus * spec.nodes,  # the world size: ZeRO and FSDP shard over every node's GPUs
            zero=p.zero,
            tp=p.tp,
            offload=p.offload,
            lora_rank=p.lora_rank,
            quant=p.quant,
        )
        plan = plan_training(catalog.model(p.model), gpu, setup)
        need, have = plan.memory.peak_bytes / GIB, gpu.memory_bytes / GIB
        if plan.fits:
            over = f" over {spec.nodes} nodes x {spec.gpus} GPUs" if spec.nodes > 1 else ""
            return f"fits: {need:.1f} of {have:.1f} GiB per {gpu.display_name}{over}"
        max_gpus = None if gpus_per_node is None else gpus_per_node() * spec.nodes
        options = [a for a in advise(plan.model, gpu, setup, plan.memory, max_gpus) if a.fits][:3]
        # Msg templates (treino.i18n): the dashboard shows the refusal in the visitor's language, the API in English
        advice = Joined(
            "; ",
            (
                Msg(
                    "{change} ({peak:.1f} GiB with {keys})",
                    change=a.change,
                    peak=a.peak_bytes / GIB,
                    keys=spec_keys_for(a.settings, spec.nodes),
                )
                for a in options
            ),
        )
        raise SpecError(
            "plan",
            Msg(
                "does not fit: the planner needs {need:.1f} GiB per GPU, the {gpu} has {have:.1f} GiB. "
                "To fix: {advice}.",
                need=need,
                gpu=gpu.display_name,
                have=have,
                advice=advice,
            )
            if advice
            else Msg(
                "does not fit: the planner needs {need:.1f} GiB per GPU, the {gpu} has {have:.1f} GiB. "
                "To fix: more GPUs with plan: {{zero: 3}}, or a smaller model.",
                need=need,
                gpu=gpu.display_name,
                have=have,
            ),
        )

    return check
