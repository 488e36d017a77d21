"""The embeddings' output and its dropout mask, planned against the tensors a real forward keeps (torch 2.13.0,
transformers 5.24.0, CPU, the small configs of tests/plan/families.py).

What the embeddings leave for backward is the first block's input (where that block saves it) and whatever the
embeddings' own operators save: the dropout's noise where the family drops out its embeddings (GPT-2, GPT-NeoX),
the token ids otherwise (integers of the batch, not counted). `torch.autograd.graph.saved_tensors_hooks` lists the
saved tensors as the forward runs; their storages, each once, are the measurement. In a step's running total these
bytes are a fraction of a percent of the peak, below what the peak tests resolve, so they are measured apart.
"""

from __future__ import annotations

import weakref
from typing import Any

import pytest

from tests.plan.families import SMALL, cpu_setup, with_dropout, without_dropout
from treino.plan import model_from_config
from treino.plan.memory import _embedding_output_bytes, _encoder_head_terms

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")

MICRO_BATCH, SEQ_LEN = 2, 256


def _kept_outside_the_blocks(cfg: dict[str, Any], precision: str, head: str | None = None) -> int:
    """Bytes a forward keeps for backward before its first block (the tensors its operators save, and the first block's
    input where the block saves it) and, with `head` (a module's name), in that module but its input (the last
    block's output, the blocks' own). Floating-point tensors that are not weights, each storage once; "kept" means
    still alive when the forward has returned, as its graph holds them."""
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision=precision, attention="sdpa")
    modules = dict(model.named_modules())
    first_block = next(m for name, m in modules.items() if name.endswith((".h.0", ".layers.0", ".layer.0")))
    weights = {p.untyped_storage().data_ptr() for p in model.parameters()}
    seen: list[weakref.ref[Any]] = []
    where = ["embeddings"]
    head_input: list[weakref.ref[Any]] = []

    def pack(t: Any) -> Any:
        if where[0] in ("embeddings", "head") and t.is_floating_point():
            seen.append(weakref.ref(t))
        return t

    def enter_first_block(module: Any, args: Any) -> None:
        if where[0] == "embeddings":
            seen.append(weakref.ref(args[0]))
            where[0] = "blocks"

    def enter_head(module: Any, args: Any) -> None:
        where[0] = "head"
        head_input.append(weakref.ref(args[0]))

    def leave_head(module: Any, args: Any, output: Any) -> None:
        where[0] = "loss"

    handles = [first_block.register_forward_pre_hook(enter_first_block)]
    if head:
        handles.append(modules[head].register_forward_pre_hook(enter_head))
        handles.append(modules[head].register_forward_hook(leave_head))
    cast = engine.autocast_dtype(precision)
    autocast = torch.autocast("cpu", dtype=cast) if cast else torch.autocast("cpu", enabled=False)
    model.train()
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
            outputs = model(**engine.lm_batch(cfg, MICRO_BATCH, SEQ_LEN))
    finally:
        for handle in handles:
            handle.remove()
    excluded = weights | {t.untyped_storage().data_ptr() for ref in head_input if (t := ref()) is not None}
    kept = {}
    for ref in seen:
        t = ref()
        if t is not None and t.untyped_storage().data_ptr() not in excluded:
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
    del outputs  # the graph, and what it keeps, lived until here
    return sum(kept.values())


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
@pytest.mark.parametrize(
    "case",
    [
        ("gpt2", True),  # learned positions added, then dropout (10 %, its default)
        ("gpt2", False),
        ("gpt_neox", True),  # hidden_dropout on the embeddings
        ("gpt_neox", False),
        ("llama", False),  # no dropout of the embeddings in its config; an RMSNorm that upcasts its input
        ("gemma", False),  # the same, and the embeddings scaled by a saved sqrt(h) scalar
        ("phi3", True),  # embd_pdrop
    ],
    ids=lambda case: f"{case[0]}-{'dropout' if case[1] else 'no-dropout'}" if isinstance(case, tuple) else case,
)
def test_the_embeddings_output_and_its_dropout_noise_as_kept(case: tuple[str, bool], precision: str) -> None:
    """Measured: 0.25 MiB of output in fp32 and under autocast (the embedding weights stay fp32, so does their
    output), 0.125 MiB in bf16-true, and as much again of CPU dropout noise where there is dropout. In bf16-true the
    RMSNorm families keep no output: their first norm saves its fp32 copy, and the output itself is freed (counted
    until 2026-12-07: 0.125 MiB too many)."""
    family, dropout = case
    cfg = with_dropout(SMALL[family]) if dropout and family != "gpt2" else SMALL[family]
    if not dropout:
        cfg = without_dropout(cfg)
    planned = _embedding_output_bytes(model_from_config(cfg), cpu_setup(precision, "sdpa", "none"), 2 * 256)
    assert planned == pytest.approx(_kept_outside_the_blocks(cfg, precision), abs=4)  # gemma's sqrt(h) scalar


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
def test_berts_embeddings_and_mlm_head_as_kept(precision: str) -> None:
    """BERT's embeddings (three sums, LayerNorm, dropout) and MLM head (dense, GELU, LayerNorm, tied decoder), as
    encoder.py lists them tensor by tensor, through memory.py's terms. Measured 1,581,056 B in fp32, 1,875,968 in
    bf16-mixed (the head LayerNorm's statistics are fp32 under autocast: counted as 16-bit until 2026-12-07, 2 KiB
    short) and 790,528 in bf16-true."""
    model = model_from_config(SMALL["bert"])
    setup = cpu_setup(precision, "sdpa", "none")
    tokens = MICRO_BATCH * SEQ_LEN
    outer, _, _ = _encoder_head_terms(model, setup, tokens, (0.0, 0.0, 0.0))
    planned = outer + _embedding_output_bytes(model, setup, tokens)
    assert planned == _kept_outside_the_blocks(SMALL["bert"], precision, head="cls")
