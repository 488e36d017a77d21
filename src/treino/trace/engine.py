"""Run real training steps under `torch.distributed._tools.mem_tracker.MemTracker`.

One step creates the optimizer state; the second step is measured, so the peak includes weights,
gradients, optimizer state, saved activations, logits/loss and the optimizer's temporaries, exactly as
PyTorch allocates them. Under `FakeTensorMode` nothing is allocated, so any model size can be traced on
a laptop; on real tensors the same code is the planner's ground truth.

MemTracker rounds every allocation to the 512-byte CUDA block; it does not see the CUDA context, the
allocator's reserve or NCCL buffers (torch docs, `torch/distributed/_tools/mem_tracker.py`).
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from treino.errors import PlanError
from treino.i18n import Msg
from treino.trace.cuda import as_on_cuda

PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed", "bf16-master", "bf16-true")
OPTIMIZERS = ("adamw", "sgd", "sgd-momentum", "adafactor", "lion")  # adamw-8bit needs bitsandbytes + CUDA


@dataclass(frozen=True)
class StepMeasurement:
    """Bytes at the peak of live tensors during the measured step, by MemTracker category."""

    peak_bytes: int
    weights_bytes: int  # PARAM + BUFFER
    gradients_bytes: int  # GRAD
    optimizer_bytes: int  # OPT (+ fp32 master weights under bf16-master): state and the step's temporaries
    activations_bytes: int  # ACT: saved for backward, and forward outputs
    temporary_bytes: int  # TEMP: backward temporaries and everything else
    params: int
    trainable_params: int
    optimizer_state_bytes: int = 0  # the optimizer's state (+ master weights) alone, live all step long
    outputs_bytes: int = 0  # the model's outputs other than the loss (its logits), live until the step ends


def weights_dtype(precision: str) -> torch.dtype:
    """Parameters' dtype: fp32 under autocast (its weights, grads and optimizer state stay fp32)."""
    if precision in ("fp32", "bf16-mixed", "fp16-mixed"):
        return torch.float32
    if precision in ("bf16-master", "bf16-true"):
        return torch.bfloat16
    raise PlanError(
        Msg(
            "Unknown precision {precision!r}. To fix: use one of {valid}.",
            precision=precision,
            valid=", ".join(PRECISIONS),
        )
    )


def autocast_dtype(precision: str) -> torch.dtype | None:
    return {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}.get(precision)


def default_foreach(device_type: str) -> bool:
    """Whether torch.optim runs its foreach implementation by default on `device_type`.

    `torch.optim.optimizer._default_to_fused_or_foreach` (torch 2.6-2.13) picks foreach when every parameter
    is a plain tensor on a device in `_get_foreach_kernels_supported_devices()` (CUDA, XPU, MTIA, the
    private-use backend), and fused only when asked: on CUDA AdamW runs foreach (one temporary per parameter,
    all at once), on CPU the single-tensor loop (one parameter's temporaries at a time). Parameters under
    FakeTensorMode are not plain tensors, so the choice is made from the device, not from them.
    """
    try:
        from torch.utils._foreach_utils import _get_foreach_kernels_supported_devices

        supported = _get_foreach_kernels_supported_devices()
    except ImportError:  # a torch release that moved the private helper: its documented devices
        supported = ["cuda", "xpu"]
    return device_type in supported


def make_optimizer(name: str, params: list[nn.Parameter], device_type: str = "cuda") -> torch.optim.Optimizer:
    """The optimizer as PyTorch runs it on `device_type` by default (`default_foreach`): AdamW and SGD with
    foreach on CUDA, their single-tensor loop on CPU, so the measured temporaries are that device's."""
    foreach = default_foreach(device_type)
    if name == "adamw":
        return torch.optim.AdamW(params, lr=1e-4, foreach=foreach)
    if name == "sgd":
        return torch.optim.SGD(params, lr=1e-3, foreach=foreach)
    if name == "sgd-momentum":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, foreach=foreach)
    if name == "lion":
        # torch has no Lion; one fp32/bf16 momentum per parameter, like lucidrains/lion-pytorch.
        return _Lion(params)
    if name == "adafactor":
        return torch.optim.Adafactor(params, lr=1e-2, foreach=foreach)
    raise PlanError(
        Msg(
            "Optimizer {name!r} cannot be traced. To fix: use one of {valid} (adamw-8bit needs bitsandbytes on a GPU).",
            name=name,
            valid=", ".join(OPTIMIZERS),
        )
    )


class _Lion(torch.optim.Optimizer):
    """Lion (Chen et al. 2023, arXiv 2302.06675 Alg. 2): one momentum buffer per parameter."""

    def __init__(self, params: list[nn.Parameter], lr: float = 1e-4, betas: tuple[float, float] = (0.9, 0.99)) -> None:
        super().__init__(params, {"lr": lr, "betas": betas})

    @torch.no_grad()
    def step(self, closure: Callable[[], Any] | None = None) -> None:  # type: ignore[override]
        for group in self.param_groups:
            beta1, beta2 = group["betas"]
            for p in group["params"]:
                if p.grad is None:
                    continue
                state = self.state[p]
                if not state:
                    state["exp_avg"] = torch.zeros_like(p)
                m = state["exp_avg"]
                update = m.mul(beta1).add_(p.grad, alpha=1 - beta1).sign_()
                p.add_(update, alpha=-group["lr"])
                m.mul_(beta2).add_(p.grad, alpha=1 - beta2)


class _MasterWeights:
    """bf16-master: 16-bit model parameters and gradients, fp32 master copies updated by the optimizer
    (the Megatron / DeepSpeed BF16_Optimizer scheme)."""

    def __init__(self, params: list[nn.Parameter], optimizer_name: str, device_type: str) -> None:
        self.params = params
        self.master = [nn.Parameter(p.detach().float()) for p in params]
        self.optimizer = make_optimizer(optimizer_name, self.master, device_type)

    def step(self) -> None:
        for p, m in zip(self.params, self.master, strict=True):
            m.grad = None if p.grad is None else p.grad.float()
        self.optimizer.step()
        with torch.no_grad():
            for p, m in zip(self.params, self.master, strict=True):
                p.copy_(m)
                m.grad = None


def _peak_tracker() -> Any:
    """A MemTracker that keeps only the global peak snapshot.

    MemTracker also keeps every module's local peak, walking all tracked modules after every operator:
    for Llama-3-8B (420 modules, ~28,000 operators a step) that was 60 % of a fake-tensor trace. The
    global peak is computed exactly as in `MemTracker._update_peak_stats` (torch 2.6-2.13); if a torch
    release renames the private fields it relies on, the full tracker runs instead.
    """
    from copy import deepcopy

    from torch.distributed._tools.mem_tracker import MemTracker

    # TorchDispatchMode.__init_subclass__ is unannotated (torch 2.13): subclassing is an untyped call to mypy.
    class _GlobalPeakTracker(MemTracker):  # type: ignore[no-untyped-call]
        def _update_peak_stats(self, peak_state: Any) -> None:
            for dev, dev_snap in self._curr_mem_snap.items():
                if self._peak_mem.get(dev, 0) < dev_snap["Total"]:
                    self._peak_mem[dev] = dev_snap["Total"]
                    self._peak_mem_snap[dev] = deepcopy(dev_snap)

    tracker = MemTracker()
    private = ("_curr_mem_snap", "_peak_mem", "_peak_mem_snap", "_update_peak_stats")
    return _GlobalPeakTracker() if all(hasattr(tracker, f) for f in private) else tracker


class _NoHook:
    def remove(self) -> None:
        pass


def _skip_frozen_parameters(tracker: Any, model: nn.Module) -> None:
    """MemTracker puts a gradient hook on every parameter, and PyTorch refuses hooks on tensors that do not
    require grad (LoRA's frozen base). Mark those as hooked already; they still count as PARAM."""
    handles = getattr(tracker, "_param_to_grad_hook_handles", None)
    if handles is None:
        return
    for param in model.parameters():
        if not param.requires_grad:
            handles[param] = (_NoHook(), _NoHook())


def _loss_of(output: Any) -> torch.Tensor:
    loss = getattr(output, "loss", output)
    if not isinstance(loss, torch.Tensor):
        raise PlanError(
            Msg(
                "The traced model's forward returned no loss. To fix: return a scalar tensor or an object with a .loss "
                "attribute."
            )
        )
    return loss if loss.dim() == 0 else loss.float().mean()


def enable_full_checkpointing(model: nn.Module) -> None:
    """Recompute every transformer block in backward (HF activation checkpointing, non-reentrant)."""
    kwargs = {"use_reentrant": False}
    # getattr, not attribute access: nn.Module types every unknown attribute as Tensor | Module.
    enable_v5 = getattr(model, "activation_checkpointing_enable", None)  # transformers >= 5.x
    enable_v4 = getattr(model, "gradient_checkpointing_enable", None)  # its name in transformers 4.x
    if enable_v5 is not None:
        enable_v5(activation_checkpointing_kwargs=kwargs)
    elif enable_v4 is not None:
        enable_v4(gradient_checkpointing_kwargs=kwargs)
    else:
        raise PlanError(Msg("Full checkpointing in trace mode needs a Hugging Face model."))


@contextlib.contextmanager
def selective_checkpointing() -> Iterator[None]:
    """Recompute the attention core in backward (Korthikanti et al. 2022, §5: "selective activation recomputation"):
    every attention function a transformers model looks up (`ALL_ATTENTION_FUNCTIONS.get_interface`: eager, SDPA,
    flash) runs under `torch.utils.checkpoint` (non-reentrant), so backward keeps its inputs (q, k, v, the mask),
    not the s x s scores, softmax and kernel copies it makes. Models that do not look their attention up there
    (a module function's own model) run unchanged."""
    from torch.utils.checkpoint import checkpoint
    from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS

    lookup = ALL_ATTENTION_FUNCTIONS.get_interface

    def checkpointed(attn_implementation: str, default: Callable[..., Any]) -> Callable[..., Any]:
        core = lookup(attn_implementation, default)

        def run(*args: Any, **kwargs: Any) -> Any:
            return checkpoint(core, *args, use_reentrant=False, **kwargs)

        return run

    ALL_ATTENTION_FUNCTIONS.get_interface = checkpointed  # type: ignore[method-assign]
    try:
        yield
    finally:
        del ALL_ATTENTION_FUNCTIONS.get_interface  # the class's own method again


def _trainer_loss(model: Any, batch: Mapping[str, Any]) -> torch.Tensor:
    """The loss as Hugging Face's Trainer.compute_loss returns it: the model's outputs die with this frame."""
    return _loss_of(model(**batch))


def _outputs_bytes(outputs: Any) -> int:
    """Bytes of the tensors a model's output holds besides its loss (a ModelOutput is a dict: the logits)."""
    if not isinstance(outputs, Mapping):
        return 0
    return sum(v.untyped_storage().nbytes() for k, v in outputs.items() if k != "loss" and isinstance(v, torch.Tensor))


def measure_training_step(
    model: nn.Module,
    batch: dict[str, torch.Tensor],
    *,
    precision: str = "bf16-mixed",
    optimizer: str = "adamw",
    checkpointing: str = "none",
    device_type: str = "cpu",
    plan_device: str | None = None,
    grad_accum: int = 1,
    on_step: Callable[[str], None] = lambda step: None,
    loop: str = "plain",
) -> StepMeasurement:
    """Two training steps of `model` on `batch`; the second one measured with MemTracker. `on_step(name)` is
    called as each starts.

    Each step is the ordinary training loop's: `outputs = model(**batch)`, `outputs.loss.backward()`,
    `optimizer.step()`, `optimizer.zero_grad()`. The model computes its own loss from `labels` (transformers'
    `ForCausalLMLoss`: logits upcast to fp32, labels shifted), and `outputs` holds the logits until the step
    ends, through backward and the optimizer step, as the loop's variable does. With `loop="trainer"` only the
    loss outlives the forward, as in Hugging Face's Trainer (`compute_loss` returns the loss, its `outputs` a
    local that dies before backward). `device_type` is where the
    tensors are (autocast's device); `plan_device` the device whose PyTorch defaults the step runs: the
    optimizer's implementation (`default_foreach`), autocast's lists and SDPA's kernel under dropout (a "cuda"
    plan traced on CPU tensors runs CUDA's: `cuda.as_on_cuda`).

    `model` must already hold its weights in `weights_dtype(precision)`. With `checkpointing="full"` every
    transformer block is recomputed in backward (HF `gradient_checkpointing_enable`, non-reentrant); with
    `checkpointing="selective"` the attention core of every block (`selective_checkpointing`).
    Each step runs `grad_accum` forward/backward passes before the optimizer: from the second one on, the
    accumulated gradients are live during forward and backward, so 2 gives the peak of any larger value.
    """
    if grad_accum < 1:
        raise PlanError(Msg("grad_accum must be at least 1, got {grad_accum}.", grad_accum=grad_accum))
    if checkpointing == "full":
        enable_full_checkpointing(model)
    elif checkpointing not in ("none", "selective"):
        raise PlanError(
            Msg(
                "Unknown checkpointing {checkpointing!r}. To fix: use none, selective or full.",
                checkpointing=checkpointing,
            )
        )
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    plan_device = plan_device or device_type
    master = _MasterWeights(params, optimizer, plan_device) if precision == "bf16-master" else None
    opt = master.optimizer if master else make_optimizer(optimizer, params, plan_device)
    emulate_cuda = plan_device == "cuda" and device_type != "cuda"
    cast = autocast_dtype(precision)

    outputs_bytes: list[int] = []

    def step(tracker: Any = None) -> None:
        # The whole step, not only the forward: checkpointing recomputes blocks in backward under the
        # forward's autocast state, and must run the same lists.
        with contextlib.ExitStack() as stack:
            if emulate_cuda:
                stack.enter_context(as_on_cuda(device_type))
            if checkpointing == "selective":
                stack.enter_context(selective_checkpointing())
            _step(tracker)

    def _step(tracker: Any = None) -> None:
        ctx = torch.autocast(device_type, dtype=cast) if cast else contextlib.nullcontext()
        for micro_step in range(grad_accum):
            if tracker is not None and micro_step:
                # MemTracker refuses a root module's second forward unless its per-module stats are reset;
                # the global peak, the only figure read here, is kept.
                tracker.reset_mod_stats()
            if loop == "trainer":
                with ctx:
                    loss = _trainer_loss(model, batch)
                loss.backward()  # type: ignore[no-untyped-call]  # unannotated (torch 2.13)
                del loss
                continue
            with ctx:
                # Bound to a name, as in a training loop: the previous micro-batch's outputs (its logits) stay
                # live through this forward, and this one's through backward and the optimizer step.
                outputs = model(**batch)
            _loss_of(outputs).backward()  # type: ignore[no-untyped-call]  # unannotated (torch 2.13)
            outputs_bytes.append(_outputs_bytes(outputs))
        if master:
            master.step()
        else:
            opt.step()
        opt.zero_grad(set_to_none=True)
        model.zero_grad(set_to_none=True)

    on_step("training step 1 (creates the optimizer state)")
    step()  # creates the optimizer state
    on_step("training step 2, measured with MemTracker")
    tracker = _peak_tracker()
    _skip_frozen_parameters(tracker, model)
    tracker.track_external(model, opt, *batch.values(), *(master.master if master else []))
    with tracker:
        step(tracker)
    snapshot = tracker.get_tracker_snapshot("peak")
    by_kind: dict[str, int] = {}
    for per_device in snapshot.values():
        for kind, nbytes in per_device.items():
            key = str(kind).rsplit(".", 1)[-1]
            by_kind[key] = by_kind.get(key, 0) + int(nbytes)
    other = by_kind.get("OTH", 0)
    master_bytes = sum(m.numel() * m.element_size() for m in master.master) if master else 0
    state_bytes = sum(
        v.untyped_storage().nbytes()
        for state in opt.state.values()
        for v in state.values()
        if isinstance(v, torch.Tensor)
    )
    return StepMeasurement(
        peak_bytes=by_kind.get("Total", 0),
        weights_bytes=by_kind.get("PARAM", 0) + by_kind.get("BUFFER", 0),
        gradients_bytes=by_kind.get("GRAD", 0),
        optimizer_bytes=by_kind.get("OPT", 0) + min(other, master_bytes),
        activations_bytes=by_kind.get("ACT", 0),
        temporary_bytes=by_kind.get("TEMP", 0) + max(other - master_bytes, 0),
        params=sum(p.numel() for p in model.parameters()),
        trainable_params=sum(p.numel() for p in params),
        optimizer_state_bytes=state_bytes + master_bytes,
        outputs_bytes=max(outputs_bytes, default=0),
    )


@contextlib.contextmanager
def default_dtype(dtype: torch.dtype) -> Iterator[None]:
    old = torch.get_default_dtype()
    torch.set_default_dtype(dtype)
    try:
        yield
    finally:
        torch.set_default_dtype(old)


def build_hf_model(config: dict[str, Any], *, precision: str, attention: str) -> nn.Module:
    """A Hugging Face model for `config` (a config.json dict), its weights in the precision's dtype.

    Decoders get their causal-LM head (`AutoModelForCausalLM`), encoder-decoders (T5, BART) their
    seq2seq-LM head, BERT and other encoders their masked-LM head: the models people train. Under an
    active FakeTensorMode nothing is allocated.
    """
    import transformers
    from transformers.models.auto import modeling_auto

    # The dtype comes from the precision, not from the checkpoint's `torch_dtype`/`dtype` field: transformers
    # would otherwise build a "bfloat16" config's weights in bf16 whatever the default dtype.
    fields = {k: v for k, v in config.items() if not k.startswith("treino_") and k not in ("torch_dtype", "dtype")}
    model_type = fields.pop("model_type", None)
    if not model_type:
        raise PlanError(Msg("The config has no 'model_type'. To fix: add the Hugging Face model_type field."))
    try:
        cfg = transformers.AutoConfig.for_model(model_type, **fields)
    except ValueError as exc:
        raise PlanError(
            Msg(
                "transformers {version} does not know model_type {model_type!r}: {error} To fix: upgrade "
                "transformers, or trace your own model with --model module:function.",
                version=transformers.__version__,
                model_type=model_type,
                error=exc,
            )
        ) from exc
    cfg._attn_implementation = attention
    auto: type[
        transformers.AutoModelForCausalLM | transformers.AutoModelForSeq2SeqLM | transformers.AutoModelForMaskedLM
    ]
    # BERT is in the causal-LM mapping too (BertLMHeadModel), but is trained as a masked LM.
    if model_type != "bert" and model_type in modeling_auto.MODEL_FOR_CAUSAL_LM_MAPPING_NAMES:
        auto = transformers.AutoModelForCausalLM
    elif model_type in modeling_auto.MODEL_FOR_SEQ_TO_SEQ_CAUSAL_LM_MAPPING_NAMES:
        auto = transformers.AutoModelForSeq2SeqLM
    elif model_type in modeling_auto.MODEL_FOR_MASKED_LM_MAPPING_NAMES:
        auto = transformers.AutoModelForMaskedLM
    else:
        raise PlanError(
            Msg(
                "transformers has no causal, seq2seq or masked language-model head for {model_type!r}. To fix: trace "
                "your own model with --model module:function.",
                model_type=model_type,
            )
        )
    with default_dtype(weights_dtype(precision)):
        # from_config is unannotated in transformers (5.24): it returns the PreTrainedModel for `cfg`.
        model: nn.Module = auto.from_config(cfg, attn_implementation=attention)  # type: ignore[no-untyped-call]
    return model


def lm_batch(config: dict[str, Any], micro_batch: int, seq_len: int) -> dict[str, torch.Tensor]:
    """Random token ids (and labels) for a language-model step."""
    vocab = int(config.get("vocab_size", 0))
    ids = torch.randint(0, vocab, (micro_batch, seq_len))
    return {"input_ids": ids, "labels": ids.clone()}


def load_callable(spec: str) -> Callable[[], tuple[nn.Module, dict[str, torch.Tensor]]]:
    """`package.module:function` returning `(model, batch_kwargs)`."""
    module_name, _, func_name = spec.partition(":")
    if not module_name or not func_name:
        raise PlanError(Msg("{spec!r} is not 'module:function'. To fix: e.g. --model mypkg.models:build.", spec=spec))
    try:
        func = getattr(importlib.import_module(module_name), func_name)
    except (ImportError, AttributeError) as exc:
        raise PlanError(
            Msg(
                "Cannot load {spec!r}: {error}. To fix: run from the folder that holds the module, or add it to "
                "PYTHONPATH.",
                spec=spec,
                error=exc,
            )
        ) from exc
    return func  # type: ignore[no-any-return]
