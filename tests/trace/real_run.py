"""The reference trace mode is held to: an ordinary training step of the same model on real CPU tensors.

Written as a user writes it, with none of `treino.trace.engine`'s code: the model built by transformers from
its config, torch's AdamW with its defaults for the device (`torch.optim.AdamW(model.parameters())`: the
single-tensor loop on CPU), and a step that is `outputs = model(**batch, labels=...)`,
`outputs.loss.backward()`, `optimizer.step()`, `optimizer.zero_grad()`. The first step creates the optimizer
state; the second is measured with PyTorch's MemTracker.
"""

from __future__ import annotations

import contextlib
from typing import Any

import torch

from tests.plan.families import SMALL

# Tiny widths so that a 256k vocabulary stays cheap on two CPU cores (the embedding and the head are
# 256k x 32), one sequence of 64 tokens: the logits (64 x 256k x 4 B = 64 MiB in fp32) dominate the peak.
WIDTH, FFN, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 32, 64, 2, 2, 1, 16
MICRO_BATCH, SEQ_LEN = 1, 64
AUTOCAST = {"bf16-mixed": torch.bfloat16, "fp16-mixed": torch.float16}


def attention(family: str) -> str:
    """SDPA, but for Gemma 2, which transformers (5.24) runs with eager attention only."""
    return "eager" if family == "gemma2" else "sdpa"


def tiny_config(family: str, *, vocab: int, tied: bool) -> dict[str, Any]:
    """`family`'s config from tests/plan/families.py (its own dropout kept), narrowed to WIDTH, with
    `vocab` tokens and tied or untied input and output embeddings."""
    cfg = dict(SMALL[family])
    for key in ("hidden_size", "n_embd"):
        if key in cfg:
            cfg[key] = WIDTH
    for key in ("num_hidden_layers", "n_layer"):
        if key in cfg:
            cfg[key] = LAYERS
    for key in ("num_attention_heads", "n_head"):
        if key in cfg:
            cfg[key] = HEADS
    if "num_key_value_heads" in cfg:
        cfg["num_key_value_heads"] = KV_HEADS
    if "head_dim" in cfg:
        cfg["head_dim"] = HEAD_DIM
    if "query_pre_attn_scalar" in cfg:
        cfg["query_pre_attn_scalar"] = HEAD_DIM
    if "intermediate_size" in cfg:
        cfg["intermediate_size"] = FFN
    return {**cfg, "vocab_size": vocab, "tie_word_embeddings": tied}


def build_model(config: dict[str, Any], *, precision: str) -> torch.nn.Module:
    """What a user writes: transformers' Auto class from the config; BERT trained as a masked LM."""
    import transformers

    fields = dict(config)
    model_type = fields.pop("model_type")
    cfg = transformers.AutoConfig.for_model(model_type, **fields)
    auto = transformers.AutoModelForMaskedLM if model_type == "bert" else transformers.AutoModelForCausalLM
    model: torch.nn.Module = auto.from_config(cfg, attn_implementation=attention(model_type))
    if precision in ("bf16-true", "bf16-master"):
        model = model.to(torch.bfloat16)
    return model


@contextlib.contextmanager
def attention_recomputed() -> Any:
    """Selective activation checkpointing as a user adds it to a transformers model: SDPA's attention function
    replaced (`AttentionInterface.register`) by itself under `torch.utils.checkpoint`, so that backward recomputes
    the attention core."""
    from torch.utils.checkpoint import checkpoint
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    def recomputed(*args: Any, **kwargs: Any) -> Any:
        return checkpoint(sdpa_attention_forward, *args, use_reentrant=False, **kwargs)

    AttentionInterface.register("sdpa", recomputed)
    try:
        yield
    finally:
        AttentionInterface.register("sdpa", sdpa_attention_forward)


def peak_bytes(
    config: dict[str, Any],
    *,
    precision: str = "fp32",
    seq_len: int = SEQ_LEN,
    device: str = "cpu",
    selective: bool = False,
) -> int:
    """The peak of live tensors, by MemTracker, in the second of two ordinary training steps on `device`
    (benchmarks/trace_parity.py --cuda runs it on a GPU); `selective`: with the attention core recomputed
    (`attention_recomputed`, SDPA models)."""
    with attention_recomputed() if selective else contextlib.nullcontext():
        return _peak_bytes(config, precision=precision, seq_len=seq_len, device=device)


def _peak_bytes(config: dict[str, Any], *, precision: str, seq_len: int, device: str) -> int:
    from torch.distributed._tools.mem_tracker import MemTracker

    torch.manual_seed(0)
    model = build_model(config, precision=precision).to(device)
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    input_ids = torch.randint(0, int(config["vocab_size"]), (MICRO_BATCH, seq_len), device=device)
    labels = input_ids.clone()
    dtype = AUTOCAST.get(precision)

    def train_step() -> None:
        with torch.autocast(device, dtype=dtype) if dtype else contextlib.nullcontext():
            outputs = model(input_ids=input_ids, labels=labels)
        outputs.loss.backward()
        optimizer.step()
        optimizer.zero_grad()

    train_step()
    tracker = MemTracker()
    tracker.track_external(model, optimizer, input_ids, labels)
    with tracker:
        train_step()
    return sum(int(per_device["Total"]) for per_device in tracker.get_tracker_snapshot("peak").values())
