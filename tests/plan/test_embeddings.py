"""The embeddings' output and its dropout mask, planned against the tensors a real forward keeps (torch 2.13.0,
transformers 5.24.0, CPU, the small configs of tests/plan/families.py).

What the embeddings leave for backward is the first block's input (its first norm saves it) and whatever the
embeddings' own operators save: the dropout's noise where the family drops out its embeddings (GPT-2, GPT-NeoX),
the token ids otherwise (integers of the batch, not counted). `torch.autograd.graph.saved_tensors_hooks` lists the
saved tensors as the forward runs; their storages, each once, are the measurement. In a step's running total these
bytes are a fraction of a percent of the peak, below what the peak tests resolve, so they are measured apart.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.families import SMALL, cpu_setup, with_dropout, without_dropout
from treino.plan import model_from_config
from treino.plan.memory import _embedding_output_bytes

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")

MICRO_BATCH, SEQ_LEN = 2, 256


def _kept_by_the_embeddings(cfg: dict[str, Any], precision: str) -> int:
    """Bytes of the first block's input and of the floating-point tensors saved before the first block runs."""
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision=precision, attention="sdpa")
    first_block = next(m for name, m in model.named_modules() if name.endswith((".h.0", ".layers.0", ".layer.0")))
    kept: dict[int, int] = {}  # storage address -> bytes
    in_embeddings = True

    def pack(t: Any) -> Any:
        if in_embeddings and t.is_floating_point():
            kept[t.untyped_storage().data_ptr()] = t.untyped_storage().nbytes()
        return t

    def enter_first_block(module: Any, args: Any) -> None:
        nonlocal in_embeddings
        if in_embeddings:
            kept[args[0].untyped_storage().data_ptr()] = args[0].untyped_storage().nbytes()
            in_embeddings = False

    handle = first_block.register_forward_pre_hook(enter_first_block)
    cast = engine.autocast_dtype(precision)
    autocast = torch.autocast("cpu", dtype=cast) if cast else torch.autocast("cpu", enabled=False)
    model.train()
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t), autocast:
            model(**engine.lm_batch(cfg, MICRO_BATCH, SEQ_LEN))
    finally:
        handle.remove()
    return sum(kept.values())


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
@pytest.mark.parametrize(
    "case",
    [
        ("gpt2", True),  # learned positions added, then dropout (10 %, its default)
        ("gpt2", False),
        ("gpt_neox", True),  # hidden_dropout on the embeddings
        ("gpt_neox", False),
        ("llama", False),  # no dropout of the embeddings in its config
    ],
    ids=lambda case: f"{case[0]}-{'dropout' if case[1] else 'no-dropout'}" if isinstance(case, tuple) else case,
)
def test_the_embeddings_output_and_its_dropout_noise_as_kept(case: tuple[str, bool], precision: str) -> None:
    """Measured: 0.25 MiB of output in fp32 and under autocast (the embedding weights stay fp32, so does their
    output), 0.125 MiB in bf16-true, and as much again of CPU dropout noise where there is dropout."""
    family, dropout = case
    cfg = with_dropout(SMALL[family]) if dropout and family != "gpt2" else SMALL[family]
    if not dropout:
        cfg = without_dropout(cfg)
    planned = _embedding_output_bytes(model_from_config(cfg), cpu_setup(precision, "sdpa", "none"), 2 * 256)
    assert planned == _kept_by_the_embeddings(cfg, precision)
