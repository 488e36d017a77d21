"""Full checkpointing at 1 x 1,024 tokens, where a recomputed block's s x s tensors are most of the peak: its
backward through the attention core adds their gradients (and eager attention's causal mask) while the block's later
tensors are already freed. Until 2026-12-07 the plan counted the recomputed block alone: 28 to 33 % under MemTracker
for Llama with eager attention (the only rows measured against the old plan); fused kernels (flash on CPU) have no
s x s tensors and were right.
"""

from __future__ import annotations

import pytest

from tests.plan.families import DEEPSEEK_V3, SMALL, cpu_setup, dropout_on, with_dropout, without_dropout
from treino.plan import estimate_training_memory, model_from_config

MIB = 2**20
# (family, precision, attention, 10 % dropout) -> peak in MiB, measured 2026-12-07 on CPU with
# tests/plan/families.planned_against_measured(cfg, precision, attention, "full", 1, 1024) (MemTracker, torch 2.13.0,
# transformers 5.24.0). With dropout, CPU SDPA takes the math kernel, which keeps its s x s tensors.
MEASURED = {
    ("llama", "fp32", "eager", False): 78.96,
    ("llama", "fp32", "eager", True): 95.96,
    ("llama", "fp32", "sdpa", False): 47.51,
    ("llama", "fp32", "sdpa", True): 91.96,
    ("llama", "bf16-mixed", "eager", False): 74.53,
    ("llama", "bf16-mixed", "eager", True): 90.53,
    ("llama", "bf16-mixed", "sdpa", False): 43.76,
    ("llama", "bf16-mixed", "sdpa", True): 88.28,
    ("llama", "bf16-true", "eager", False): 64.00,
    ("llama", "bf16-true", "eager", True): 64.00,
    ("llama", "bf16-true", "sdpa", False): 36.02,
    ("llama", "bf16-true", "sdpa", True): 79.75,
    ("gpt_neox", "fp32", "eager", False): 78.98,
    ("gpt_neox", "fp32", "eager", True): 97.48,
    ("gpt_neox", "fp32", "sdpa", False): 47.40,
    ("gpt_neox", "fp32", "sdpa", True): 93.48,
    ("gpt_neox", "bf16-mixed", "eager", False): 74.08,
    ("gpt_neox", "bf16-mixed", "eager", True): 90.58,
    ("gpt_neox", "bf16-mixed", "sdpa", False): 43.65,
    ("gpt_neox", "bf16-mixed", "sdpa", True): 88.33,
    ("gpt_neox", "bf16-true", "eager", False): 63.50,
    ("gpt_neox", "bf16-true", "eager", True): 63.75,
    ("gpt_neox", "bf16-true", "sdpa", False): 35.71,
    ("gpt_neox", "bf16-true", "sdpa", True): 79.50,
    ("gemma", "fp32", "eager", False): 76.82,
    ("gemma", "fp32", "eager", True): 93.76,
    ("gemma", "fp32", "sdpa", False): 45.06,
    ("gemma", "fp32", "sdpa", True): 90.89,
    ("gemma", "bf16-mixed", "eager", False): 72.58,
    ("gemma", "bf16-mixed", "eager", True): 88.58,
    ("gemma", "bf16-mixed", "sdpa", False): 41.31,
    ("gemma", "bf16-mixed", "sdpa", True): 87.21,
    ("gemma", "bf16-true", "eager", False): 63.18,
    ("gemma", "bf16-true", "eager", True): 63.18,
    ("gemma", "bf16-true", "sdpa", False): 35.04,
    ("gemma", "bf16-true", "sdpa", True): 80.08,
}
BOUND = 0.06  # measured after the fix: -1.3 % to +4.5 %
# The MoE families and DeepSeek's MLA in the same setting, measured the same way (2026-12-07), with DeepSeek's
# small config from families.DEEPSEEK_V3. Planned: Mixtral and Qwen2-MoE -2.1 to +7.5 % (Qwen2-MoE's eager attention
# without dropout is the +7.5 %), DeepSeek +1.3 to +6.6 % (it was -11 to -37 % with dropout, which MLA's blocks did
# not count).
MOE = {
    ("mixtral", "fp32", "eager", False): 85.31,
    ("mixtral", "fp32", "eager", True): 102.31,
    ("mixtral", "fp32", "sdpa", False): 52.27,
    ("mixtral", "fp32", "sdpa", True): 98.31,
    ("mixtral", "bf16-mixed", "eager", False): 80.88,
    ("mixtral", "bf16-mixed", "eager", True): 99.47,
    ("mixtral", "bf16-mixed", "sdpa", False): 48.52,
    ("mixtral", "bf16-mixed", "sdpa", True): 94.63,
    ("mixtral", "bf16-true", "eager", False): 67.17,
    ("mixtral", "bf16-true", "eager", True): 67.17,
    ("mixtral", "bf16-true", "sdpa", False): 38.40,
    ("mixtral", "bf16-true", "sdpa", True): 82.92,
    ("qwen2_moe", "fp32", "eager", False): 86.48,
    ("qwen2_moe", "fp32", "eager", True): 106.46,
    ("qwen2_moe", "fp32", "sdpa", False): 53.98,
    ("qwen2_moe", "fp32", "sdpa", True): 102.46,
    ("qwen2_moe", "bf16-mixed", "eager", False): 82.04,
    ("qwen2_moe", "bf16-mixed", "eager", True): 106.31,
    ("qwen2_moe", "bf16-mixed", "sdpa", False): 49.40,
    ("qwen2_moe", "bf16-mixed", "sdpa", True): 96.74,
    ("qwen2_moe", "bf16-true", "eager", False): 67.75,
    ("qwen2_moe", "bf16-true", "eager", True): 67.75,
    ("qwen2_moe", "bf16-true", "sdpa", False): 38.84,
    ("qwen2_moe", "bf16-true", "sdpa", True): 83.50,
    ("deepseek_v3", "fp32", "eager", False): 80.64,
    ("deepseek_v3", "fp32", "eager", True): 97.71,
    ("deepseek_v3", "fp32", "sdpa", False): 76.64,
    ("deepseek_v3", "fp32", "sdpa", True): 93.71,
    ("deepseek_v3", "bf16-mixed", "eager", False): 75.46,
    ("deepseek_v3", "bf16-mixed", "eager", True): 93.11,
    ("deepseek_v3", "bf16-mixed", "sdpa", False): 72.24,
    ("deepseek_v3", "bf16-mixed", "sdpa", True): 88.86,
    ("deepseek_v3", "bf16-true", "eager", False): 65.04,
    ("deepseek_v3", "bf16-true", "eager", True): 65.04,
    ("deepseek_v3", "bf16-true", "sdpa", False): 63.82,
    ("deepseek_v3", "bf16-true", "sdpa", True): 80.45,
}
MOE_BOUND = 0.08


# GPT-2 (1 x 1,024 tokens) and BERT (1 x 512, its longest), measured the way MEASURED is, with their configs' dropout
# (10 %) and without: (family, precision, attention, checkpointing, dropout) -> peak in MiB, 2026-12-07. Their eager
# softmax runs in the scores' dtype and they keep less before the core than Llama (memory.PRE_CORE_SHARES); SDPA
# with dropout is the math kernel on CPU. Before that date the plan was -6.3 to +34.6 % in the eager rows under full
# and selective checkpointing (GPT-2 bf16-true, full, no dropout the +34.6 %) and -11.5 to +10.2 % without
# checkpointing; now -2.2 to +4.3 % in all 48 (the math kernel's BERT fp32 selective the +4.3 %).
GPT2_BERT = {
    ("bert", "bf16-mixed", "eager", "full", False): 26.84,
    ("bert", "bf16-mixed", "eager", "full", True): 27.09,
    ("bert", "bf16-mixed", "eager", "none", False): 40.74,
    ("bert", "bf16-mixed", "eager", "none", True): 53.74,
    ("bert", "bf16-mixed", "eager", "selective", False): 34.74,
    ("bert", "bf16-mixed", "eager", "selective", True): 35.74,
    ("bert", "bf16-mixed", "sdpa", "full", True): 34.80,
    ("bert", "bf16-mixed", "sdpa", "selective", True): 39.68,
    ("bert", "bf16-true", "eager", "full", False): 15.86,
    ("bert", "bf16-true", "eager", "full", True): 18.11,
    ("bert", "bf16-true", "eager", "none", False): 26.05,
    ("bert", "bf16-true", "eager", "none", True): 38.92,
    ("bert", "bf16-true", "eager", "selective", False): 20.05,
    ("bert", "bf16-true", "eager", "selective", True): 21.86,
    ("bert", "bf16-true", "sdpa", "full", True): 26.86,
    ("bert", "bf16-true", "sdpa", "selective", True): 30.99,
    ("bert", "fp32", "eager", "full", False): 31.70,
    ("bert", "fp32", "eager", "full", True): 36.20,
    ("bert", "fp32", "eager", "none", False): 52.08,
    ("bert", "fp32", "eager", "none", True): 77.83,
    ("bert", "fp32", "eager", "selective", False): 40.08,
    ("bert", "fp32", "eager", "selective", True): 43.71,
    ("bert", "fp32", "sdpa", "full", True): 36.20,
    ("bert", "fp32", "sdpa", "selective", True): 44.21,
    ("gpt2", "bf16-mixed", "eager", "full", False): 72.77,
    ("gpt2", "bf16-mixed", "eager", "full", True): 73.27,
    ("gpt2", "bf16-mixed", "eager", "none", False): 137.76,
    ("gpt2", "bf16-mixed", "eager", "none", True): 163.76,
    ("gpt2", "bf16-mixed", "eager", "selective", False): 88.53,
    ("gpt2", "bf16-mixed", "eager", "selective", True): 90.03,
    ("gpt2", "bf16-mixed", "sdpa", "full", True): 86.77,
    ("gpt2", "bf16-mixed", "sdpa", "selective", True): 104.28,
    ("gpt2", "bf16-true", "eager", "full", False): 38.97,
    ("gpt2", "bf16-true", "eager", "full", True): 47.47,
    ("gpt2", "bf16-true", "eager", "none", False): 80.71,
    ("gpt2", "bf16-true", "eager", "none", True): 130.46,
    ("gpt2", "bf16-true", "eager", "selective", False): 58.71,
    ("gpt2", "bf16-true", "eager", "selective", True): 63.23,
    ("gpt2", "bf16-true", "sdpa", "full", True): 78.72,
    ("gpt2", "bf16-true", "sdpa", "selective", True): 95.23,
    ("gpt2", "fp32", "eager", "full", False): 77.92,
    ("gpt2", "fp32", "eager", "full", True): 94.92,
    ("gpt2", "fp32", "eager", "none", False): 137.39,
    ("gpt2", "fp32", "eager", "none", True): 236.89,
    ("gpt2", "fp32", "eager", "selective", False): 107.44,
    ("gpt2", "fp32", "eager", "selective", True): 126.44,
    ("gpt2", "fp32", "sdpa", "full", True): 91.92,
    ("gpt2", "fp32", "sdpa", "selective", True): 123.44,
}
GPT2_BERT_BOUND = 0.05


@pytest.mark.parametrize("case", sorted(MEASURED), ids=["-".join(map(str, c)) for c in sorted(MEASURED)])
def test_a_fully_recomputed_block_at_1024_tokens_follows_memtracker(case: tuple[str, str, str, bool]) -> None:
    family, precision, attention, dropout = case
    cfg = dropout_on(family) if dropout else SMALL[family]
    estimate = estimate_training_memory(model_from_config(cfg), cpu_setup(precision, attention, "full", 1, 1024))
    planned = estimate.peak_tensor_bytes / MIB
    assert abs(planned / MEASURED[case] - 1) <= BOUND, f"{case} ({estimate.attention_kernel}): {planned:.2f}"


@pytest.mark.parametrize("case", sorted(MOE), ids=["-".join(map(str, c)) for c in sorted(MOE)])
def test_moe_and_mla_blocks_recomputed_at_1024_tokens_follow_memtracker(case: tuple[str, str, str, bool]) -> None:
    family, precision, attention, dropout = case
    cfg = DEEPSEEK_V3 if family == "deepseek_v3" else SMALL[family]
    cfg = with_dropout(cfg) if dropout else cfg
    estimate = estimate_training_memory(model_from_config(cfg), cpu_setup(precision, attention, "full", 1, 1024))
    planned = estimate.peak_tensor_bytes / MIB
    assert abs(planned / MOE[case] - 1) <= MOE_BOUND, f"{case} ({estimate.attention_kernel}): {planned:.2f}"


@pytest.mark.parametrize("case", sorted(GPT2_BERT), ids=["-".join(map(str, c)) for c in sorted(GPT2_BERT)])
def test_gpt2_and_bert_at_their_longest_follow_memtracker(case: tuple[str, str, str, str, bool]) -> None:
    family, precision, attention, checkpointing, dropout = case
    cfg = SMALL[family] if dropout else without_dropout(SMALL[family])
    tokens = 512 if family == "bert" else 1024
    setup = cpu_setup(precision, attention, checkpointing, 1, tokens)
    planned = estimate_training_memory(model_from_config(cfg), setup).peak_tensor_bytes / MIB
    assert abs(planned / GPT2_BERT[case] - 1) <= GPT2_BERT_BOUND, f"{case}: {planned:.2f}"


def test_a_fused_kernel_adds_nothing_to_the_recompute() -> None:
    """The flash kernel's rows above peak outside the recompute: its s x s tensors never exist."""
    cfg = SMALL["llama"]
    flash = estimate_training_memory(model_from_config(cfg), cpu_setup("bf16-true", "sdpa", "full", 1, 1024))
    assert flash.attention_kernel == "flash-cpu" and flash.peak_phase == "backward"
