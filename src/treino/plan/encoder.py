"""BERT's masked-LM head, embeddings and loss, tensor by tensor, as transformers 5.x runs `BertForMaskedLM`.

The blocks keep activations.py's coefficients; this module replaces the decoder families' "final norm and
head" term with what the MLM head and the embeddings save for backward (listed with
`torch.autograd.graph.saved_tensors_hooks` on real CPU tensors, transformers 5.24, torch 2.13; checked
against MemTracker in tests/plan/test_moe_accuracy.py):

    embeddings   word + position + token-type sums -> LayerNorm -> dropout          (the first block's input)
    head         dense(h -> h) -> GELU -> LayerNorm -> decoder(h -> V, tied)        (transformers
                 models/bert/modeling_bert.py `BertPredictionHeadTransform`, `BertLMPredictionHead`)
    loss         CrossEntropyLoss on the logits, no upcast of its own (`BertForMaskedLM.forward`); autocast
                 runs it in fp32.
"""

from __future__ import annotations

from treino.plan.model import ModelSpec

LAYERNORM_STATS = 2  # LayerNorm saves a mean and a reciprocal standard deviation per row


def mlm_outer_bytes(model: ModelSpec, compute: str, tokens: int) -> float:
    """Bytes the embeddings and the MLM head save besides the blocks (the last block's output, which the
    head's dense layer saves, is the planner's `embed_out`). `compute` as in activations.py."""
    h, V = model.hidden_size, model.vocab_size
    act = 4 if compute == "fp32" else 2  # Linear and GELU outputs
    resid = 2 if compute == "16bit" else 4  # the embeddings' sums (fp32 weights under autocast)
    stats = 2 if compute == "16bit" else 4  # LayerNorm statistics: fp32 (autocast runs layer_norm in fp32), or bf16
    per_token = 0.0
    # Embeddings.
    per_token += resid * h  # the three embeddings' sum, LayerNorm's input
    per_token += LAYERNORM_STATS * (4 if compute != "16bit" else 2)  # its mean and rstd
    # (the embeddings' dropout mask is memory.py's, with the device's mask size: _embedding_output_bytes)
    # MLM head.
    if compute == "mixed":
        per_token += 2 * h  # the dense layer's 16-bit copy of its fp32 input (autocast)
    per_token += act * h  # dense output, saved by GELU
    per_token += act * h  # GELU output, saved by LayerNorm
    per_token += LAYERNORM_STATS * stats  # the head LayerNorm's mean and rstd
    per_token += act * h  # LayerNorm output, the decoder's input
    weights = 0.0
    if compute == "mixed":  # autocast's 16-bit copies of the dense and the (tied) decoder weights
        weights = 2 * (h * h + V * h)
    return tokens * per_token + weights


def mlm_backward_logits_bytes(model: ModelSpec, tokens: int, head_grad: float, compute: str = "mixed") -> float:
    """Live logit-sized bytes at the top of backward, with the decoder's weight gradient where it exists.

    log_softmax's backward holds its saved output, the incoming gradient and the logits' gradient (3 x T·V
    values); the decoder's weight gradient is formed only after the first two are freed, next to the logits'
    gradient (MemTracker: no gradient is live at the peak). They are fp32 but in 16-bit models: BertForMaskedLM
    takes CrossEntropyLoss of its logits as they are, without the upcast of transformers' ForMaskedLMLoss."""
    logits = tokens * model.vocab_size * (2 if compute == "16bit" else 4)
    return max(3 * logits, logits + head_grad)
