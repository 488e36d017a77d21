"""`treino plan train --method trace`: the real model, one measured training step, fake tensors.

    plan_by_trace(model, gpu, setup) -> TrainPlan

The model is built and trained under `FakeTensorMode`: every tensor has its shape, dtype and storage size
but no data, so Llama-3-8B traces in seconds on a laptop. `engine.measure_training_step` counts the live
bytes at the step's peak with PyTorch's MemTracker; this module turns them into the planner's
`MemoryEstimate` and adds the same overhead as the analytic planner (CUDA context + allocator reserve).
The step runs as on the plan's device (`plan_device`): a GPU's optimizer implementation, autocast lists and
attention kernel, or a CPU host's (docs/trace.md).

What a single-process trace on fake tensors cannot see is refused, not guessed: several GPUs, ZeRO, tensor
parallelism, offload, LoRA, NF4, 8-bit optimizers, Adafactor (it reads values), and selective checkpointing of a
`module:function` model (the attention core recomputed is transformers' attention function:
`engine.selective_checkpointing`).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import sys
import warnings
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treino import catalog
from treino.errors import PlanError, TreinoError
from treino.i18n import Joined, Msg
from treino.plan import MemoryEstimate, TrainPlan, TrainSetup
from treino.plan.advice import Advice
from treino.plan.hardware import GpuSpec
from treino.plan.memory import validate_setup
from treino.plan.model import ModelSpec, Tensor, model_from_config

if TYPE_CHECKING:
    from treino.trace.engine import StepMeasurement

METHOD = "trace"
# Gradient accumulation changes the peak once gradients outlive a micro-batch; two micro-batches show it.
TRACED_MICRO_STEPS_MAX = 2
_TORCH_MISSING = "Trace mode needs the torch extras. To fix: pip install 'treino[torch]'"
# MemTracker's module tracker warns about modules garbage-collected before backward (T5, checkpointing).
_NOISY_WARNINGS = ("Module is None",)


@dataclass(frozen=True)
class TracePlan(TrainPlan):
    """A TrainPlan whose memory was measured. Advice re-plans changes analytically, so it is given only
    for families the analytic planner models (`advisable`)."""

    advisable: bool = True

    def advice(self) -> list[Advice]:
        return super().advice() if self.advisable else []


CPU_DEVICE = "cpu"  # the GpuSpec name of a CPU host (`--gpu cpu`)
TRACE_STEPS = 4  # the steps `on_step` is told of: import, build, warm-up step, measured step


def plan_by_trace(
    model: str, gpu: GpuSpec, setup: TrainSetup, on_step: Callable[[str], None] = lambda step: None
) -> TrainPlan:
    """Trace one training step of `model` (a preset, a config.json path, or `module:function` returning
    `(nn.Module, batch_kwargs)`) under `setup`, and plan it for one `gpu`. `on_step(name)` is called as each of
    its TRACE_STEPS steps starts (the CLI's progress bar)."""
    _refuse_untraceable(setup, own_model=_is_callable_spec(model))
    on_step("importing PyTorch and transformers")
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        raise TreinoError(_TORCH_MISSING) from exc
    from treino.trace import engine

    device = plan_device(gpu)
    notes: list[str] = [
        Msg(
            "Measured: one training step traced with PyTorch's MemTracker on fake tensors, run as on {device} "
            "(its optimizer implementation, autocast lists and attention kernel).",
            device="CPU" if device == "cpu" else "CUDA",
        )
    ]
    if _is_callable_spec(model):
        measurement = _failing_clearly(model, lambda: _trace_callable(model, setup, device, on_step))
        spec = _opaque_spec(model, "custom", {}, measurement.params)
        notes.append(f"The batch comes from {model}; --micro-batch and --seq-len are not used.")
        advisable = False
    else:
        config = catalog.model_config(model)
        name = _model_name(model)
        measurement = _failing_clearly(model, lambda: _trace_config(config, setup, engine, on_step, device))
        try:
            spec = model_from_config(config, name=name)
        except PlanError as exc:  # a family the analytic planner does not model, or a field it needs
            spec = _opaque_spec(name, str(config.get("model_type", "custom")), config, measurement.params)
            advisable = False
            notes.append(f"No advice (it re-plans changes analytically): {exc}".split(" To fix:")[0])
        else:
            # Advice re-plans with the analytic model; only when it describes the traced model exactly.
            advisable = spec.params == measurement.params
            if not advisable:
                notes.append(
                    f"No advice: the analytic planner counts {spec.params:,} parameters, the traced "
                    f"model has {measurement.params:,}."
                )
    if setup.grad_accum > TRACED_MICRO_STEPS_MAX:
        notes.append(
            f"Traced {TRACED_MICRO_STEPS_MAX} micro-batches per step; more accumulate into the same "
            "gradients and do not raise the peak."
        )
    if measurement.outputs_bytes:
        notes.append(
            Msg(
                "The step keeps the model's outputs ({mib:,.1f} MiB of logits) until it ends, as a training loop "
                "that holds `outputs` does; Hugging Face's Trainer frees them before backward, with a peak up to "
                "that much lower (--loop trainer).",
                mib=measurement.outputs_bytes / 2**20,
            )
        )
    memory = to_memory_estimate(measurement, setup, tuple(notes))
    return TracePlan(spec, gpu, setup, memory, METHOD, advisable=advisable)


def plan_device(gpu: GpuSpec) -> str:
    """The torch device type a plan for `gpu` runs on: "cpu" for a CPU host, "cuda" for every GPU (ROCm's
    HIP devices are "cuda" in PyTorch too)."""
    return "cpu" if gpu.name == CPU_DEVICE else "cuda"


def to_memory_estimate(m: StepMeasurement, setup: TrainSetup, notes: tuple[str, ...] = ()) -> MemoryEstimate:
    """MemTracker's categories at the peak as the planner's parts. MemTracker files the optimizer's
    temporaries (AdamW foreach's `exp_avg_sq.sqrt()` list, etc.) under OPT; the planner counts them as
    temporaries, so only the state stays under optimizer. Logits and loss are in ACT/TEMP: logits_bytes=0."""
    optimizer_bytes = min(m.optimizer_bytes, m.optimizer_state_bytes or m.optimizer_bytes)
    temporary_bytes = m.temporary_bytes + (m.optimizer_bytes - optimizer_bytes)
    overhead_bytes = setup.cuda_context_bytes + round(setup.allocator_reserve_fraction * m.peak_bytes)
    return MemoryEstimate(
        params=m.params,
        trainable_params=m.trainable_params,
        weights_bytes=m.weights_bytes,
        gradients_bytes=m.gradients_bytes,
        optimizer_bytes=optimizer_bytes,
        activations_bytes=m.activations_bytes,
        logits_bytes=0,
        temporary_bytes=temporary_bytes,
        peak_tensor_bytes=m.peak_bytes,
        overhead_bytes=overhead_bytes,
        peak_bytes=m.peak_bytes + overhead_bytes,
        peak_phase="measured",
        notes=notes,
    )


def _failing_clearly(model: str, trace: Callable[[], StepMeasurement]) -> StepMeasurement:
    """A model whose forward reads tensor values (`.item()`, data-dependent shapes) cannot run on fake
    tensors; say so in one line instead of a PyTorch traceback (shown with --debug)."""
    try:
        return trace()
    except TreinoError:
        raise
    except Exception as exc:  # whatever the traced model's code raises
        first_line = (str(exc).strip().splitlines() or [""])[0][:300]
        raise PlanError(
            Msg(
                "Tracing {model} on fake tensors failed: {kind}: {error}. To fix: use --method analytic if the family "
                "is supported, or make the model's forward independent of tensor values; --debug shows the traceback.",
                model=model,
                kind=type(exc).__name__,
                error=first_line,
            )
        ) from exc


def _refuse_untraceable(setup: TrainSetup, *, own_model: bool = False) -> None:
    """What one process on fake CPU tensors cannot measure, with the way out. `own_model`: a `module:function`
    model, whose attention is not transformers' (selective checkpointing recomputes transformers' only)."""
    validate_setup(setup)
    refusals = (
        (setup.gpus > 1, f"--gpus {setup.gpus}", "--gpus 1"),
        (setup.zero > 0, f"--zero {setup.zero}", "--zero 0"),
        (setup.tp > 1, f"--tp {setup.tp}", "--tp 1"),
        (setup.offload != "none", f"--offload {setup.offload}", "--offload none"),
        (setup.lora, f"--lora-rank {setup.lora_rank}", "--lora-rank 0"),
        (setup.quant != "none", f"--quant {setup.quant}", "--quant none"),
        (setup.optimizer == "adamw-8bit", "--optimizer adamw-8bit", "--optimizer adamw"),
        # Adafactor scales its step by parameter norms read with .item(): fake tensors hold no values.
        (setup.optimizer == "adafactor", "--optimizer adafactor", Msg("another optimizer")),
        (
            own_model and setup.checkpointing == "selective",
            "--checkpointing selective",
            Msg("--checkpointing none or full"),
        ),
    )
    bad = [(flag, fix) for refused, flag, fix in refusals if refused]
    if bad:
        raise PlanError(
            Msg(
                "Trace mode runs one process on fake tensors and cannot trace {flags}. To fix: use --method analytic, "
                "or trace with {fixes}.",
                flags=", ".join(f for f, _ in bad),
                fixes=Joined(", ", [x for _, x in bad]),
            )
        )


def _is_callable_spec(model: str) -> bool:
    """`package.module:function`, not a path (a Windows drive letter has a colon too)."""
    module, sep, func = model.partition(":")
    return (
        bool(sep)
        and module.replace(".", "").replace("_", "").isalnum()
        and func.isidentifier()
        and not Path(model).exists()
    )


def _trace_config(
    config: Mapping[str, Any],
    setup: TrainSetup,
    engine: Any,
    on_step: Callable[[str], None],
    device: str = "cuda",
) -> StepMeasurement:
    from torch._subclasses.fake_tensor import FakeTensorMode

    with _quiet(), _one_sequence_per_row(), _fake_friendly_grouped_mm(), FakeTensorMode():
        on_step("building the model on fake tensors")
        module = engine.build_hf_model(dict(config), precision=setup.precision, attention=setup.attention)
        batch = engine.lm_batch(config, setup.micro_batch, setup.seq_len)
        return _measure(module, batch, setup, engine, on_step, device)


def _trace_callable(spec: str, setup: TrainSetup, device: str, on_step: Callable[[str], None]) -> StepMeasurement:
    from torch import nn
    from torch._subclasses.fake_tensor import FakeTensorMode

    from treino.trace import engine

    # Like uvicorn's --app-dir ".": a module next to where the command runs is importable.
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    build = engine.load_callable(spec)
    dtype = engine.weights_dtype(setup.precision)
    with _quiet(), FakeTensorMode():
        on_step(Msg("building {spec} on fake tensors", spec=spec))
        with engine.default_dtype(dtype):
            built = build()
        if not (
            isinstance(built, tuple)
            and len(built) == 2
            and isinstance(built[0], nn.Module)
            and isinstance(built[1], dict)
        ):
            raise PlanError(
                Msg(
                    "{spec} must return (nn.Module, dict of forward keyword arguments), got {kind}. To fix: return "
                    "(model, batch).",
                    spec=spec,
                    kind=type(built).__name__,
                )
            )
        module, batch = built
        for tensor in itertools.chain(module.parameters(), module.buffers()):
            if tensor.is_floating_point() and tensor.dtype != dtype:
                # Module.to() would swap fake tensors, which fails while MemTracker-style weakrefs exist.
                tensor.data = tensor.data.to(dtype)
        return _measure(module, batch, setup, engine, on_step, device)


def _measure(
    module: Any,
    batch: dict[str, Any],
    setup: TrainSetup,
    engine: Any,
    on_step: Callable[[str], None],
    device: str,
) -> StepMeasurement:
    measurement: StepMeasurement = engine.measure_training_step(
        module,
        batch,
        precision=setup.precision,
        optimizer=setup.optimizer,
        checkpointing=setup.checkpointing,
        plan_device=device,
        grad_accum=min(setup.grad_accum, TRACED_MICRO_STEPS_MAX),
        on_step=on_step,
        loop=setup.loop,
    )
    return measurement


@contextlib.contextmanager
def _one_sequence_per_row() -> Iterator[None]:
    """`engine.lm_batch` holds one sequence per row. Without a KV cache (training with checkpointing) and
    without an attention mask, transformers reads the position ids to find packed sequences: on real
    tensors it finds none and SDPA runs causal with no mask; on fake tensors it cannot read them, assumes
    packing and builds a (B, 1, T, T) mask that also sends SDPA to another kernel (+14 % on a small fp32
    Llama). Tell it what a real run finds (transformers 5.x `masking_utils.find_packed_sequence_indices`)."""
    try:
        from transformers import masking_utils
    except ImportError:  # transformers 4.x builds no packed-sequence mask
        yield
        return
    original = getattr(masking_utils, "find_packed_sequence_indices", None)
    if original is None:
        yield
        return
    masking_utils.find_packed_sequence_indices = lambda position_ids: None
    try:
        yield
    finally:
        masking_utils.find_packed_sequence_indices = original


@contextlib.contextmanager
def _fake_friendly_grouped_mm() -> Iterator[None]:
    """Mixture-of-experts layers (transformers 5.x `integrations/moe.py`) multiply tokens by their experts
    with `torch.nn.functional.grouped_mm`, whose meta kernel takes bf16 only (the CUDA kernel's rule),
    while the real CPU kernel takes fp32 too. For other dtypes use transformers' own fallback operator,
    which has a fake implementation and allocates the same outputs and gradients."""
    try:
        import torch
        from transformers.integrations import moe
    except ImportError:
        yield
        return
    original = getattr(moe, "_can_use_grouped_mm", None)
    if original is None:
        yield
        return

    def can_use(input: Any, weight: Any, offs: Any) -> bool:
        return bool(original(input, weight, offs)) and weight.dtype == torch.bfloat16

    moe._can_use_grouped_mm = can_use
    try:
        yield
    finally:
        moe._can_use_grouped_mm = original


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    with warnings.catch_warnings():
        for message in _NOISY_WARNINGS:
            warnings.filterwarnings("ignore", message=message, category=UserWarning)
        yield


def _model_name(model: str) -> str:
    """The name catalog.model gives: a preset's, or the folder holding the config."""
    path = Path(model)
    if model.endswith(".json"):
        return path.resolve().parent.name
    if path.is_dir():
        return path.resolve().name
    return model.strip().lower().replace("_", "-").replace(" ", "-")


def _first_int(config: Mapping[str, Any], *keys: str) -> int:
    for key in keys:
        value = config.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return 0


def _opaque_spec(name: str, family: str, config: Mapping[str, Any], params: int) -> ModelSpec:
    """A ModelSpec for a model the analytic planner cannot describe tensor by tensor: the shape fields the
    config has (0 where it has none), and one tensor holding all `params`, so `.params` is exact."""
    heads = _first_int(config, "num_attention_heads", "num_heads", "n_head", "encoder_attention_heads")
    hidden = _first_int(config, "hidden_size", "d_model", "n_embd")
    return ModelSpec(
        name=name,
        family=family,
        hidden_size=hidden,
        num_layers=_first_int(config, "num_hidden_layers", "num_layers", "n_layer", "encoder_layers"),
        num_heads=heads,
        num_kv_heads=_first_int(config, "num_key_value_heads") or heads,
        head_dim=_first_int(config, "head_dim", "d_kv") or (hidden // heads if heads else 0),
        intermediate_size=_first_int(config, "intermediate_size", "d_ff", "n_inner", "ffn_dim"),
        vocab_size=_first_int(config, "vocab_size"),
        max_positions=_first_int(config, "max_position_embeddings", "n_positions"),
        tied_embeddings=bool(config.get("tie_word_embeddings", False)),
        num_experts=0,
        experts_per_token=0,
        dropout=0.0,
        layer_tensors=(),
        outer_tensors=(Tensor("all", (params,)),),
    )
