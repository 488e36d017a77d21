"""Saved-activation bytes per transformer block, per family, as Hugging Face's implementations save them.

Megatron's formulas (Korthikanti et al. 2022, Table 2: `sbh(34 + 5as/h)`) describe Megatron's fused kernels; HF
models save more (fp32 RMSNorm inputs, eager softmax in fp32, the contiguous copy before o_proj): an HF GPT-2 eager
block measures 1.37x the formula (planner-formulas-and-data.md §B3). So, as that file's §2.1 recommends, each family
carries coefficients measured once with PyTorch's MemTracker, by differencing 3-block and 1-block models at 11
shapes (torch 2.13.0, transformers 5.24.0). The tests hold them to measurements: tests/plan/test_accuracy.py,
test_kernels.py (a block's saved tensors) and benchmarks/kernel_accuracy.py. Per block and per token:

    bytes = c_h*h + c_q*(heads*head_dim) + c_kv*(kv_heads*head_dim) + c_f*ffn + c_lse*heads + c_s*heads*seq
            + c_w * (block matmul weights) / tokens          # autocast's 16-bit weight copies

`c_lse` is the fp32 log-sum-exp a flash-style SDPA kernel keeps (4 B per head and token), `c_s` the eager
attention's s x s probabilities. The Llama SDPA 16-bit row, 20h + 4h_kv + 8f + 4a, is the formula derived and
checked to 0.1 % in the reference (§B3 `s·b·(20h + 4h_kv + 8f) + 4·a·s·b`).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class BlockCoefficients:
    c_h: float
    c_q: float
    c_kv: float
    c_f: float
    c_lse: float  # SDPA only
    c_s: float  # eager only
    c_w: float  # bf16-mixed/fp16-mixed only


# (family group, compute, attention) -> coefficients. compute: "fp32", "mixed" (autocast over fp32
# weights), "16bit" (bf16-true / bf16-master: weights and activations in 16 bits).
_C = BlockCoefficients
BLOCK_COEFFICIENTS: dict[tuple[str, str, str], BlockCoefficients] = {
    ("llama", "16bit", "sdpa"): _C(20, 0, 4, 8, 4, 0, 0),
    ("llama", "mixed", "sdpa"): _C(30, 0, 8, 8, 4, 0, 2),
    ("llama", "fp32", "sdpa"): _C(32, 0, 8, 16, 4, 0, 0),
    ("llama", "16bit", "eager"): _C(26, 0, -2.6, 8, 0, 6, 0),
    ("llama", "mixed", "eager"): _C(35, 0, 2.7, 8, 0, 6, 2),
    ("llama", "fp32", "eager"): _C(44, 0, -5.2, 16, 0, 4, 0),
    ("phi3", "16bit", "sdpa"): _C(22, 0, 4, 8, 4, 0, 0),
    ("phi3", "mixed", "sdpa"): _C(26, 0, 8, 8, 4, 0, 2),
    ("phi3", "fp32", "sdpa"): _C(36, 0, 8, 16, 4, 0, 0),
    ("phi3", "16bit", "eager"): _C(26, 0, -2.6, 8, 0, 6, 0),
    ("phi3", "mixed", "eager"): _C(29, 0, 2.7, 8, 0, 6, 2),
    ("phi3", "fp32", "eager"): _C(44, 0, -5.2, 16, 0, 4, 0),
    ("gemma", "16bit", "sdpa"): _C(20, 4, 4, 8, 4.7, 0, 0),
    ("gemma", "mixed", "sdpa"): _C(26, 4, 8, 8, 4.7, 0, 2),
    ("gemma", "fp32", "sdpa"): _C(24, 8, 8, 16, 4.7, 0, 0),
    ("gemma", "16bit", "eager"): _C(23.6, 7.35, -3, 8, 0, 6, 0),
    ("gemma", "mixed", "eager"): _C(27.8, 7.7, 2.5, 8, 0, 6, 2),
    ("gemma", "fp32", "eager"): _C(31.3, 14.6, -6, 16, 0, 4, 0),
    # gemma2 has no SDPA path in transformers 5.24 (logit soft-capping); 4 norms per block.
    ("gemma2", "16bit", "eager"): _C(39.6, 7.4, -3, 8, 0, 8, 0),
    ("gemma2", "mixed", "eager"): _C(43.8, 7.8, 2.5, 8, 0, 8, 2),
    ("gemma2", "fp32", "eager"): _C(47.2, 14.7, -6.1, 16, 0, 8, 0),
    # GPT-2, GPT-NeoX, BERT: q, k, v and the hidden size are equal (c_h holds their sum). SDPA rows are
    # measured without dropout: on CUDA the flash kernel applies dropout inside, with no s x s mask, while
    # PyTorch's CPU kernel falls back to the math path. Dropout's tensors are added to these rows
    # (memory._score_bytes).
    ("gpt2", "16bit", "sdpa"): _C(20, 0, 0, 10, 4.4, 0, 0),
    ("gpt2", "mixed", "sdpa"): _C(24, 0, 0, 10, 4.9, 0, 2),
    ("gpt2", "fp32", "sdpa"): _C(40, 0, 0, 20, 4.9, 0, 0),
    # GPT-2's eager rows are its SDPA rows with the s x s probabilities in place of the log-sum-exp, as a block's
    # saved tensors measure (saved-tensor hooks at 256 tokens: tests/plan/test_kernels.py; the same at 1,024): fp32
    # 4 B per head and key; under autocast 6, as adding the fp32 causal mask promotes the scores to fp32, so the
    # softmax keeps fp32 and the product with V its 16-bit copy; bf16-true 2. Fitted on peaks at 256 tokens, these
    # rows had held 5.5, 4.8 and 2.8 with a smaller c_h: right at 256 tokens, -11.5 to +34.6 % at 1,024.
    ("gpt2", "16bit", "eager"): _C(20, 0, 0, 10, 0, 2, 0),
    ("gpt2", "mixed", "eager"): _C(24, 0, 0, 10, 0, 6, 2),
    ("gpt2", "fp32", "eager"): _C(40, 0, 0, 20, 0, 4, 0),
    ("gpt_neox", "16bit", "sdpa"): _C(16, 0, 0, 4, 4.4, 0, 0),
    ("gpt_neox", "mixed", "sdpa"): _C(22, 0, 0, 4, 4.9, 0, 2),
    ("gpt_neox", "fp32", "sdpa"): _C(32, 0, 0, 8, 4.9, 0, 0),
    ("gpt_neox", "16bit", "eager"): _C(14, 0, 0, 4, 0, 6, 0),
    ("gpt_neox", "mixed", "eager"): _C(20, 0, 0, 4, 0, 6, 2),
    ("gpt_neox", "fp32", "eager"): _C(28, 0, 0, 8, 0, 4, 0),
    ("bert", "16bit", "sdpa"): _C(16, 0, 0, 4, 4.4, 0, 0),
    ("bert", "mixed", "sdpa"): _C(24, 0, 0, 4, 4.9, 0, 2),
    ("bert", "fp32", "sdpa"): _C(32, 0, 0, 8, 4.9, 0, 0),
    ("bert", "16bit", "eager"): _C(16, 0, 0, 4, 0, 2, 0),
    ("bert", "mixed", "eager"): _C(24, 0, 0, 4, 0, 2, 2),
    ("bert", "fp32", "eager"): _C(32, 0, 0, 8, 0, 4, 0),
}

# Families that share an implementation's saved tensors (transformers' "modular" models copy Llama's).
FAMILY_GROUP = {
    "llama": "llama",
    "mistral": "llama",
    "qwen2": "llama",
    # MoE blocks: Llama's attention and norms; the feed-forward half is counted tensor by tensor (moe.py).
    "mixtral": "llama",
    "qwen2_moe": "llama",
    "deepseek_v3": "llama",  # only its kernel choice and weight copies: its blocks are counted in deepseek.py
    "phi3": "phi3",
    "gemma": "gemma",
    "gemma2": "gemma2",
    "gpt2": "gpt2",
    "gpt_neox": "gpt_neox",
    "bert": "bert",
}
