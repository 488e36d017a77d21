"""Selective checkpointing planned against figures measured with MemTracker on real CPU tensors.

The figures are benchmarks/recompute_window.py's (2026-12-07; torch 2.13.0, transformers 5.24.0, CPU, the small
configs of tests/plan/families.py with 10 % dropout where the family's default has none, micro-batch 2 x 256):
the live tensors while backward rebuilds the top block's attention core (the "window"), and the step's peak. They
are recorded here so that these checks run in the fast suite (and so under `make mutate`); the slow tests measure
the peaks again (tests/plan/test_accuracy.py, benchmarks/kernel_accuracy.py's full grid).

Three misses they caught, fixed 2026-12-07: the math kernel's fp32 copies of q, k and v and a fused kernel's
log-sum-exp were counted as kept by a block whose core is recomputed (+1 MiB a block in bf16-true: gemma +10.3 %);
and the recompute's phase counted every saved activation, though backward has freed the head's and the top block's
own after its attention by then (+14 %, and BERT's peak +13.2 %); and at 1,024 tokens the phase counted one fp32
s x s gradient too many and missed eager attention's causal mask (LONG: +9 to +17 %, and -4.8 %).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.plan.families import SMALL, cpu_setup, dropout_on, with_dropout
from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.plan.memory import _post_core_params

MIB = 2**20
# (family, precision, attention) -> (window, peak), MiB, measured
MEASURED = {
    ("bert", "fp32", "sdpa"): (36.70, 41.83),
    ("bert", "bf16-mixed", "sdpa"): (31.67, 35.73),
    ("bert", "bf16-mixed", "eager"): (27.05, 35.73),
    ("bert", "bf16-true", "sdpa"): (22.99, 22.99),
    ("bert", "bf16-true", "eager"): (18.36, 20.92),
    ("llama", "fp32", "sdpa"): (38.51, 43.88),
    ("llama", "fp32", "eager"): (39.01, 44.38),
    ("llama", "bf16-mixed", "sdpa"): (34.70, 39.07),
    ("llama", "bf16-mixed", "eager"): (34.14, 39.57),
    ("llama", "bf16-true", "sdpa"): (24.51, 28.83),
    ("llama", "bf16-true", "eager"): (21.89, 29.08),
    ("gemma", "fp32", "sdpa"): (37.06, 41.90),
    ("gemma", "fp32", "eager"): (37.56, 42.40),
    ("gemma", "bf16-mixed", "sdpa"): (33.46, 37.02),
    ("gemma", "bf16-mixed", "eager"): (32.22, 37.52),
    ("gemma", "bf16-true", "sdpa"): (24.91, 28.71),
    ("gemma", "bf16-true", "eager"): (21.04, 28.96),
    ("gpt_neox", "bf16-mixed", "eager"): (32.64, 37.11),
    ("gpt_neox", "bf16-true", "sdpa"): (23.59, 27.19),
    ("gpt_neox", "bf16-true", "eager"): (20.72, 27.44),
    ("gpt2", "bf16-true", "sdpa"): (26.83, 32.05),
    ("phi3", "bf16-true", "sdpa"): (25.01, 29.58),
    ("mixtral", "bf16-true", "sdpa"): (28.32, 32.95),
    ("qwen2", "bf16-true", "sdpa"): (23.02, 27.33),
    ("qwen2_moe", "bf16-true", "sdpa"): (31.37, 37.24),
}
# Issue 18's bound for a plan's peak. The phase is held to the same above (the worst measured is gemma, bf16-true,
# eager: +5.8 %: the share of a block still live at its core is taken at the largest one measured) and to 5 % below,
# the side where a plan would promise memory it does not have (worst measured: BERT, bf16-mixed, math, -3.8 %).
BOUND, UNDER_BOUND = 0.10, 0.05

# The same window at 1 x 1,024 tokens, where the rebuilt s x s tensors and their gradients are most of it (MiB,
# measured 2026-12-07 as MEASURED; `recompute_window.py --micro-batch 1 --seq-len 1024`; the 2- and 8-head rows are
# Llama's small config with that many query and key-value heads; False: the family's default, no attention dropout).
# (family, precision, attention, heads, 10 % attention dropout) -> window.
LONG = {
    ("llama", "fp32", "sdpa", 4, True): 111.344,
    ("llama", "fp32", "eager", 4, True): 114.844,
    ("llama", "bf16-mixed", "sdpa", 4, True): 102.597,
    ("llama", "bf16-mixed", "eager", 4, True): 104.847,
    ("llama", "bf16-true", "sdpa", 4, True): 90.193,
    ("llama", "bf16-true", "eager", 4, True): 74.193,
    ("gpt_neox", "fp32", "sdpa", 4, True): 109.003,
    ("gpt_neox", "fp32", "eager", 4, True): 112.003,
    ("gpt_neox", "bf16-mixed", "sdpa", 4, True): 98.846,
    ("gpt_neox", "bf16-mixed", "eager", 4, True): 101.096,
    ("gpt_neox", "bf16-true", "sdpa", 4, True): 88.013,
    ("gpt_neox", "bf16-true", "eager", 4, True): 71.763,
    ("gemma", "fp32", "sdpa", 4, True): 111.049,
    ("gemma", "bf16-mixed", "sdpa", 4, True): 102.201,
    ("llama", "fp32", "eager", 8, True): 179.781,
    ("llama", "bf16-mixed", "eager", 8, True): 170.504,
    ("llama", "bf16-true", "eager", 8, True): 122.912,
    ("llama", "fp32", "eager", 2, True): 84.156,
    ("llama", "bf16-mixed", "eager", 2, True): 74.879,
    ("llama", "bf16-true", "eager", 2, True): 51.100,
    ("llama", "fp32", "eager", 4, False): 97.844,
    ("llama", "bf16-mixed", "eager", 4, False): 88.847,
    ("llama", "bf16-true", "eager", 4, False): 74.193,
}
# Measured: -1.8 % to +1.9 %. Until 2026-12-07 the plan counted two s x s gradients where backward holds one
# (+9 to +17 % here) and left out eager attention's causal mask (-4.8 % in bf16-mixed).
LONG_BOUND = 0.03


def plan(family: str, precision: str, attention: str) -> tuple[float, float, str]:
    cfg = dropout_on(family)
    setup = cpu_setup(precision, attention, "selective")
    estimate = estimate_training_memory(model_from_config(cfg), setup)
    phase = dict(estimate.phase_peaks_bytes)["backward, recompute"]
    return phase / MIB, estimate.peak_tensor_bytes / MIB, estimate.attention_kernel


@pytest.mark.parametrize("case", sorted(MEASURED), ids=["-".join(c) for c in sorted(MEASURED)])
def test_the_recompute_phase_and_the_peak_follow_memtracker(case: tuple[str, str, str]) -> None:
    window, peak = MEASURED[case]
    planned_window, planned_peak, kernel = plan(*case)
    assert -UNDER_BOUND <= planned_window / window - 1 <= BOUND, f"{case} ({kernel}): {planned_window:.2f} vs {window}"
    assert abs(planned_peak / peak - 1) <= BOUND, f"{case} ({kernel}): peak {planned_peak:.2f} against {peak}"


@pytest.mark.parametrize("case", sorted(LONG), ids=["-".join(map(str, c)) for c in sorted(LONG)])
def test_the_recompute_phase_at_1024_tokens_follows_memtracker(case: tuple[str, str, str, int, bool]) -> None:
    """Where the s x s tensors dominate, their count is what shows: the probabilities' and the scores' gradients
    beside the rebuilt tensors, less the dropout's output where backward has freed it, eager attention's causal
    mask once per sequence (the 2-, 4- and 8-head rows tell it from a per-head tensor), and the math kernel's fp32
    gradients of q, k and v."""
    family, precision, attention, heads, dropout = case
    cfg = dropout_on(family) if dropout else SMALL[family]
    if heads != cfg["num_attention_heads"]:
        cfg = {**cfg, "num_attention_heads": heads, "num_key_value_heads": heads}
    estimate = estimate_training_memory(model_from_config(cfg), cpu_setup(precision, attention, "selective", 1, 1024))
    planned = dict(estimate.phase_peaks_bytes)["backward, recompute"] / MIB
    assert abs(planned / LONG[case] - 1) <= LONG_BOUND, f"{case} ({estimate.attention_kernel}): {planned:.2f}"


def test_the_math_kernel_with_dropout_is_planned_on_cpu() -> None:
    """The bf16-true SDPA rows above are the math kernel's (CPU SDPA with dropout), the corner they were found in."""
    assert plan("bert", "bf16-true", "sdpa")[2] == "math"
    assert plan("gemma", "bf16-true", "sdpa")[2] == "math"


def test_median_error_over_the_measured_cases_within_3_percent() -> None:
    errors = sorted(abs(plan(*case)[1] / peak - 1) for case, (_, peak) in MEASURED.items())
    assert errors[len(errors) // 2] <= 0.03, errors


def test_the_gradients_formed_before_the_recompute() -> None:
    """BERT, bf16-true, the math kernel: the recompute is the step's peak, and the gradients live there are the top
    block's after its attention (o_proj and the MLP, bf16): MemTracker's GRAD at that peak, 0.32 MiB (measured as
    MEASURED above). Without them the plan says 0."""
    cfg = SMALL["bert"]
    setup = cpu_setup("bf16-true", "sdpa", "selective")
    estimate = estimate_training_memory(model_from_config(cfg), setup)
    assert estimate.peak_phase == "backward, recompute"
    assert estimate.gradients_bytes / MIB == pytest.approx(0.32, rel=0.15)


@pytest.mark.parametrize("family", ["llama", "gemma", "bert"])
@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
def test_a_recomputed_core_keeps_nothing_of_its_kernel(family: str, precision: str) -> None:
    """torch.utils.checkpoint saves the checkpointed function's inputs and nothing it computes: a block whose core
    is recomputed keeps the same bytes whichever kernel runs inside (the math kernel's fp32 copies and a fused
    kernel's log-sum-exp are rebuilt in backward), while without checkpointing the kernels keep different ones."""
    from treino.plan.memory import block_activation_bytes

    model = model_from_config(SMALL[family])
    setup = cpu_setup(precision, "sdpa", "selective")
    kept = {k: block_activation_bytes(model, setup, 512, core=False, kernel=k) for k in ("math", "flash-cpu", "flash")}
    whole = {k: block_activation_bytes(model, setup, 512, core=True, kernel=k) for k in ("math", "flash-cpu")}
    assert len(set(kept.values())) == 1, kept
    assert whole["math"] != whole["flash-cpu"]
    # The fused kernel saves q, k, v, its output (o_proj's input too) and an fp32 log-sum-exp per head and token
    # (saved-tensor hooks on CPU SDPA, torch 2.13): recomputing the core frees that log-sum-exp alone.
    freed = whole["flash-cpu"] - kept["flash-cpu"]
    assert 4 * model.num_heads * 512 <= freed <= 5 * model.num_heads * 512, freed


def test_tensor_parallel_ranks_rebuild_their_own_heads() -> None:
    """Megatron's tensor parallelism splits the attention heads over the ranks (Shoeybi et al. 2019, §3): each
    rank rebuilds the s x s tensors of its heads only, so at 4,096 tokens, where those tensors are most of the
    recompute, two ranks each hold well under what one GPU holds."""
    model = model_from_config(with_dropout(SMALL["llama"]))
    phases = {}
    for tp in (1, 2):
        setup = replace(cpu_setup("bf16-true", "sdpa", "selective", 1, 4096), tp=tp, gpus=tp)
        phases[tp] = dict(estimate_training_memory(model, setup).phase_peaks_bytes)["backward, recompute"]
    assert phases[2] < 0.6 * phases[1], phases


@pytest.mark.parametrize("precision", ["bf16-mixed", "bf16-true"])
def test_a_fused_kernel_has_nothing_to_rebuild(precision: str) -> None:
    """On a CUDA GPU (flash, cuDNN) the attention core keeps no s x s tensor: recomputing it only frees its
    log-sum-exp, so the plan has no recompute phase and a peak no higher than without checkpointing. (Once, the
    moved log-sum-exp made a phase with two phantom s x s gradients: Llama-3-8B at 8,192 tokens planned 3 % above
    no checkpointing.)"""
    model = model_from_config(SMALL["llama"])
    plans = {
        c: estimate_training_memory(
            model, TrainSetup(micro_batch=1, seq_len=8192, precision=precision, checkpointing=c)
        )
        for c in ("none", "selective")
    }
    assert plans["selective"].attention_kernel in ("flash", "cudnn", "efficient")
    assert "backward, recompute" not in dict(plans["selective"].phase_peaks_bytes)
    assert plans["selective"].peak_tensor_bytes <= plans["none"].peak_tensor_bytes


# LoRA (PEFT, r = 16 on q, k, v and o_proj, a bf16 base under bf16 autocast) with selective checkpointing, Llama's
# small config with 10 % attention dropout: (attention, micro-batch, sequence) -> (window, peak), MiB, measured
# 2026-12-07 as MEASURED (recompute_window.py's tracker around a PEFT model).
LORA = {
    ("eager", 2, 256): (16.721, 23.865),
    ("eager", 1, 1024): (68.148, 68.148),
    ("sdpa", 2, 256): (19.346, 23.615),
    ("sdpa", 1, 1024): (84.148, 84.148),
}


@pytest.mark.parametrize("case", sorted(LORA), ids=["-".join(map(str, c)) for c in sorted(LORA)])
def test_a_lora_recompute_holds_no_gradients_of_the_frozen_weights(case: tuple[str, int, int]) -> None:
    """A frozen base forms no weight gradients: when backward reaches the top block's core, only the adapters'
    gradients exist (measured: +2.0 to +6.7 % for the phase, -1.3 to +3.7 % for the peak). Counting the gradients
    of o_proj and the MLP as in full training would put the 2 x 256 eager phase above the bound."""
    attention, micro_batch, seq_len = case
    window, peak = LORA[case]
    targets = ("q_proj", "k_proj", "v_proj", "o_proj")
    setup = replace(cpu_setup("bf16-mixed", attention, "selective", micro_batch, seq_len), lora_rank=16)
    estimate = estimate_training_memory(model_from_config(dropout_on("llama")), replace(setup, lora_targets=targets))
    planned = dict(estimate.phase_peaks_bytes)["backward, recompute"] / MIB
    assert -UNDER_BOUND <= planned / window - 1 <= BOUND, f"{case}: {planned:.2f} vs {window}"
    assert abs(estimate.peak_tensor_bytes / MIB / peak - 1) <= BOUND, f"{case}: peak {estimate.peak_tensor_bytes}"


def grads_at_top_core(cfg: dict[str, Any], micro_batches: int = 1) -> int:
    """The bytes of `.grad` tensors that exist when backward reaches the top block's attention core (the gradient of
    o_proj's input), in the last of `micro_batches` forward/backward passes accumulated without zeroing (fp32)."""
    torch = pytest.importorskip("torch")
    engine = pytest.importorskip("treino.trace.engine")
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision="fp32", attention="sdpa")
    top = cfg["num_hidden_layers"] - 1
    o_proj = next(
        m for name, m in model.named_modules() if name.endswith((f"{top}.self_attn.o_proj", f"{top}.attention.dense"))
    )
    formed: list[int] = []

    def at_the_core(module: Any, args: Any) -> None:
        args[0].register_hook(
            lambda _: formed.append(sum(p.grad.nbytes for p in model.parameters() if p.grad is not None))
        )

    o_proj.register_forward_pre_hook(at_the_core)
    model.train()
    for _ in range(micro_batches):
        model(**engine.lm_batch(cfg, 1, 16)).loss.backward()
    return formed[-1]


@pytest.mark.parametrize("family", ["llama", "phi3", "gpt_neox", "mixtral", "qwen2_moe"])
def test_the_gradients_formed_before_the_top_blocks_core_are_the_planned_weights(family: str) -> None:
    """When backward reaches the top block's attention core (the gradient of o_proj's input), the head's and that
    block's later weights have their gradients: what `_post_core_params` counts, plus the head. Measured as the
    `.grad` tensors that exist then (fp32, untied heads: a tied head's gradient waits in autograd's buffer until the
    embeddings' part is added). Beyond the planned bytes only norms and biases, 1 to 5 KiB; MoE blocks' routed
    experts are among these weights (left out until 2026-12-07: 1 MiB of Mixtral's small config)."""
    cfg = SMALL[family]
    formed = grads_at_top_core(cfg)
    spec = model_from_config(cfg)
    planned = 4 * (_post_core_params(spec) + spec.vocab_size * spec.hidden_size)
    assert 0 <= formed - planned <= 8 * 1024, f"{formed:,} B formed, {planned:,} planned"


def recompute_phase(cfg: dict[str, Any], grad_accum: int, tp: int = 1) -> float:
    """The plan's live bytes while backward rebuilds the top block's core (fp32, the math kernel at 1 x 16)."""
    setup = replace(cpu_setup("fp32", "sdpa", "selective", 1, 16), grad_accum=grad_accum, tp=tp, gpus=tp)
    return dict(estimate_training_memory(model_from_config(cfg), setup).phase_peaks_bytes)["backward, recompute"]


@pytest.mark.parametrize("family", ["llama", "phi3", "mixtral", "qwen2"])
def test_accumulated_gradients_are_counted_once_at_the_core(family: str) -> None:
    """From the second accumulated micro-batch on, every weight has its `.grad` when backward reaches the top
    block's core: the head's and the block's later gradients are added into theirs, not formed beside them. So the
    plan's phase grows from one micro-batch to two by every gradient less those two; the activations and logits
    are the same. Measured as the `.grad` bytes that exist at the core (until 2026-12-07 the plan counted the head's
    gradient twice there: 1 MiB of these configs, a gigabyte or more of an 8B model's). Qwen2's head is tied: its
    new gradient waits in autograd's buffer for the embeddings' part, after one micro-batch as after two, so the
    plan counts it at both."""
    cfg = dropout_on(family)
    planned = recompute_phase(cfg, 2) - recompute_phase(cfg, 1)
    measured = grads_at_top_core(cfg, 2) - grads_at_top_core(cfg, 1)
    assert abs(planned - measured) <= 8 * 1024, f"planned {planned:,.0f} B more, measured {measured:,} B"


def test_a_tensor_parallel_rank_forms_its_share_of_the_gradients() -> None:
    """Megatron's tensor parallelism splits each block's q, k, v, o_proj and MLP weights and the vocabulary over
    the ranks (Shoeybi et al. 2019, §3): a rank of Llama's small config at tp = 2 holds the weights of the same
    model with half the heads (of the same size), half the MLP and half the vocabulary. Measured on that model, as
    above: its gradients at the core, one micro-batch against two, are the plan's for one rank of tp = 2 (norms,
    which every rank keeps whole, aside)."""
    cfg = dropout_on("llama")
    rank = {
        **cfg,
        "num_attention_heads": cfg["num_attention_heads"] // 2,
        "num_key_value_heads": cfg["num_key_value_heads"] // 2,
        "head_dim": cfg["hidden_size"] // cfg["num_attention_heads"],
        "intermediate_size": cfg["intermediate_size"] // 2,
        "vocab_size": cfg["vocab_size"] // 2,
    }
    planned = recompute_phase(cfg, 2, tp=2) - recompute_phase(cfg, 1, tp=2)
    measured = grads_at_top_core(rank, 2) - grads_at_top_core(rank, 1)
    assert abs(planned - measured) <= 8 * 1024, f"planned {planned:,.0f} B more, measured {measured:,} B"
