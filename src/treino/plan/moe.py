"""Saved activations of a Mixture-of-Experts feed-forward block, tensor by tensor, as transformers 5.x runs it.

A Mixtral or Qwen2-MoE block is a Llama block whose SwiGLU MLP is replaced by a router and routed experts
(and, in Qwen2-MoE, a shared expert). The attention half and the norms keep the Llama coefficients of
activations.py; this module counts what the feed-forward half saves for backward instead of the dense MLP's
`c_f·ffn`. Each term is one tensor that autograd keeps (listed with `torch.autograd.graph.saved_tensors_hooks`
on real CPU tensors, transformers 5.24, torch 2.13; checked against MemTracker in tests/plan/test_moe_accuracy.py).

Sources: transformers models/mixtral/modeling_mixtral.py (`MixtralTopKRouter`, `MixtralSparseMoeBlock`),
models/qwen2_moe/modeling_qwen2_moe.py (`Qwen2MoeTopKRouter`, `Qwen2MoeSparseMoeBlock`) and
integrations/moe.py `grouped_mm_experts_forward`, the experts' default implementation: the T·k (token, expert)
pairs are sorted by expert, gathered, multiplied with `grouped_mm` and scattered back. `grouped_mm` is not
covered by autocast: transformers casts its input to the weights' dtype, so under bf16/fp16-mixed (fp32
weights) the experts run, and save, in fp32.
"""

from __future__ import annotations

from treino.plan.model import ModelSpec

INDEX_BYTES = 8  # int64 indices (torch.sort, torch.topk)


def moe_block_bytes_per_token(model: ModelSpec, compute: str) -> float:
    """Bytes one MoE feed-forward block saves per token, in place of the dense MLP's `c_f·ffn`.

    `compute` as in activations.py: "fp32", "mixed" (autocast over fp32 weights) or "16bit" (16-bit weights).
    """
    h, f, k, n_experts = model.hidden_size, model.intermediate_size, model.experts_per_token, model.num_experts
    # Linear/softmax outputs: 16-bit under autocast and with 16-bit weights, else fp32.
    act = 4 if compute == "fp32" else 2
    # The routed experts' activations are in the weights' dtype (grouped_mm is outside autocast).
    expert = 2 if compute == "16bit" else 4
    # Under autocast every Linear makes, and saves, its own 16-bit copy of an fp32 input (autocast caches
    # only leaf weights' casts). The Llama rows' c_h holds the dense MLP's two (gate_proj, up_proj).
    cast = 2 * h if compute == "mixed" else 0
    out = -2 * cast  # the dense MLP's two input copies, counted in the Llama c_h, that this block does not make

    # Router: Linear(h -> E), softmax in fp32, top-k.
    out += cast  # the router Linear's 16-bit copy of its input
    out += 4 * n_experts  # softmax's fp32 probabilities over the experts, saved for its backward
    out += INDEX_BYTES * k  # topk's indices, saved for its backward (a scatter)
    if model.router_renormalizes:  # top_value /= top_value.sum(): the fp32 values and their sum, saved by div_
        out += 4 * k + 4
    # Routing weight per (token, expert) pair, saved by the weighting multiply: fp32 in Mixtral (its softmax
    # runs on `logits.float()`), the router logits' dtype in Qwen2-MoE (`.to(router_logits.dtype)`).
    weight = 4 if model.family == "mixtral" else act

    # Dispatch and experts, per (token, expert) pair: T·k rows.
    pair = 3 * INDEX_BYTES  # gather indices (perm // k), the weights' gather (perm), the un-permute (inv_perm)
    pair += weight  # the pair's routing weight
    pair += expert * h  # gathered token states: grouped_mm's input, kept for the weight gradient
    pair += expert * 2 * f  # gate_up output: SiLU keeps the gate half, the product the up half (one tensor)
    pair += expert * f  # SiLU output, saved by the product
    pair += expert * f  # SiLU(gate)·up: the down projection's input
    pair += expert * h  # the down projection's output, saved by the multiply with the routing weight
    out += k * pair

    if model.shared_expert_size:  # Qwen2-MoE: a SwiGLU MLP every token passes through
        fs = model.shared_expert_size
        out += 2 * cast  # gate_proj's and up_proj's 16-bit copies of the input
        out += 4 * act * fs  # gate and up outputs, SiLU output, their product (the dense MLP's c_f·ffn)
    if model.shared_expert_gated:  # sigmoid(Linear(h -> 1)) · shared expert output
        out += cast  # the gate Linear's copy of its input
        out += act  # the sigmoid's output, saved for its backward and by the multiply
        out += act * h  # the shared expert's output, saved by the multiply
    return out
