"""When a training run does not fit: the changes that make it fit, cheapest in speed first.

Each change is applied to the setup and re-planned, so the memory it frees is the planner's own number.
Slowdowns are priors with sources:
- smaller micro-batch with gradient accumulation: same tokens per step, smaller matmuls (~5 % for b>=2);
- selective checkpointing recomputes the attention core only: 2-4 % (Korthikanti et al. 2022, Table 4:
  selective recompute costs 4 % for the 22B model, full recompute 36 %);
- full checkpointing repeats the forward: model FLOPs 6N -> 8N per token (+33 %; §B3 HFU factor);
- ZeRO-1/2 move as many bytes as plain data parallel; ZeRO-3 moves 1.5x (Rajbhandari et al. 2020, §7);
- CPU offload of optimizer state runs the step on the CPU and moves gradients over PCIe: the seed article
  puts the cost of checkpointing or offload at 50-80 % of speed; ZeRO-Offload reports 40 TFLOP/s/V100
  vs ~30 % more with GPU-only ZeRO-2 at the same model size (Ren et al. 2021, §6);
- LoRA trains adapters only: fewer FLOPs (~4N instead of 6N per token, §B5), but it changes what is trained;
- QLoRA dequantizes NF4 weights in every matmul: torchtune measured 1.15 it/s eager vs LoRA's faster step
  on Llama-2-7B (qlora_finetune.rst); we count +30 % over LoRA.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, fields, replace

from treino.errors import PlanError
from treino.i18n import Joined
from treino.plan.hardware import GpuSpec
from treino.plan.memory import MemoryEstimate, TrainSetup, estimate_training_memory
from treino.plan.model import ModelSpec

Setting = tuple[str, int | str]  # a TrainSetup field and its new value


@dataclass(frozen=True)
class Advice:
    change: str  # what to do, short labels joined by " + " (a treino.i18n.Joined of CHANGES' labels)
    flags: str  # the CLI flags that plan it (`treino plan train`): flags_for(settings)
    peak_bytes: int  # per GPU after the change
    frees_bytes: int
    fits: bool
    slowdown: float  # expected step-time factor, 1.0 = no change (per token, same GPUs)
    caveat: str = ""
    settings: tuple[Setting, ...] = ()  # what the change sets: the fields of TrainSetup it changes, new values


def settings_changed(before: TrainSetup, after: TrainSetup) -> tuple[Setting, ...]:
    """The fields of `after` that differ from `before`, in TrainSetup's order: what a change sets."""
    out: list[Setting] = []
    for f in fields(TrainSetup):
        value = getattr(after, f.name)
        if value != getattr(before, f.name):
            assert isinstance(value, int | str), f.name  # the changes set numbers and names only
            out.append((f.name, value))
    return tuple(out)


def flags_for(settings: tuple[Setting, ...]) -> str:
    """Settings as `treino plan train` flags: `--zero 3 --offload optimizer+params`."""
    return " ".join(f"--{name.replace('_', '-')} {value}" for name, value in settings)


def spec_keys_for(settings: tuple[Setting, ...], nodes: int = 1) -> str:
    """Settings as a job spec's keys, in YAML flow form: `gpus: 4, plan: {zero: 3, offload: optimizer+params}`.
    `gpus` is the spec's own key (GPUs per node, of `nodes`); every other setting is a key of its `plan:`, named as
    the TrainSetup field it sets. Wrapped in braces, it is a YAML mapping to merge into the spec."""
    top = [f"gpus: {value // nodes if isinstance(value, int) else value}" for name, value in settings if name == "gpus"]
    plan = ", ".join(f"{name}: {value}" for name, value in settings if name != "gpus")
    return ", ".join([*top, *([f"plan: {{{plan}}}"] if plan else [])])


@dataclass(frozen=True)
class _Change:
    change: str
    apply: Callable[[TrainSetup], TrainSetup | None]  # None when it does not apply to this setup
    slowdown: float
    caveat: str = ""
    changes_result: bool = False  # trains something else or with other numerics: offered after the others


def _smaller_micro_batch(s: TrainSetup) -> TrainSetup | None:
    if s.micro_batch == 1:
        return None
    return replace(s, micro_batch=1, grad_accum=s.grad_accum * s.micro_batch)


def _more_zero(stage: int) -> Callable[[TrainSetup], TrainSetup | None]:
    def apply(s: TrainSetup) -> TrainSetup | None:
        return replace(s, zero=stage) if s.dp > 1 and s.zero < stage else None

    return apply


def _more_gpus(s: TrainSetup) -> TrainSetup | None:
    return replace(s, gpus=s.gpus * 2, zero=3) if s.gpus < 64 else None


CHANGES: tuple[_Change, ...] = (
    _Change(
        "micro-batch 1 + accumulation",
        _smaller_micro_batch,
        1.05,
    ),
    _Change(
        "selective checkpointing",
        lambda s: replace(s, checkpointing="selective") if s.checkpointing == "none" else None,
        1.03,
    ),
    _Change("ZeRO-2", _more_zero(2), 1.0),
    _Change(
        "full checkpointing",
        lambda s: replace(s, checkpointing="full") if s.checkpointing != "full" else None,
        1.33,
    ),
    _Change(
        "ZeRO-3",
        _more_zero(3),
        1.10,
        "1.5x the communication of data parallel: slower over PCIe than over NVLink",
    ),
    _Change(
        "2x GPUs + ZeRO-3",
        _more_gpus,
        1.10,
        "costs GPUs, not speed per token",
    ),
    _Change(
        "8-bit AdamW",
        lambda s: replace(s, optimizer="adamw-8bit") if s.optimizer == "adamw" else None,
        1.02,
        "changes the optimizer's numerics slightly",
        True,
    ),
    _Change(
        "bf16 + fp32 master weights",
        lambda s: replace(s, precision="bf16-master") if s.precision in ("fp32", "bf16-mixed") else None,
        1.0,
        "Megatron/DeepSpeed style; not PyTorch autocast",
    ),
    _Change(
        "offload optimizer + weights",
        lambda s: replace(s, zero=3, offload="optimizer+params") if s.offload != "optimizer+params" else None,
        2.5,
        "weights cross PCIe every step; needs CPU RAM for the whole model state",
    ),
    _Change(
        "LoRA r16",
        lambda s: replace(s, lora_rank=16) if not s.lora else None,
        0.75,
        "fine-tunes adapters, not the full model",
        True,
    ),
    _Change(
        "offload optimizer",
        lambda s: replace(s, offload="optimizer") if s.offload == "none" else None,
        1.6,
        "needs CPU RAM for the optimizer state, and each step waits on its update on the CPU (about +60 % time)",
    ),
    _Change(
        "QLoRA r16 (NF4 base)",
        lambda s: replace(s, lora_rank=16, quant="nf4") if s.quant == "none" else None,
        0.75 * 1.3,
        "fine-tunes adapters on a 4-bit base; some quality loss",
        True,
    ),
)


def _try(model: ModelSpec, setup: TrainSetup) -> MemoryEstimate | None:
    try:
        return estimate_training_memory(model, setup)
    except PlanError:
        return None


def advise(
    model: ModelSpec, gpu: GpuSpec, setup: TrainSetup, current: MemoryEstimate, max_gpus: int | None = None
) -> list[Advice]:
    """Up to five ways to make the run fit on `gpu`, cheapest first, none with more than `max_gpus` GPUs in all
    (None: no limit). Every combination of the changes is planned (2^len(CHANGES) cheap estimates); the ranking
    prefers, in order: keeping the training result (no LoRA, 8-bit state or other numerics), keeping the GPU count,
    then the smallest expected slowdown. Each option carries its settings, rendered as CLI flags (`flags`) or as a
    job spec's keys (`spec_keys_for`). Empty when the run already fits."""
    capacity = gpu.memory_bytes
    if current.peak_bytes <= capacity:
        return []
    options: list[tuple[tuple[int, int, float, int], Advice]] = []
    for mask in range(1, 2 ** len(CHANGES)):
        combined: TrainSetup | None = setup
        picked: list[_Change] = []
        for i, change in enumerate(CHANGES):
            if mask >> i & 1 and combined is not None:
                combined = change.apply(combined)
                picked.append(change)
        if combined is None or (max_gpus is not None and combined.gpus > max_gpus):
            continue
        if setup.device == "cpu" and (combined.gpus > setup.gpus or combined.offload != setup.offload):
            continue  # a CPU host: no second device to shard over, and offloading into the same RAM frees nothing
        estimate = _try(model, combined)
        if estimate is None or estimate.peak_bytes > capacity:
            continue
        slowdown = 1.0
        for change in picked:
            slowdown *= change.slowdown
        result_changes = sum(c.changes_result for c in picked)
        caveats = Joined("; ", [c.caveat for c in picked if c.caveat])  # Joined: the views translate each part
        settings = settings_changed(setup, combined)
        advice = Advice(
            Joined(" + ", [c.change for c in picked]),
            flags_for(settings),
            estimate.peak_bytes,
            current.peak_bytes - estimate.peak_bytes,
            True,
            round(slowdown, 3),
            caveats,
            settings,
        )
        options.append(((result_changes, combined.gpus, slowdown, len(picked)), advice))
    options.sort(key=lambda o: o[0])
    out: list[Advice] = []
    for _, advice in options:
        # Skip supersets of an option already offered with the same trade-off.
        if any(set(a.settings) <= set(advice.settings) for a in out):
            continue
        out.append(advice)
        if len(out) == 5:
            break
    return out
