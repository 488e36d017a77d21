"""Training memory per GPU: weights, gradients, optimizer state, activations, logits, temporaries, peak.

The peak of live tensors is the largest of three moments of a training step (HF blog `train_memory.md`:
`peak = params + optimizer + max(activations, grads + optimizer intermediates)`; planner-formulas §B3):

    loss      weights + optimizer + gradients kept for accumulation + saved activations + logits and loss
    backward  the same at the top of backward, when the logits' gradients exist too (or, with few tokens, when
              the head's weight gradient forms, after log_softmax's tensors are freed)
    step      weights + optimizer + all gradients + the optimizer's temporaries

Sharding follows the ZeRO paper (Rajbhandari et al. 2020, §5 and Fig. 1): stage 1 shards optimizer state,
2 also gradients, 3 also weights, each over the data-parallel size; `model_state_bytes` is the paper's count.
The live bytes at each moment follow PyTorch's implementations, measured on gloo ranks with MemTracker
(tests/plan/test_sharded.py; `treino.trace.sharded` says what runs): stages 0-1 are DDP (+ ZeroRedundancyOptimizer),
whose gradient buckets hold a second copy of the gradients; stages 2-3 are FSDP2 `fully_shard` per block and
root, which keeps each rank's padded shards and all-gathers whole units (see `_fsdp_gathered_bytes`).
Tensor parallelism divides weights and most activations by its size (Korthikanti et al. 2022, §4.2).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field

from treino.errors import PlanError
from treino.i18n import Msg
from treino.plan.activations import BLOCK_COEFFICIENTS, FAMILY_GROUP, BlockCoefficients
from treino.plan.deepseek import mla_block_bytes_per_token, mla_kernel
from treino.plan.encoder import mlm_backward_logits_bytes, mlm_outer_bytes
from treino.plan.kernels import DEVICE_KINDS, Device, attention_kernel, device_of, dropout_mask_bytes
from treino.plan.model import ModelSpec, Tensor
from treino.plan.moe import moe_block_bytes_per_token

PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed", "bf16-master", "bf16-true", "fp8", "bf16-fsdp")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "sgd-momentum", "adafactor", "lion")
ATTENTIONS = ("sdpa", "eager")
CHECKPOINTING = ("none", "selective", "full")
OFFLOADS = ("none", "optimizer", "optimizer+params")
QUANTS = ("none", "nf4")
KERNELS = ("hf", "megatron")
# The training loop around the model: "plain" keeps the model's outputs (its logits) through backward, as
# `outputs = model(**batch); outputs.loss.backward()` does; "trainer" keeps only the loss, as Hugging Face's
# Trainer does: `training_step` calls `compute_loss`, whose `outputs` is a local that dies when it returns the loss,
# before `accelerator.backward(loss)` (transformers 5.24 trainer.py, Trainer.training_step / compute_loss).
LOOPS = ("plain", "trainer")

# CUDA context and kernels: 1,343 MB on a V100 (transformers docs, model_memory_anatomy.md), "300 MiB to
# 2 GiB" (asmirnov.xyz/vram), 1,000 MiB in vram-calculator: planner-formulas-and-data.md §B9.
DEFAULT_CUDA_CONTEXT_BYTES = 1000 * 2**20
# The caching allocator holds more than the live tensors: reserved/allocated was 1.27 (full fine-tune) to
# 1.7 (LoRA) in PEFT's MetaMathQA runs (§B9, §C A8-A9); Megatron adds 5 %. 10 % of the peak is our default.
DEFAULT_ALLOCATOR_RESERVE_FRACTION = 0.10
# bitsandbytes NF4 with double quantization: 4 bits + 0.127 bits of constants per weight (QLoRA §3).
NF4_BYTES_PER_PARAM = 0.516
# bitsandbytes' 8-bit AdamW keeps one uint8 per value for each of its two moments, one fp32 absmax per block of
# 256 values, two 256-entry fp32 quantile maps shared by all tensors, and fp32 moments for tensors under 4,096
# values (bitsandbytes/optim/optimizer.py `Optimizer2State.init_state`, 0.50; the paper, Dettmers et al. 2022 §2,
# used blocks of 2048). torchao's AdamW8bit uses the same block and threshold.
ADAM8BIT_BLOCK = 256
ADAM8BIT_MIN_8BIT_NUMEL = 4096
ADAM8BIT_QMAP_BYTES = 2 * 256 * 4
# Activations Korthikanti et al. keep whole under tensor parallelism: layer norms' inputs, the residual
# stream, dropout masks (10 of 34 sbh per layer, Table 2); in HF Llama the fp32 norm inputs and the norm
# outputs make about 12 of its 20 h-terms. 0.6 is that share.
TP_REPLICATED_SHARE = 0.6
# LoRA's default targets, when --lora-targets names none: the attention projections. DeepSeek-V3's (MLA,
# transformers DeepseekV3Attention) are q's low-rank pair (or q_proj when q_lora_rank is null), the key-value
# latent's down and up projections and o_proj; GPT-2, GPT-NeoX and BERT take PEFT's defaults for them
# (peft/utils/constants.py TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING, PEFT 0.21).
LORA_DEFAULT_TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj")
LORA_FAMILY_TARGETS = {
    "deepseek_v3": ("q_proj", "q_a_proj", "q_b_proj", "kv_a_proj_with_mqa", "kv_b_proj", "o_proj"),
    "gpt2": ("c_attn",),
    "gpt_neox": ("query_key_value",),
    "bert": ("query", "value"),
}
# SDPA's math kernel (kernels.py; `_scaled_dot_product_attention_math`) computes in fp32: it keeps its softmax
# output (4 B per head, query token and key) and fp32 copies of the scaled q, the scaled k and v, both expanded
# to every query head (3 x 4 B per q-size element), instead of the q, k and v a fused kernel keeps. Checked with
# MemTracker on CPU, where dropout sends SDPA to this kernel (tests/plan/test_kernels.py).
MATH_SOFTMAX_BYTES = 4
MATH_QKV_BYTES = 3 * 4
# The share of a block's saved activations still live when backward reaches its attention core under selective
# checkpointing: the input norm's tensors and q, k, v (RoPE in fp32 under autocast). Measured on CPU with MemTracker
# (Llama, eager, the recompute's window): 20 % in bf16-true, 39 % in bf16-mixed; the larger one is taken.
PRE_CORE_SHARE = 0.4
# GPT-2 keeps less before its core: no RoPE, no fp32 norm copies (c_attn's input and the q, k, v copies the products
# save: 16 of its 120 h-bytes per token in fp32). BERT too under full checkpointing; under selective checkpointing its
# top block's activations are all still live there (a smaller share is 7.6 % under the window at 2 x 256 tokens).
# Fitted on MemTracker's peaks of their eager attention at 1 x 1,024 tokens (BERT 1 x 512), full and selective
# checkpointing, 3 precisions, dropout 0 and 10 % (tests/plan/test_full_recompute.py GPT2_BERT), and BERT's windows
# at 2 x 256 (tests/plan/test_selective.py): with these every one is within -2.2 to +3.9 %, and the math kernel's
# (SDPA with dropout on CPU) within -1.7 to +4.3 % (Llama's 0.4 there: -3.7 to +6.0 %). At these sizes the share
# moves a peak by 3 % at most, so the measurements bound it loosely (GPT-2's 0 to 0.28 would pass them).
PRE_CORE_SHARES = {
    ("gpt2", "full"): 0.12,
    ("gpt2", "selective"): 0.12,
    ("bert", "full"): 0.25,
    ("bert", "selective"): 1.0,
}


@dataclass(frozen=True)
class TrainSetup:
    """How the model is trained. Sizes are per GPU unless they say otherwise."""

    micro_batch: int = 1
    seq_len: int = 2048
    grad_accum: int = 1
    precision: str = "bf16-mixed"
    optimizer: str = "adamw"
    attention: str = "sdpa"
    checkpointing: str = "none"
    gpus: int = 1
    zero: int = 0  # 0-3; FSDP full-shard = 3
    tp: int = 1
    offload: str = "none"
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()  # () : the model's attention projections (lora_targets_of)
    quant: str = "none"  # "nf4" = QLoRA base weights
    pp: int = 1  # pipeline stages (1F1B schedule)
    pp_interleave: int = 1  # virtual stages per GPU (Megatron interleaved schedule)
    kernels: str = "hf"  # "hf": Hugging Face modules (measured); "megatron": Megatron-LM's fused kernels
    sequence_parallel: bool = False  # Megatron sequence parallelism (shards norms and dropouts over TP)
    cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES
    allocator_reserve_fraction: float = DEFAULT_ALLOCATOR_RESERVE_FRACTION
    device: str = "cuda"  # cuda, rocm or cpu: picks the attention kernel and the dropout masks' size
    sm: int = 90  # CUDA compute capability x10 (kernels.GPU_SM); 0 on ROCm and CPU
    loop: str = "plain"  # LOOPS: whether the loop's `outputs` hold the logits through backward

    @property
    def target(self) -> Device:
        return device_of(self.device, self.sm)

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp)

    @property
    def lora(self) -> bool:
        return self.lora_rank > 0


@dataclass(frozen=True)
class MemoryEstimate:
    """Bytes per GPU at the moment of the peak: weights + gradients + optimizer + activations + logits +
    temporaries = `peak_tensor_bytes` (what MemTracker measures); `peak_bytes` adds the overhead."""

    params: int
    trainable_params: int
    weights_bytes: int
    gradients_bytes: int
    optimizer_bytes: int
    activations_bytes: int
    logits_bytes: int
    temporary_bytes: int
    peak_tensor_bytes: int
    overhead_bytes: int
    peak_bytes: int
    peak_phase: str  # the moment of the peak: "loss", "backward", "optimizer step"
    attention_kernel: str = ""  # kernels.attention_kernel: flash, efficient, cudnn, math, flash-cpu, eager
    device: str = ""  # "cuda sm90", "rocm", "cpu"
    phase_peaks_bytes: tuple[tuple[str, int], ...] = ()  # live tensors at each moment
    saved_activations_bytes: int = 0  # what the forward keeps for backward, whatever the peak's moment
    model_state_bytes: int = 0  # weights + gradients + optimizer state, sharded, before offload
    cpu_offload_bytes: int = 0
    notes: tuple[str, ...] = field(default=())
    # This GPU's own weights, gradients (+ DDP's buckets) and optimizer state after backward, as PyTorch shards
    # them (FSDP2's padded shards, not the paper's flat ones), without gathered units; before offload.
    rank_model_state_bytes: int = 0


@dataclass(frozen=True)
class _Precision:
    weight_bytes: int
    grad_bytes: int
    state_bytes: int  # bytes of one optimizer state element
    master_bytes: int  # fp32 master copy held by the optimizer
    compute: str  # "fp32", "mixed", "16bit"
    act_bytes: int  # bytes of a 16/32-bit activation


_PRECISION = {
    "fp32": _Precision(4, 4, 4, 0, "fp32", 4),
    "bf16-mixed": _Precision(4, 4, 4, 0, "mixed", 2),
    "fp16-mixed": _Precision(4, 4, 4, 0, "mixed", 2),
    "bf16-master": _Precision(2, 2, 4, 4, "16bit", 2),
    "bf16-true": _Precision(2, 2, 2, 0, "16bit", 2),
    "fp8": _Precision(4, 4, 4, 0, "mixed", 2),  # torchao float8: fp32 master, bf16 autocast, fp8 matmuls (fp8.py)
    # FSDP2's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32), torchtitan's default: fp32 sharded
    # parameters (the master), gradients and optimizer state; the blocks gathered and computed in bf16, no autocast
    # (FSDP_GATHER_BYTES, FSDP_UNSHARDED_GRAD_BYTES).
    "bf16-fsdp": _Precision(4, 4, 4, 0, "16bit", 2),
}
# Under bf16-fsdp FSDP2 all-gathers the shards cast to bf16, the unsharded gradients are bf16 (the parameters'
# dtype), and each unit's are cast to fp32 into the reduce-scatter's input (torch.distributed.fsdp
# _fully_shard/_fsdp_collectives.py: foreach_all_gather, foreach_reduce with reduce_dtype).
FSDP_GATHER_BYTES = 2
FSDP_UNSHARDED_GRAD_BYTES = 2


def validate_setup(setup: TrainSetup) -> None:
    """Refuse impossible setups, whatever the model, with a message that says how to fix them."""
    for label, value, allowed in (
        ("precision", setup.precision, PRECISIONS),
        ("optimizer", setup.optimizer, OPTIMIZERS),
        ("attention", setup.attention, ATTENTIONS),
        ("checkpointing", setup.checkpointing, CHECKPOINTING),
        ("offload", setup.offload, OFFLOADS),
        ("quant", setup.quant, QUANTS),
        ("kernels", setup.kernels, KERNELS),
        ("device", setup.device, DEVICE_KINDS),
        ("loop", setup.loop, LOOPS),
    ):
        if value not in allowed:
            raise PlanError(
                Msg(
                    "Unknown {label} {value!r}. To fix: use one of {allowed}.",
                    label=label,
                    value=value,
                    allowed=", ".join(allowed),
                )
            )
    for label, number in (
        ("micro-batch", setup.micro_batch),
        ("seq-len", setup.seq_len),
        ("grad-accum", setup.grad_accum),
        ("gpus", setup.gpus),
        ("tp", setup.tp),
        ("pp", setup.pp),
        ("pp-interleave", setup.pp_interleave),
    ):
        if number < 1:
            raise PlanError(Msg("--{label} must be at least 1, got {number}.", label=label, number=number))
    if setup.zero not in (0, 1, 2, 3):
        raise PlanError(Msg("--zero must be 0, 1, 2 or 3, got {zero}.", zero=setup.zero))
    if setup.gpus % (setup.tp * setup.pp):
        split = f"--tp {setup.tp}" + (f" x --pp {setup.pp}" if setup.pp > 1 else "")  # option names: no words
        raise PlanError(
            Msg(
                "{split} does not divide --gpus {gpus}. To fix: use divisors of the GPU count.",
                split=split,
                gpus=setup.gpus,
            )
        )
    if setup.offload == "optimizer+params" and setup.zero != 3:
        raise PlanError(Msg("Offloading parameters needs ZeRO-3 (FSDP full shard). To fix: add --zero 3."))
    if setup.lora_rank < 0:
        raise PlanError(Msg("--lora-rank must be positive, got {rank}.", rank=setup.lora_rank))
    if setup.precision == "bf16-fsdp" and (setup.zero < 2 or setup.lora):
        raise PlanError(
            Msg(
                "--precision bf16-fsdp is FSDP2's MixedPrecisionPolicy, for a full fine-tune sharded by FSDP. To fix: "
                "add --zero 3 (or 2), or, with LoRA, use --precision bf16-mixed."
            )
        )
    if setup.quant == "nf4" and not setup.lora:
        raise PlanError(Msg("NF4 weights are frozen, so --quant nf4 needs LoRA. To fix: add --lora-rank 16 (QLoRA)."))


def lora_targets_of(model: ModelSpec, setup: TrainSetup) -> tuple[str, ...]:
    """The module names LoRA adapts: `setup.lora_targets`, or the model's attention projections when it names none
    (LORA_DEFAULT_TARGETS; LORA_FAMILY_TARGETS for families that name them otherwise)."""
    if setup.lora_targets:
        return setup.lora_targets
    if model.family not in LORA_FAMILY_TARGETS:
        return LORA_DEFAULT_TARGETS
    present = {t.lora_target for t in model.layer_tensors}
    return tuple(t for t in LORA_FAMILY_TARGETS[model.family] if t in present)


def validate(model: ModelSpec, setup: TrainSetup) -> None:
    """Refuse setups that are impossible in general or for this model."""
    validate_setup(setup)
    if model.num_layers % (setup.pp * setup.pp_interleave):
        raise PlanError(
            Msg(
                "--pp {pp} x --pp-interleave {interleave} does not divide the model's {layers} layers. To fix: pick "
                "stage counts that divide the layers.",
                pp=setup.pp,
                interleave=setup.pp_interleave,
                layers=model.num_layers,
            )
        )
    if model.num_heads % setup.tp or model.num_kv_heads % setup.tp:
        raise PlanError(
            Msg(
                "--tp {tp} does not divide the model's {heads} attention heads and {kv_heads} key/value heads. To "
                "fix: use a tensor-parallel size that divides both.",
                tp=setup.tp,
                heads=model.num_heads,
                kv_heads=model.num_kv_heads,
            )
        )
    if setup.lora:
        targets = {t.lora_target for t in model.layer_tensors} | {t.lora_target for t in model.outer_tensors}
        unknown = [t for t in lora_targets_of(model, setup) if t not in targets]
        if unknown:
            raise PlanError(
                Msg(
                    "LoRA target(s) {unknown} are not modules of a {family} model. Valid: {valid}.",
                    unknown=", ".join(unknown),
                    family=model.family,
                    valid=", ".join(sorted(t for t in targets if t)),
                )
            )
    if setup.seq_len > model.max_positions and model.family in ("gpt2", "bert"):
        raise PlanError(
            Msg(
                "--seq-len {seq_len} exceeds the model's {positions} learned positions.",
                seq_len=setup.seq_len,
                positions=model.max_positions,
            )
        )


def stage_fraction(model: ModelSpec, pp: int) -> float:
    """Share of the parameters on the most loaded pipeline stage."""
    if pp == 1:
        return 1.0
    outer = model.params - model.blocks_params
    edge = max(model.embedding_params, outer - model.embedding_params)
    return (model.blocks_params / pp + edge) / model.params


def pipeline_activation_factor(setup: TrainSetup) -> float:
    if setup.pp == 1:
        return 1.0
    in_flight = min(1.0, setup.grad_accum / setup.pp)
    interleave = 1 + (setup.pp - 1) / (setup.pp * setup.pp_interleave) if setup.pp_interleave > 1 else 1.0
    return in_flight * interleave


def lora_params(model: ModelSpec, setup: TrainSetup) -> int:
    """Adapter parameters: r·(d_in + d_out) per adapted Linear (Hu et al. 2021; PEFT LoraLayer)."""
    total = 0
    adapted = lora_targets_of(model, setup)
    for tensor, copies in model.all_tensors():
        if tensor.lora_target in adapted and len(tensor.shape) >= 2:
            if len(tensor.shape) == 3:  # fused experts (E, d_out, d_in): one adapter pair per expert
                experts, d_out, d_in = tensor.shape
                total += copies * experts * setup.lora_rank * (d_in + d_out)
            else:
                d_out, d_in = tensor.shape
                total += copies * setup.lora_rank * (d_in + d_out)
    return total


def _fsdp_rank_elements(tensors: list[tuple[Tensor, int]], dp: int) -> int:
    """Elements of one rank's FSDP2 shards of `tensors` ((tensor, copies) pairs): each tensor is split on dim 0
    into `dp` chunks padded to the largest, ceil(d0/dp) rows (torch/distributed/fsdp/_fully_shard/_fsdp_param.py
    `_init_sharded_param`). Every rank's parameter and reduce-scattered gradient storage has this padded size,
    and so has rank 0's optimizer state; an all-gathered unit is `dp` times it."""
    return sum(copies * -(-t.shape[0] // dp) * (t.numel // t.shape[0]) for t, copies in tensors)


def fsdp_shard_fraction(model: ModelSpec, dp: int) -> float:
    """Rank 0's share of the parameters under FSDP2 (1/dp when every dim 0 divides evenly)."""
    return 1.0 if dp == 1 else _fsdp_rank_elements(model.all_tensors(), dp) / model.params


def _fsdp_gathered_bytes(model: ModelSpec, setup: TrainSetup, weight_bytes: int) -> dict[str, float]:
    """Unsharded parameters FSDP2 holds besides each rank's shards, at each moment of the step, with
    `fully_shard` applied to every block and then to the root (embeddings, final norm, head).

    ZeRO-3 (`reshard_after_forward=True`): after the forward only the root is unsharded (FSDP2 never reshards
    the root after forward: backward needs it first). At the top of backward the root's pre-backward hook has
    prefetched the last block; while a block is recomputed and run backward, it and the next one prefetched are
    gathered. ZeRO-2 (`reshard_after_forward=False`): every unit stays gathered from its forward until its
    backward. After backward every unit is resharded, so the optimizer steps on shards alone. A gathered unit is
    its all-gather output (the padded shards of all ranks), whose views are the unsharded parameters (measured
    with FSDPMemTracker: tests/plan/test_sharded.py).
    """
    if setup.zero < 2:
        return {}
    dp, t = setup.dp, setup.tp
    block = weight_bytes * dp * _fsdp_rank_elements([(x, 1) for x in model.layer_tensors], dp) / t
    outer = [(x, 1) for x in model.outer_tensors]
    if setup.pp > 1:  # the first stage holds the embedding, the last the final norm and head
        embed = [(x, 1) for x in model.outer_tensors if x.name.endswith("embed")]
        rest = [(x, 1) for x in model.outer_tensors if not x.name.endswith("embed")]
        outer = max(embed, rest, key=lambda ts: _fsdp_rank_elements(ts, dp))
    root = weight_bytes * dp * _fsdp_rank_elements(outer, dp) / t
    if setup.zero == 2:
        everything = root + block * model.num_layers / setup.pp
        return {"loss": everything, "backward": everything, "backward, recompute": everything}
    return {"loss": root, "backward": root + block, "backward, recompute": root + 2 * block}


def _optimizer_state_bytes(model: ModelSpec, setup: TrainSetup, trainable: int, p: _Precision) -> int:
    """Optimizer state for the trainable parameters (EleutherAI Transformer Math 101; §B2)."""
    s = 4 if setup.lora else p.state_bytes  # PEFT keeps adapters and their state in fp32
    master = 0 if setup.lora else p.master_bytes * trainable
    name = setup.optimizer
    if name == "adamw":
        return master + 2 * s * trainable
    if name == "adamw-8bit":
        return master + _adamw_8bit_state_bytes(_trainable_tensors(model, setup))
    if name in ("sgd-momentum", "lion"):
        return master + s * trainable
    if name == "sgd":
        return master
    # adafactor without momentum: row and column second moments per matrix (over its last two dimensions),
    # full for vectors (torch/optim/_adafactor.py `Adafactor._init_group`; transformers Adafactor).
    factored = 0
    for shape, copies in _trainable_tensors(model, setup):
        if len(shape) >= 2:
            factored += copies * math.prod(shape[:-2]) * (shape[-2] + shape[-1])
        else:
            factored += copies * math.prod(shape)
    return master + s * factored


def _trainable_tensors(model: ModelSpec, setup: TrainSetup) -> list[tuple[tuple[int, ...], int]]:
    """(shape, copies) of each trainable tensor: the model's, or LoRA's A (r x d_in) and B (d_out x r)."""
    if not setup.lora:
        return [(tensor.shape, copies) for tensor, copies in model.all_tensors()]
    out: list[tuple[tuple[int, ...], int]] = []
    adapted = lora_targets_of(model, setup)
    for tensor, copies in model.all_tensors():
        if tensor.lora_target in adapted and len(tensor.shape) >= 2:
            # Fused experts (E, d_out, d_in): PEFT's ParamWrapper stacks the experts' adapters into one A
            # (r·E x d_in) and one B (d_out x r·E) (peft 0.21 tuners/lora/layer.py), which factored optimizers see
            experts = math.prod(tensor.shape[:-2])
            d_out, d_in = tensor.shape[-2:]
            out += [((setup.lora_rank * experts, d_in), copies), ((d_out, setup.lora_rank * experts), copies)]
    return out


def _adamw_8bit_state_bytes(tensors: list[tuple[tuple[int, ...], int]]) -> int:
    """bitsandbytes AdamW8bit: two uint8 moments + fp32 absmax per block, fp32 moments for small tensors."""
    total, quantized = 0, False
    for shape, copies in tensors:
        n = math.prod(shape)
        if n >= ADAM8BIT_MIN_8BIT_NUMEL:
            total += copies * 2 * (n + 4 * math.ceil(n / ADAM8BIT_BLOCK))
            quantized = True
        else:
            total += copies * 2 * 4 * n
    return total + (ADAM8BIT_QMAP_BYTES if quantized else 0)


def _optimizer_temporary_bytes(setup: TrainSetup, trainable: int, largest: int, p: _Precision) -> int:
    """Temporaries of one optimizer step, `largest` the largest trainable tensor's values (measured with
    MemTracker: tests/plan/test_optimizers.py). Multi-tensor (foreach) AdamW, PyTorch's CUDA default, builds
    `exp_avg_sq.sqrt()` for all parameters at once (torch/optim/adamw.py `_multi_tensor_adamw`); foreach
    Adafactor its variance estimate (torch/optim/_adafactor.py `_multi_tensor_adafactor`)."""
    s = 4 if setup.lora else p.state_bytes
    master_grads = 0 if setup.lora or not p.master_bytes else 4 * trainable  # fp32 grads for the master step
    if setup.optimizer == "adamw":
        return master_grads + s * trainable
    if setup.optimizer == "adafactor":
        return master_grads + s * trainable
    if setup.optimizer == "lion":
        # One parameter at a time; `exp_avg.clone()` and its sum with the gradient are live together
        # (lion-pytorch `update_fn`, 0.2.5).
        return master_grads + 2 * s * largest
    # SGD (foreach) updates in place; bitsandbytes' 8-bit CUDA kernel keeps dequantized moments in registers
    # (bitsandbytes/backends/cuda/ops.py `_optimizer_update_8bit_blockwise_impl`, 0.50).
    return master_grads


def _compute(setup: TrainSetup) -> str:
    """ "fp32", "mixed" or "16bit": how activations are computed (activations.py). A LoRA base held in 16 bits
    runs its residual stream in 16 bits even under autocast."""
    return "16bit" if setup.lora and setup.precision != "fp32" else _PRECISION[setup.precision].compute


def planned_attention_kernel(model: ModelSpec, setup: TrainSetup) -> str:
    """The attention kernel a step of `model` runs on the setup's device (kernels.attention_kernel): q, k and v
    are fp32 in fp32 training, fp16 under fp16 autocast, bf16 otherwise. transformers passes SDPA no mask for
    causal, unpadded batches and no mask for BERT without padding. Families without an SDPA path in
    transformers (gemma2's soft-capping) run eager attention whatever --attention says."""
    compute = _compute(setup)
    if (FAMILY_GROUP[model.family], compute, "sdpa") not in BLOCK_COEFFICIENTS:
        return "eager"
    dtype = "fp32" if compute == "fp32" else ("fp16" if setup.precision == "fp16-mixed" else "bf16")
    kernel = attention_kernel(setup.target, setup.attention, dtype, model.attention_dropout, head_dim=model.head_dim)
    return mla_kernel(kernel, model) if model.kv_lora_rank else kernel


def _coefficients(model: ModelSpec, compute: str, kernel: str) -> BlockCoefficients:
    """The family's measured row: "eager" for eager attention, "sdpa" (a fused kernel keeping a log-sum-exp)
    for every SDPA kernel; `block_activation_bytes` adds what the math kernel and dropout keep besides."""
    coeffs = BLOCK_COEFFICIENTS.get((FAMILY_GROUP[model.family], compute, "eager" if kernel == "eager" else "sdpa"))
    if coeffs is None:  # pragma: no cover - every family has eager coefficients
        raise PlanError(
            Msg(
                "No activation coefficients for {family} {compute} {kernel}.",
                family=model.family,
                compute=compute,
                kernel=kernel,
            )
        )
    return coeffs


_SOFTMAX_IN_INPUT_DTYPE = frozenset({"gpt2", "bert"})  # their eager attention's softmax: no fp32 upcast


def _score_bytes(model: ModelSpec, setup: TrainSetup, kernel: str, compute: str) -> float:
    """Bytes per head, query token and key beyond the family's row, for s x s tensors the kernel keeps
    (kernels.py docstring): the math kernel's fp32 softmax output, and what dropout adds (_dropout_score_bytes)."""
    return (MATH_SOFTMAX_BYTES if kernel == "math" else 0.0) + _dropout_score_bytes(model, setup, kernel, compute)


def _dropout_score_bytes(model: ModelSpec, setup: TrainSetup, kernel: str, compute: str) -> float:
    """Bytes per head, query token and key that dropout on the attention probabilities adds to what the kernel
    keeps: its mask and output (fp32 in the math kernel, the activations' dtype in eager attention)."""
    if model.attention_dropout <= 0:
        return 0.0
    if kernel == "math":
        return dropout_mask_bytes(setup.target, 4) + 4
    if kernel == "eager":
        # Saved for backward (saved-tensor hooks: tests/plan/test_kernels.py): the dropout's noise, and its output,
        # which the product with V saves in place of the probabilities. Where the softmax runs in fp32 and is cast
        # back (transformers' `softmax(..., dtype=torch.float32).to(query.dtype)`, all but GPT-2 and BERT), in 16
        # bits those probabilities are the cast's copy, which the output replaces; elsewhere they are the softmax's
        # own output, kept anyway, so the output is new. Under autocast the step's peak also holds one more s x s
        # tensor with dropout than without (MemTracker on whole models: Llama -4.7 % without it, +0.8 % with it),
        # but in GPT-2, whose fp32 scores come from its mask, not an upcast (_dropout_replaces_cast).
        act = 4 if compute == "fp32" else 2
        return dropout_mask_bytes(setup.target, act) + (0 if _dropout_replaces_cast(model, compute) else act)
    return 0.0


def _fp32_scores(model: ModelSpec, compute: str) -> bool:
    """Whether eager attention's softmax runs in fp32: in fp32 training, in the families that upcast to it, and in
    GPT-2 under autocast, as the fp32 causal mask added to its scores promotes them (saved-tensor hooks:
    tests/plan/test_kernels.py). BERT's stays bf16 under CPU's autocast."""
    group = FAMILY_GROUP[model.family]
    return compute == "fp32" or group not in _SOFTMAX_IN_INPUT_DTYPE or (compute, group) == ("mixed", "gpt2")


def _dropout_replaces_cast(model: ModelSpec, compute: str) -> bool:
    """Whether eager attention's dropout output takes the place of the 16-bit copy of fp32 probabilities at the step's
    peak: in 16 bits, and in GPT-2 under autocast (MemTracker, 1 x 1,024 tokens, bf16-mixed: dropout adds 26.0
    MiB to the peak of its 3 blocks, as planned so; tests/plan/test_full_recompute.py GPT2_BERT). Under autocast
    the families that upcast hold the copy too (see _dropout_score_bytes)."""
    replacing = compute == "16bit" or FAMILY_GROUP[model.family] == "gpt2"
    return compute != "fp32" and replacing and _fp32_scores(model, compute)


def megatron_block_bytes(model: ModelSpec, setup: TrainSetup, tokens: int, checkpointing: str) -> float:
    """Megatron-LM's saved activations per block (Korthikanti et al. 2022, arXiv 2205.05198, Table 2), for
    16-bit activations (x2 in fp32). With SDPA (flash attention) the 5as²b attention-core term becomes the
    kernel's fp32 log-sum-exp, 4·a·s·b (planner-formulas §B3), fp32 whatever the activations' precision."""
    scale = 2 if setup.precision == "fp32" else 1
    sbh = scale * tokens * model.hidden_size
    t = setup.tp
    a, s = model.num_heads, setup.seq_len
    core = scale * 5 * a * s * tokens if setup.attention == "eager" else 4 * a * tokens
    if checkpointing == "full":
        out = 2 * sbh / (t if setup.sequence_parallel else 1)
    elif setup.sequence_parallel:
        out = (34 * sbh + (core if checkpointing == "none" else 0)) / t
    else:
        out = sbh * (10 + 24 / t) + (core / t if checkpointing == "none" else 0)
    return out


def block_activation_bytes(
    model: ModelSpec, setup: TrainSetup, tokens: int, *, core: bool = True, kernel: str = ""
) -> float:
    """Saved activations of one block for `tokens` tokens, per GPU (see activations.py), with `kernel` the
    attention kernel (planned_attention_kernel, computed when not given)."""
    if setup.kernels == "megatron":
        return megatron_block_bytes(model, setup, tokens, "none" if core else "selective")
    compute = _compute(setup)
    kernel = kernel or planned_attention_kernel(model, setup)
    c = _coefficients(model, compute, kernel)
    t = setup.tp
    if model.kv_lora_rank:  # DeepSeek-V3: MLA and its MoE, tensor by tensor (deepseek.py)
        linear = model.blocks_linear_params / model.num_layers  # autocast's copies, averaged over the blocks
        weights = c.c_w * (0 if setup.lora or setup.precision == "fp8" else linear) / t
        # Dropout on the probabilities keeps its mask and output, as in the other families (measured under full
        # checkpointing at 1 x 1,024 tokens: tests/plan/test_full_recompute.py; without them -11 to -37 %).
        dropout = _dropout_score_bytes(model, setup, mla_kernel(kernel, model), compute) if core else 0.0
        per_token = mla_block_bytes_per_token(model, compute, kernel, setup.seq_len, core)
        return tokens * (per_token + dropout * model.num_heads * setup.seq_len) / t + weights
    h_bytes = c.c_h * model.hidden_size
    if model.hidden_dropout > 0:  # each hidden-size dropout keeps its mask (kernels.dropout_mask_bytes)
        h_bytes += (
            model.hidden_dropout_sites
            * dropout_mask_bytes(setup.target, 4 if compute == "fp32" else 2)
            * (model.hidden_size)
        )
    h_part = h_bytes * (TP_REPLICATED_SHARE + (1 - TP_REPLICATED_SHARE) / t)
    # MoE: the router, dispatch and experts replace the dense MLP's terms, tensor by tensor (moe.py).
    ffn = moe_block_bytes_per_token(model, compute) if model.num_experts else c.c_f * model.intermediate_size
    sharded = c.c_q * model.q_size + c.c_kv * model.kv_size + ffn
    # Selective checkpointing recomputes the attention core: backward keeps only the core's inputs (q, k, v) and the
    # output o_proj saves, and drops everything the kernel saved inside it: the s x s tensors, the fused kernel's
    # log-sum-exp, the math kernel's fp32 copies (measured: benchmarks/kernel_accuracy.py's selective rows).
    if core and kernel == "math":  # fp32 copies of q, k and v instead of q, k, v and the fused kernel's log-sum-exp
        qkv_bytes = 4 if compute == "fp32" else 2
        sharded += MATH_QKV_BYTES * model.q_size - qkv_bytes * (model.q_size + 2 * model.kv_size)
    elif core:
        sharded += c.c_lse * model.num_heads
    if core:
        sharded += (c.c_s + _score_bytes(model, setup, kernel, compute)) * model.num_heads * setup.seq_len
    per_token = h_part + sharded / t
    # Float8Linear saves the fp32 weight itself, not a 16-bit copy (fp8.py).
    weight_copies = c.c_w * (0 if setup.lora or setup.precision == "fp8" else model.layer_linear_params) / t
    return tokens * per_token + weight_copies


def _encoder_head_terms(
    model: ModelSpec, setup: TrainSetup, tokens: int, decoder_terms: tuple[float, float, float]
) -> tuple[float, float, float]:
    """(head and embedding activations, logits at the top of backward, head weight gradient then): BERT's MLM
    head, embeddings and loss tensor by tensor (encoder.py); the decoder families' terms otherwise."""
    if model.family != "bert":
        return decoder_terms
    compute = _compute(setup)
    head_grad = decoder_terms[2]
    return mlm_outer_bytes(model, compute, tokens), mlm_backward_logits_bytes(model, tokens, head_grad, compute), 0.0


def _loss_bytes(model: ModelSpec, setup: TrainSetup, logit_values: float, logits16: float) -> float:
    """Logit-sized bytes live at the loss: the fp32 logits and log_softmax's output (+ the 16-bit logits). BERT in
    16 bits: its 16-bit logits and log_softmax's 16-bit output, as BertForMaskedLM takes CrossEntropyLoss of its
    logits without an upcast (measured: tests/plan/test_kernels.py, benchmarks/kernel_accuracy.py)."""
    if model.family == "bert" and _compute(setup) == "16bit":
        return logit_values * 4
    return logit_values * 8 + logits16


def _embedding_output_bytes(model: ModelSpec, setup: TrainSetup, tokens: int) -> float:
    """The embeddings' output (fp32 under autocast: the embedding weights are fp32), and the mask of the dropout
    some families apply to it (kernels.dropout_mask_bytes).

    The output, the first block's input, is kept only where that block's first operator saves it as it is. The
    RMSNorm of the Llama-style families upcasts its input to fp32 first and saves the copy (counted with the block),
    so a 16-bit output is freed once the block's residual add has read it; BERT's first Linear saves autocast's
    16-bit copy (measured: tests/plan/test_embeddings.py)."""
    p = _PRECISION[setup.precision]
    embed_bytes = 4 if p.compute == "mixed" and not setup.lora else p.act_bytes
    mask = dropout_mask_bytes(setup.target, embed_bytes) if model.embedding_dropout > 0 else 0
    compute = _compute(setup)
    upcasting_norm = FAMILY_GROUP.get(model.family) in ("llama", "phi3", "gemma", "gemma2")
    if (upcasting_norm and compute == "16bit") or (model.family == "bert" and compute == "mixed"):
        embed_bytes = 0
    return tokens * model.hidden_size * (embed_bytes + mask)


def _unquantized_experts_notes(model: ModelSpec, base_bytes: int) -> list[str]:
    """QLoRA of a MoE model: the experts bitsandbytes leaves unquantized (nf4_params), said with their size."""
    experts = sum(t.numel * c for t, c in model.all_tensors() if len(t.shape) == 3)
    if not experts:
        return []
    note = Msg(
        "NF4 applies to Linear layers only: this model's {gib:,.1f} GiB of MoE experts stay 16-bit, as transformers 5 "
        "holds them as 3-D parameters that bitsandbytes does not quantize (with transformers 4, whose experts were "
        "Linear layers, they were NF4).",
        gib=base_bytes * experts / 2**30,
    )
    return [note]


@functools.lru_cache(maxsize=1024)  # built once per size: a sweep plans thousands of setups
def _held_logits_note(gib: float) -> str:
    return Msg(
        "Counted: the {gib:,.2f} GiB of logits a training loop's `outputs` holds through backward. Hugging Face's "
        "Trainer frees them before backward (its compute_loss returns the loss only): plan it with --loop trainer.",
        gib=gib,
    )


def _post_core_params(model: ModelSpec) -> int:
    """A block's weights that backward reaches before its attention core: all its matmuls but q, k and v, the routed
    experts' included (their gradients are whole tensors, formed by then: tests/plan/test_selective.py)."""
    matmuls = sum(t.numel for t in model.layer_tensors if len(t.shape) >= 2)
    return max(matmuls - model.hidden_size * (model.q_size + 2 * model.kv_size), 0)


def _selective_recompute_phase(
    model: ModelSpec,
    setup: TrainSetup,
    tokens: int,
    kernel: str,
    block: float,
    live: tuple[float, float, float],
    grad_elem: int,
) -> dict[str, tuple[float, float, float, float]]:
    """Selective checkpointing: the top block's backward recomputes its attention core, with `live` (gradients,
    activations, logits at the top of backward) around it, less what backward has freed by then: the head's and the
    final norm's activations (not in `live`) and the block's own after its attention (MLP, o_proj's input, norms),
    whose weights' gradients it has formed instead. A kernel that keeps s x s tensors (math, eager) rebuilds them,
    and its backward adds their gradients (_core_backward_bytes). No phase without selective checkpointing, for
    fused kernels (their s x s never exists; rebuilding their log-sum-exp costs next to nothing) and for Megatron's."""
    if setup.checkpointing != "selective" or setup.kernels != "hf" or kernel not in ("math", "eager"):
        return {}
    core = block_activation_bytes(model, setup, tokens, kernel=kernel) - block
    if core <= 0:
        return {}
    rebuilt = core + _core_backward_bytes(model, setup, tokens, kernel)
    grads, activations, logits = live
    top_grads = 0 if setup.lora or _accumulated(setup) else grad_elem * _post_core_params(model) / setup.tp
    at_core = (grads + top_grads, activations - (1 - _pre_core_share(model, setup)) * block, logits)
    return {"backward, recompute": (*at_core, rebuilt)}


def _pre_core_share(model: ModelSpec, setup: TrainSetup) -> float:
    """The share of a block's saved activations live when backward reaches its attention core under the setup's
    checkpointing (PRE_CORE_SHARES)."""
    return PRE_CORE_SHARES.get((FAMILY_GROUP[model.family], setup.checkpointing), PRE_CORE_SHARE)


def _accumulated(setup: TrainSetup) -> bool:
    """Whether backward adds the weights' new gradients into the `.grad` of earlier micro-batches, as autograd does
    under accumulation, instead of forming them apart: not under ZeRO-2/3, which reduce-scatter each micro-batch's
    unsharded gradients into their shards (not measured apart)."""
    return setup.grad_accum > 1 and setup.zero < 2


def _core_backward_bytes(model: ModelSpec, setup: TrainSetup, tokens: int, kernel: str) -> float:
    """What the backward of an attention core that kept its s x s tensors (math, eager) adds while it runs, beside
    them; 0 for fused kernels and Megatron's (their s x s never exists)."""
    if setup.kernels != "hf" or kernel not in ("math", "eager"):
        return 0.0
    # Per head, query and key, backward of the core adds the probabilities' gradient (in the kernel's dtype)
    # and the scores' (in the softmax's: _softmax_bytes), live together. With dropout on the probabilities, the
    # dropout's output is freed before them (once the product with V is differentiated), but not under autocast
    # with eager attention where it did not replace a cast's copy. Eager attention's additive causal mask, one per
    # sequence in the parameters' dtype, is there too.
    # Fitted on the window's s x s share (benchmarks/recompute_window.py, Llama's small config at 4 x 128 to
    # 1 x 1,024 tokens, 2, 4 and 8 heads; tests/plan/test_selective.py's LONG): with 10 % dropout 4 B per head and
    # key in the math kernel; in eager attention 4.0, 6.0 and 4.0 (fp32, bf16-mixed, bf16-true) plus 4.6, 5.0 and
    # 2.2 B per key; without dropout, eager 8, 6 and 6 (and the math kernel's 8: tests/plan/test_deepseek.py).
    compute = _compute(setup)
    act = 4 if kernel == "math" or compute == "fp32" else 2
    grad_bytes = _softmax_bytes(model, compute, kernel) + act
    output_kept = kernel == "eager" and compute == "mixed" and not _dropout_replaces_cast(model, compute)
    if model.attention_dropout > 0 and not output_kept:
        grad_bytes -= act
    mask = eager_mask_bytes(model, setup, tokens, kernel)
    added = grad_bytes * model.num_heads / setup.tp * setup.seq_len * tokens + mask
    if kernel == "math":
        # Beside the scores' gradient its backward holds q's gradient in fp32, and in 16 bits, where it upcast q, k
        # and v, an fp32 one per query head more (k's and v's expanded to q's heads): 4 and 8 B per q element, k's
        # and v's heads aside (MemTracker on the kernel alone: tests/plan/test_kernels.py).
        added += (4 if compute == "fp32" else 8) * model.q_size / setup.tp * tokens
    return added


def _softmax_bytes(model: ModelSpec, compute: str, kernel: str) -> int:
    """Bytes per element of the attention core's softmax, and so of its gradient, the scores' (measured on CPU: a
    recomputed block's backward, tests/plan/test_full_recompute.py): fp32 in the math kernel and where eager
    attention's softmax runs in fp32 (_fp32_scores), 16-bit otherwise."""
    return 4 if kernel == "math" or _fp32_scores(model, compute) else 2


def eager_mask_bytes(model: ModelSpec, setup: TrainSetup, tokens: int, kernel: str) -> float:
    """Eager attention's additive causal masks: s x s per sequence, in the parameters' dtype (fp32 under autocast),
    one per kind of attention layer (full, sliding-window). transformers builds them for every decoder in eager
    attention and passes SDPA none (is_causal); BERT without padding gets none in either (measured: the masks the
    attention modules receive, tests/plan/test_masks.py)."""
    if kernel != "eager" or model.family == "bert":
        return 0.0
    return (2 if _compute(setup) == "16bit" else 4) * setup.seq_len * tokens * model.mask_kinds


def nf4_params(model: ModelSpec) -> int:
    """The parameters bitsandbytes quantizes to NF4 under transformers' `load_in_4bit`: the weights of nn.Linear
    modules (and GPT-2's Conv1D), but the output embeddings (transformers 5.24 `replace_with_bnb_linear`,
    `get_keys_to_not_convert`). MoE experts, 3-D parameters since transformers 5, and routers, which are no Linear
    modules, stay 16-bit (measured with bitsandbytes 0.50 on CPU: tests/plan/test_qlora.py)."""
    return sum(
        t.numel * c
        for t, c in model.all_tensors()
        if len(t.shape) == 2 and not t.name.endswith("embed") and t.name not in ("lm_head", "router")
    )


def estimate_training_memory(model: ModelSpec, setup: TrainSetup) -> MemoryEstimate:
    """Per-GPU training memory for `model` under `setup`."""
    validate(model, setup)
    p = _PRECISION[setup.precision]
    t, dp = setup.tp, setup.dp
    tokens = setup.micro_batch * setup.seq_len
    notes: list[str] = []

    # Weights, per GPU. LoRA: a frozen 16-bit (or NF4) base plus fp32 adapters.
    adapters = lora_params(model, setup) if setup.lora else 0
    trainable = adapters if setup.lora else model.params
    if setup.lora:
        base_bytes = 4 if setup.precision == "fp32" else 2
        if setup.quant == "nf4":
            linear = nf4_params(model)
            base = NF4_BYTES_PER_PARAM * linear + base_bytes * (model.params - linear)
            notes.extend(_unquantized_experts_notes(model, base_bytes))
        else:
            base = base_bytes * model.params
        weights_total = base + 4 * adapters
    else:
        weights_total = p.weight_bytes * model.params
    grad_elem = 4 if setup.lora else p.grad_bytes
    grads_total = grad_elem * trainable
    optimizer_total = _optimizer_state_bytes(model, setup, trainable, p)

    # Pipeline stages hold L/pp blocks; the first also the embedding, the last the head (Megatron: the most
    # loaded stage is the first, `(block/pp + embedding)/tp`, planner-formulas §1.4).
    stage = stage_fraction(model, setup.pp)
    weights = weights_total * stage / t
    grads = grads_total * stage / t
    optimizer = optimizer_total * stage / t
    largest_layer_bytes = p.weight_bytes * model.layer_params / t
    cpu = 0.0
    # Model states as the ZeRO paper counts them (Fig. 1): flat 1/dp shards, no gathered buffers, nothing offloaded.
    model_states = (
        weights / (dp if setup.zero >= 3 else 1)
        + grads / (dp if setup.zero >= 2 else 1)
        + optimizer / (dp if setup.zero >= 1 else 1)
    )
    # ZeRO-1: the flat share (DeepSpeed; ZeroRedundancyOptimizer's whole-tensor partition averages the same).
    # ZeRO-2/3: FSDP2 splits every tensor on dim 0 into dp chunks padded to the largest, rank 0's size.
    shard = fsdp_shard_fraction(model, dp) if setup.zero >= 2 else 1 / dp
    if setup.zero >= 1:
        optimizer *= shard
    if setup.zero >= 2:
        grads *= shard
        weights *= shard  # each rank keeps its shard of the parameters (FSDP2's sharded nn.Parameters)
    # Unsharded parameters FSDP2 holds besides the shards, by moment of the step (0 outside FSDP).
    fsdp_mixed = setup.precision == "bf16-fsdp"
    gather_bytes = FSDP_GATHER_BYTES if fsdp_mixed else p.weight_bytes
    gathered = _fsdp_gathered_bytes(model, setup, gather_bytes) if setup.offload != "optimizer+params" else {}
    # DDP (stages 0-1 on more than one GPU) copies gradients into flat buckets for its all-reduce and keeps them
    # for the module's life: one more gradient-sized buffer (torch DistributedDataParallel's
    # `gradient_as_bucket_view=False`, its default and Lightning's and accelerate's; measured: test_sharded.py).
    ddp_buckets = grads if setup.zero <= 1 and dp > 1 and setup.offload == "none" else 0.0
    rank_states = weights + grads + ddp_buckets + optimizer
    if setup.offload != "none":
        cpu += optimizer
        optimizer = 0
        if setup.optimizer != "sgd":
            notes.append("The optimizer step runs on the CPU (DeepSpeed ZeRO-Offload).")
    if setup.optimizer == "adamw-8bit":  # MemTracker sees bitsandbytes' step as one operator
        notes.append(
            "8-bit AdamW is planned as bitsandbytes' AdamW8bit, whose state treino's tests measure; its step's "
            "temporaries (none: the CUDA kernel updates in place) come from its source, not a measurement."
        )
    if setup.offload == "optimizer+params":
        # The shards live on the CPU; the GPU holds the gathered layers: the current one and one prefetched
        # (DeepSpeed's estimator, planner-formulas §1.3: `largest_layer_memory`).
        cpu += weights
        weights = 2 * largest_layer_bytes

    # Activations per micro-batch.
    L = model.num_layers
    kernel = planned_attention_kernel(model, setup)
    block = block_activation_bytes(model, setup, tokens, core=setup.checkpointing == "none", kernel=kernel)
    embed_out = _embedding_output_bytes(model, setup, tokens)
    if setup.checkpointing == "full":
        # Each block keeps only its input; in backward one block at a time is recomputed
        # (HF gradient_checkpointing, torch.utils.checkpoint, non-reentrant).
        residual = 4 if p.compute != "16bit" and not (setup.lora and setup.precision != "fp32") else 2
        stored = L * tokens * model.hidden_size * residual / t
        if setup.kernels == "megatron":
            stored = L * megatron_block_bytes(model, setup, tokens, "full")
        live_block = block_activation_bytes(model, setup, tokens, kernel=kernel)
        activations = stored + embed_out
    else:
        activations = L * block + embed_out
        live_block = 0.0
    # 1F1B: the first stage keeps min(m, pp) micro-batches of its L/pp blocks = L blocks' worth; interleaving
    # adds (pp-1)/(pp·v) (Korthikanti et al. 2022, §4.2.3 and Fig. 1).
    activations *= pipeline_activation_factor(setup)
    outer: float = 2 * tokens * model.hidden_size * 4  # final norm's fp32 input and output feeding the head

    # Logits and loss: HF upcasts the logits to fp32 for cross-entropy (transformers loss_utils
    # ForCausalLMLoss), and log_softmax keeps its fp32 output (§B3: "2 x 4·b·s·V" at the loss boundary).
    V = model.vocab_size / t
    logits16 = 0 if p.compute == "fp32" else 2 * tokens * V
    # Autocast casts the head's fp32 weight to 16 bits for its matmul and keeps the copy past the loss: its cache
    # lives as long as the forward's autocast region, and autograd saves the copy for the logits' backward (measured:
    # V 2,048 -> 4,096 adds H x 2,048 x 2 B more at the loss and at the top of backward, tests/plan/test_head.py).
    # BERT's head (encoder.py) counts its own.
    head_copy = 2 * model.hidden_size * V if _compute(setup) == "mixed" and model.family != "bert" else 0.0
    loss_time = _loss_bytes(model, setup, tokens * V, logits16) + head_copy
    # Top of backward: the saved log_softmax output, its gradient, and the logits' gradient that the LM head's
    # weight gradient is formed from (fp32). With a frozen head (LoRA) that third tensor is not needed
    # (both measured with MemTracker: tests/plan/test_accuracy.py, test_lora.py).
    # A frozen 16-bit head still passes the logits' gradient back in its dtype (measured, test_lora.py).
    backward_time = (tokens * V * 8 + logits16 if setup.lora else tokens * V * 12) + head_copy
    # The model's outputs hold its logits (in the compute dtype) until the step ends, as a training loop's
    # `outputs` does (measured: tests/trace/test_parity.py). At the loss they are the logits counted above; the
    # optimizer step's phase leaves them out (tests/plan/test_optimizers.py measures the step alone). A loop that
    # keeps only the loss (Hugging Face's Trainer) frees them before backward (measured: tests/plan/test_loop.py).
    held_logits = tokens * V * (4 if p.compute == "fp32" else 2)
    if setup.loop == "plain":
        notes.append(_held_logits_note(round(held_logits / 2**30, 2)))
    else:
        held_logits = 0
    if model.logit_softcap:  # gemma2 (transformers Gemma2ForCausalLM) soft-caps the logits
        softcap = tokens * V * (4 if p.compute == "fp32" else 2)  # tanh keeps its output for backward
        loss_time += softcap
        backward_time += softcap

    accum_grads = grads if setup.grad_accum > 1 else 0.0
    head_grad_bytes = FSDP_UNSHARDED_GRAD_BYTES if fsdp_mixed else grad_elem
    head_elements = 0 if setup.lora else model.vocab_size * model.hidden_size / t
    head_grad = head_grad_bytes * head_elements
    outer, backward_time, head_grad = _encoder_head_terms(model, setup, tokens, (outer, backward_time, head_grad))
    backward_time += held_logits  # (BERT's head terms replace the decoders' above; its outputs hold logits too)
    largest_tensor = max((math.prod(shape) for shape, _ in _trainable_tensors(model, setup)), default=0)
    opt_temp = 0.0 if setup.offload != "none" else _optimizer_temporary_bytes(setup, trainable, largest_tensor, p)
    opt_temp *= stage  # each pipeline stage steps its own parameters
    if setup.zero >= 1:
        opt_temp /= dp
    saved = activations + outer
    # The head's weight gradient forms after log_softmax's backward has freed its two tensors: beside it only the
    # logits' gradient in the compute dtype, and under autocast the gradient is the 16-bit matmul's output, cast to
    # fp32 only after (measured: tests/plan/test_head.py). At a few tokens per step this moment is the larger one;
    # at the usual sizes the top of backward is.
    top = (accum_grads + ddp_buckets, saved, backward_time, 0.0)
    head_mm_grad = (2 if p.compute == "mixed" else head_grad_bytes) * head_elements if head_grad else 0.0
    head_logits = tokens * V * (4 if p.compute == "fp32" else 2) + head_copy + held_logits
    head = (accum_grads + head_mm_grad + ddp_buckets, saved, head_logits, 0.0)
    # Live tensors at each moment: (gradients, activations, logits, temporaries) besides weights + optimizer.
    phases: dict[str, tuple[float, float, float, float]] = {
        "loss": (accum_grads + ddp_buckets, saved, loss_time, 0.0),
        "backward": max(top, head, key=sum),
        "optimizer step": (grads + ddp_buckets, 0.0, 0.0, opt_temp / t),
    }
    if setup.checkpointing == "full":  # the last block recomputed, with nearly all gradients present
        # Its backward then reaches the attention core: a kernel that kept s x s tensors adds their gradients (as
        # under selective checkpointing), while the block's later tensors (MLP, o_proj's input) are freed by then.
        core_backward = _core_backward_bytes(model, setup, tokens, kernel)
        at_core = live_block - (1 - _pre_core_share(model, setup)) * block + core_backward if core_backward else 0.0
        phases["backward, recompute"] = (grads + ddp_buckets, activations, held_logits, max(live_block, at_core))
    # By the top block's backward the head's gradient is formed. With accumulation, autograd has added an untied
    # head's into the `.grad` that accum_grads counts already and freed it (measured: tests/plan/test_selective.py,
    # one micro-batch against two); a tied head's waits in autograd's buffer for the embeddings' part.
    fresh_head = head_grad if model.tied_embeddings or not _accumulated(setup) else 0.0
    live = (accum_grads + fresh_head + ddp_buckets, activations, held_logits)  # at the top block's backward
    phases |= _selective_recompute_phase(model, setup, tokens, kernel, block, live, grad_elem)
    totals = {k: weights + gathered.get(k, 0.0) + optimizer + sum(v) for k, v in phases.items()}
    phase = max(totals, key=lambda k: totals[k])
    live_grads, live_act, live_logits, live_temp = phases[phase]
    peak_tensor = totals[phase]
    overhead = setup.cuda_context_bytes + setup.allocator_reserve_fraction * peak_tensor
    return MemoryEstimate(
        params=model.params,
        trainable_params=trainable,
        weights_bytes=round(weights + gathered.get(phase, 0.0)),
        gradients_bytes=round(live_grads),
        optimizer_bytes=round(optimizer),
        activations_bytes=round(live_act),
        logits_bytes=round(live_logits),
        temporary_bytes=round(live_temp),
        peak_tensor_bytes=round(peak_tensor),
        overhead_bytes=round(overhead),
        peak_bytes=round(peak_tensor + overhead),
        peak_phase=phase,
        attention_kernel=kernel,
        device=str(setup.target),
        phase_peaks_bytes=tuple((k, round(v)) for k, v in totals.items()),
        saved_activations_bytes=round(saved),
        model_state_bytes=round(model_states),
        cpu_offload_bytes=round(cpu),
        notes=tuple(notes),
        rank_model_state_bytes=round(rank_states),
    )
