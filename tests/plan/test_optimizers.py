"""Every optimizer the planner names, against the real implementation on CPU tensors.

One step creates the optimizer's state; the second step runs under PyTorch's MemTracker. The state must equal
the planner's bytes exactly (summed from the real tensors, each shared storage once, without the scalar step
counters); the step's temporaries (MemTracker's peak less weights, buffers, gradients and state) within 1 %.

The implementations: torch.optim's AdamW, SGD and Adafactor with foreach (their CUDA default), lucidrains'
lion-pytorch, and bitsandbytes' AdamW8bit, whose CPU backend (0.50) allocates the state as on CUDA.
MemTracker sees bitsandbytes' step as one operator, so its temporaries are not measured here (its CPU kernel
dequantizes one tensor's moments to fp32; the CUDA kernel updates in place): the planner says so in its notes.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.families import SMALL, without_dropout
from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.plan.memory import OPTIMIZERS

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")

LORA_RANK = 64  # LoRA A on a 128-wide model: 8,192 values, over bitsandbytes' 4,096-value 8-bit threshold
LORA_TARGETS = ("q_proj", "v_proj")


def _optimizer(name: str, params: list[Any]) -> Any:
    if name == "adamw-8bit":
        bnb = pytest.importorskip("bitsandbytes", reason="the dev extra installs bitsandbytes")
        return bnb.optim.AdamW8bit(params, lr=1e-4)
    if name == "lion":
        lion = pytest.importorskip("lion_pytorch", reason="the dev extra installs lion-pytorch")
        return lion.Lion(params, lr=1e-4)
    if name in ("adamw", "sgd", "sgd-momentum", "adafactor"):
        return engine.make_optimizer(name, params)  # torch.optim, foreach
    raise AssertionError(f"The planner names optimizer {name!r} but no test measures it: add it here.")


def _storages(opt: Any, *, counters: bool) -> int:
    """Bytes of the optimizer's state tensors, each storage once (bitsandbytes shares its quantile maps)."""
    seen: dict[int, int] = {}
    for state in opt.state.values():
        for key, value in state.items():
            if isinstance(value, torch.Tensor) and (counters or key != "step"):
                seen[value.untyped_storage().data_ptr()] = value.untyped_storage().nbytes()
    return sum(seen.values())


def _measure(model: Any, batch: dict[str, Any], name: str) -> tuple[int, int]:
    """(state bytes, temporaries of the second step) of optimizer `name` on `model`'s trainable parameters."""
    from torch.distributed._tools.mem_tracker import MemTracker

    opt = _optimizer(name, [p for p in model.parameters() if p.requires_grad])
    model(**batch).loss.backward()
    opt.step()  # creates the state
    opt.zero_grad(set_to_none=True)
    model(**batch).loss.backward()
    tracker = MemTracker()
    tracker.track_external(model, opt)
    with tracker:
        opt.step()
    peak: dict[str, int] = {}
    for per_device in tracker.get_tracker_snapshot("peak").values():
        for kind, nbytes in per_device.items():
            peak[str(kind).rsplit(".", 1)[-1]] = peak.get(str(kind).rsplit(".", 1)[-1], 0) + int(nbytes)
    held = peak["PARAM"] + peak["BUFFER"] + peak["GRAD"] + _storages(opt, counters=True)
    return _storages(opt, counters=False), peak["Total"] - held


def _check(cfg: dict[str, Any], model: Any, name: str, setup: TrainSetup) -> None:
    state, temporaries = _measure(model, engine.lm_batch(cfg, 1, 16), name)
    predicted = estimate_training_memory(model_from_config(cfg), setup)
    # zero 0, no offload: the step's live tensors are the model states plus the step's temporaries
    predicted_temporaries = dict(predicted.phase_peaks_bytes)["optimizer step"] - predicted.model_state_bytes
    assert predicted.optimizer_bytes == state, f"{name}: predicted {predicted.optimizer_bytes:,} B, real {state:,} B"
    if name != "adamw-8bit":  # one operator to MemTracker (see the module docstring)
        assert predicted_temporaries == pytest.approx(temporaries, rel=0.01, abs=512), name


# One block is enough: the state is per tensor. Each optimizer in fp32; in bf16 those whose state follows the
# parameters' dtype, and 8-bit AdamW, whose small tensors keep fp32 moments; GPT-2 for its biases and vectors.
CASES = [
    *[("llama", "fp32", name) for name in OPTIMIZERS],
    *[("llama", "bf16-true", name) for name in ("adamw-8bit", "sgd-momentum", "adafactor", "lion")],
    *[("gpt2", "fp32", name) for name in ("adamw-8bit", "adafactor")],
    ("mixtral", "fp32", "adafactor"),  # fused experts (E, d_out, d_in): factored over the last two dimensions
]
ONE_BLOCK = {"num_hidden_layers": 1, "n_layer": 1}


def _small(family: str) -> dict[str, Any]:
    cfg = without_dropout(SMALL[family])
    return {**cfg, **{k: 1 for k in ONE_BLOCK if k in cfg}}


def test_every_optimizer_is_measured() -> None:
    assert {name for _, _, name in CASES} == set(OPTIMIZERS)


@pytest.mark.parametrize("family,precision,name", CASES)
def test_state_and_step_temporaries_measured(family: str, precision: str, name: str) -> None:
    cfg = _small(family)
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision=precision, attention="sdpa")
    _check(cfg, model, name, TrainSetup(precision=precision, optimizer=name, seq_len=16))


# The optimizers whose state or temporaries follow the adapters' shapes; rank 4 keeps every adapter under
# bitsandbytes' 8-bit threshold (fp32 moments, no quantile maps).
@pytest.mark.parametrize(
    "name,rank", [("adamw-8bit", LORA_RANK), ("adamw-8bit", 4), ("adafactor", LORA_RANK), ("lion", LORA_RANK)]
)
def test_lora_adapters_state_and_step_temporaries_measured(name: str, rank: int) -> None:
    peft = pytest.importorskip("peft")
    cfg = _small("llama")
    torch.manual_seed(0)
    base = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa")
    model = peft.get_peft_model(base, peft.LoraConfig(r=rank, target_modules=list(LORA_TARGETS)))
    setup = TrainSetup(precision="bf16-true", optimizer=name, seq_len=16, lora_rank=rank, lora_targets=LORA_TARGETS)
    _check(cfg, model, name, setup)


@pytest.mark.parametrize("name", ["adamw", "sgd", "sgd-momentum", "adafactor"])
def test_master_weights_state_and_step_temporaries_measured(name: str) -> None:
    """bf16-master (Megatron's and DeepSpeed's BF16_Optimizer scheme, as treino's trace engine runs it): bf16
    parameters and gradients, fp32 master copies that the optimizer (foreach) steps on. The state is the masters
    plus the optimizer's own; the step's temporaries are the gradients cast to fp32 plus the optimizer's."""
    from torch.distributed._tools.mem_tracker import MemTracker

    cfg = _small("llama")
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision="bf16-master", attention="sdpa")
    master = engine._MasterWeights([p for p in model.parameters() if p.requires_grad], name, "cuda")  # foreach
    batch = engine.lm_batch(cfg, 1, 16)
    model(**batch).loss.backward()
    master.step()  # creates the state
    model.zero_grad(set_to_none=True)
    model(**batch).loss.backward()
    tracker = MemTracker()
    tracker.track_external(model, master.optimizer, *master.master)
    with tracker:
        master.step()
    peak: dict[str, int] = {}
    for per_device in tracker.get_tracker_snapshot("peak").values():
        for kind, nbytes in per_device.items():
            peak[str(kind).rsplit(".", 1)[-1]] = peak.get(str(kind).rsplit(".", 1)[-1], 0) + int(nbytes)
    masters = sum(m.numel() * m.element_size() for m in master.master)
    state = _storages(master.optimizer, counters=False) + masters
    held = peak["PARAM"] + peak["BUFFER"] + peak["GRAD"] + _storages(master.optimizer, counters=True) + masters
    predicted = estimate_training_memory(
        model_from_config(cfg), TrainSetup(precision="bf16-master", optimizer=name, seq_len=16)
    )
    assert predicted.optimizer_bytes == state
    predicted_temporaries = dict(predicted.phase_peaks_bytes)["optimizer step"] - predicted.model_state_bytes
    assert predicted_temporaries == pytest.approx(peak["Total"] - held, rel=0.01, abs=512)


@pytest.mark.parametrize("name", OPTIMIZERS)
def test_lora_keeps_no_master_copy(name: str) -> None:
    """PEFT keeps the adapters in fp32 (its autocast_adapter_dtype default), so under bf16-master a LoRA plan is the
    bf16-mixed one that tests/plan/test_lora.py measures: no fp32 copy of the adapters and no cast of their
    gradients."""
    cfg = _small("llama")
    plans = [
        estimate_training_memory(
            model_from_config(cfg),
            TrainSetup(precision=precision, optimizer=name, seq_len=16, lora_rank=8, lora_targets=LORA_TARGETS),
        )
        for precision in ("bf16-master", "bf16-mixed")
    ]
    assert plans[0].optimizer_bytes == plans[1].optimizer_bytes
    assert plans[0].phase_peaks_bytes == plans[1].phase_peaks_bytes


@pytest.mark.parametrize("name", ["adafactor", "adamw-8bit", "lion"])
def test_lora_on_fused_experts_state_and_step_temporaries_measured(name: str) -> None:
    """LoRA on a MoE layer's fused experts (PEFT's target_parameters): one A (r·E x d_in) and one B (d_out x r·E) per
    parameter, which Adafactor factors as 2-D matrices, not per expert."""
    peft = pytest.importorskip("peft")
    cfg = _small("mixtral")
    torch.manual_seed(0)
    base = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa")
    config = peft.LoraConfig(r=8, target_modules=[], target_parameters=["experts.gate_up_proj", "experts.down_proj"])
    model = peft.get_peft_model(base, config)
    setup = TrainSetup(precision="bf16-true", optimizer=name, seq_len=16, lora_rank=8, lora_targets=("experts",))
    _check(cfg, model, name, setup)
