"""Inference estimates against real tensors: the KV cache transformers allocates, and weight bytes."""

from __future__ import annotations

import pytest

from tests.plan.families import SMALL
from treino import catalog
from treino.plan import estimate_inference, model_from_config

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")


@pytest.mark.parametrize("family", ["llama", "qwen2", "gemma", "phi3", "gpt_neox", "gpt2"])
def test_kv_cache_equals_transformers_cache(family: str) -> None:
    cfg = SMALL[family]
    model = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa").eval()
    batch, context = 3, 40
    ids = torch.randint(0, cfg["vocab_size"], (batch, context))
    with torch.no_grad():
        cache = model(input_ids=ids, use_cache=True).past_key_values
    measured = 0
    for layer in cache.layers:
        measured += layer.keys.numel() * layer.keys.element_size() + layer.values.numel() * layer.values.element_size()
    est = estimate_inference(model_from_config(cfg), catalog.gpu("l4"), batch=batch, context=context)
    assert est.kv_cache_bytes == measured


def test_bf16_weights_equal_model_bytes() -> None:
    cfg = SMALL["llama"]
    model = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa")
    measured = sum(p.numel() * p.element_size() for p in model.parameters())
    assert estimate_inference(model_from_config(cfg), catalog.gpu("l4"), batch=1, context=1).weights_bytes == measured


def test_int4_fits_70b_on_one_h200_and_bf16_only_barely() -> None:
    """The seed article: a 70B model needs 140 GB+ for weights alone in 16 bits.

    An H200 gives a process 150.11e9 B (139.8 GiB, measured, see tests/catalog/test_gpus.py), so bf16 weights
    plus an 8k-token KV cache fit with under 4 GiB to spare, and a 32k-token cache no longer fits.
    """
    llama70 = catalog.model("llama-3-70b")
    h200 = catalog.gpu("h200-sxm")
    bf16 = estimate_inference(llama70, h200, batch=1, context=8192)
    bf16_32k = estimate_inference(llama70, h200, batch=1, context=32768)
    int4 = estimate_inference(llama70, h200, batch=1, context=8192, weights="int4")
    assert bf16.weights_bytes > 140e9
    assert 0 < h200.memory_bytes - bf16.peak_bytes < 4 * 2**30
    assert bf16_32k.peak_bytes > h200.memory_bytes
    assert h200.memory_bytes - int4.peak_bytes > 80 * 2**30
    # the decode bound rises as the bytes read per token fall
    assert int4.decode_tokens_per_s_bound > 3 * bf16.decode_tokens_per_s_bound
