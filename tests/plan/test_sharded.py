"""The planner's ZeRO/FSDP memory per GPU against real data-parallel ranks measured with MemTracker.

Two gloo ranks on the CPU train a small Llama under each ZeRO stage as PyTorch implements it (treino.trace.sharded:
DDP, DDP + ZeroRedundancyOptimizer, FSDP2 `fully_shard` without and with resharding after forward). Its FFN and
vocabulary are odd, so FSDP2 pads their shards. Each rank's own parameters, gradients (and DDP's buckets) and
optimizer state must match the plan exactly; each rank's peak of live tensors within 10 % (MemTracker's own bound
against CUDA's allocator, torch test/distributed/_tools/test_fsdp2_mem_tracker.py). Four ranks and more
families: benchmarks/sharded_memory_bench.py. Measured on CPU.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.families import SMALL
from treino.plan import TrainSetup, estimate_training_memory, model_from_config

torch = pytest.importorskip("torch")
sharded = pytest.importorskip("treino.trace.sharded")

RANKS, MICRO_BATCH, SEQ_LEN = 2, 1, 128
STAGES = (0, 1, 2, 3)
CONFIG = {**SMALL["llama"], "vocab_size": 2051, "intermediate_size": 345}  # dims FSDP2 must pad over 2 ranks


@pytest.fixture(scope="module")
def measured() -> dict[int, list[Any]]:
    return sharded.measure_sharded_steps(  # type: ignore[no-any-return]
        CONFIG, ranks=RANKS, zeros=STAGES, micro_batch=MICRO_BATCH, seq_len=SEQ_LEN, precision="fp32"
    )


def _plan(zero: int, seq_len: int = SEQ_LEN) -> Any:
    setup = TrainSetup(micro_batch=MICRO_BATCH, seq_len=seq_len, precision="fp32", gpus=RANKS, zero=zero)
    return estimate_training_memory(model_from_config(CONFIG), setup)


@pytest.mark.slow
@pytest.mark.parametrize("zero", STAGES)
def test_each_ranks_peak_within_10_percent(measured: dict[int, list[Any]], zero: int) -> None:
    predicted = _plan(zero)
    for rank in measured[zero]:
        error = predicted.peak_tensor_bytes / rank.peak_bytes - 1
        assert abs(error) <= 0.10, (
            f"ZeRO-{zero} rank {rank.rank}: predicted {predicted.peak_tensor_bytes:,} B ({predicted.peak_phase}), "
            f"measured {rank.peak_bytes:,} B {rank.peak_by_kind}: {error:+.1%}"
        )


@pytest.mark.slow
@pytest.mark.parametrize("zero", STAGES)
def test_each_ranks_model_states_exact(measured: dict[int, list[Any]], zero: int) -> None:
    predicted = _plan(zero)
    ranks = measured[zero]
    for rank in ranks:  # weights and gradients (+ DDP's buckets): the same bytes on every rank
        own = rank.weights_bytes + rank.gradients_bytes + rank.bucket_bytes
        assert predicted.rank_model_state_bytes - predicted.optimizer_bytes == own, rank
    if zero == 1:
        # ZeroRedundancyOptimizer gives each rank whole tensors, so ranks differ by part of one tensor; the plan's
        # flat share is their mean.
        assert predicted.optimizer_bytes * RANKS == sum(r.optimizer_state_bytes for r in ranks)
    else:
        # FSDP2's rank 0 holds the padded shard of every tensor, the most of any rank.
        assert (
            predicted.optimizer_bytes == max(r.optimizer_state_bytes for r in ranks) == ranks[0].optimizer_state_bytes
        )
    if zero >= 2:
        assert ranks[0].weights_bytes * RANKS > model_from_config(CONFIG).params * 4  # padding is really there


@pytest.mark.slow
@pytest.mark.parametrize("zero", [2, 3])
def test_gathered_parameters_at_the_peak_exact(measured: dict[int, list[Any]], zero: int) -> None:
    """At the top of backward FSDP2 holds each rank's shards plus the gathered units: every unit under ZeRO-2, the
    root and the prefetched last block under ZeRO-3 (MemTracker's sharded, unsharded and all-gather bytes)."""
    predicted = _plan(zero)
    assert predicted.peak_phase == "backward"
    for rank in measured[zero]:
        kinds = rank.peak_by_kind
        at_peak = kinds["Sharded Param"] + kinds["Unsharded Param"] + kinds["All Gather"]
        assert predicted.weights_bytes == at_peak, kinds


# Each rank's own bytes as the slow tests above measured them (torch 2.13, transformers 5.24; measured on CPU):
# weights + gradients (+ DDP's buckets), and the optimizer state of ranks 0 and 1. Kept here so that the fast
# suite (and `make mutate`) holds the plan to the measurement too.
MEASURED_2_RANKS = {
    0: (4_283_392 * 3, (8_566_784, 8_566_784)),
    1: (4_283_392 * 3, (4_267_008, 4_299_776)),
    2: (2_143_744 * 2, (4_287_488, 4_279_296)),
    3: (2_143_744 * 2, (4_287_488, 4_279_296)),
}


@pytest.mark.parametrize("zero", STAGES)
def test_each_ranks_model_states_as_measured(zero: int) -> None:
    predicted = _plan(zero)
    own, optimizer = MEASURED_2_RANKS[zero]
    assert predicted.rank_model_state_bytes - predicted.optimizer_bytes == own
    if zero == 1:
        assert predicted.optimizer_bytes * RANKS == sum(optimizer)
    else:
        assert predicted.optimizer_bytes == optimizer[0]


# The unsharded parameters FSDP2 holds besides each rank's shards ("Unsharded Param" + "All Gather" of
# FSDPMemTracker), at the loss (after forward) and at the peak of backward, on 2 ranks (torch 2.13; measured on CPU
# by the slow test below; kept here for the fast suite and `make mutate`). ZeRO-2 keeps every unit gathered from its
# forward to its backward; ZeRO-3 only the root at the loss, then the root, the block in backward and the one
# prefetched, and with full checkpointing also the block being recomputed.
GATHERED_2_RANKS = {  # (checkpointing, zero): (at the loss, at the peak, the plan's phase at that peak)
    ("none", 2): (4_287_488, 4_287_488, "backward"),
    ("none", 3): (2_101_760, 2_830_336, "backward"),
    ("full", 2): (4_287_488, 4_287_488, "backward"),
    ("full", 3): (2_101_760, 3_558_912, "backward, recompute"),
}


def _gathered(zero: int, checkpointing: str, config: dict[str, Any] = CONFIG, **more: Any) -> dict[str, float]:
    """The plan's gathered bytes by moment of the step (fp32 parameters), `more` TrainSetup's other fields."""
    from treino.plan.memory import _fsdp_gathered_bytes

    setup = TrainSetup(
        micro_batch=MICRO_BATCH, seq_len=SEQ_LEN, precision="fp32", gpus=RANKS, zero=zero, checkpointing=checkpointing
    )
    return _fsdp_gathered_bytes(model_from_config(config), TrainSetup(**{**setup.__dict__, **more}), 4)


@pytest.mark.slow
@pytest.mark.parametrize("checkpointing", ["none", "full"])
def test_gathered_units_at_the_loss_and_at_the_peak_exact(checkpointing: str) -> None:
    ranks_by_zero = sharded.measure_sharded_steps(
        CONFIG, ranks=RANKS, zeros=(2, 3), micro_batch=MICRO_BATCH, seq_len=SEQ_LEN, checkpointing=checkpointing
    )
    for zero, ranks in ranks_by_zero.items():
        at_loss, at_peak, phase = GATHERED_2_RANKS[checkpointing, zero]
        planned = _gathered(zero, checkpointing)
        assert (planned["loss"], planned[phase]) == (at_loss, at_peak)
        for rank in ranks:
            loss, peak = rank.loss_by_kind, rank.peak_by_kind
            assert loss["Unsharded Param"] + loss["All Gather"] == at_loss, loss
            assert peak["Unsharded Param"] + peak["All Gather"] == at_peak, peak


@pytest.mark.parametrize("checkpointing,zero", sorted(GATHERED_2_RANKS))
def test_gathered_units_as_measured(checkpointing: str, zero: int) -> None:
    at_loss, at_peak, phase = GATHERED_2_RANKS[checkpointing, zero]
    planned = _gathered(zero, checkpointing)
    assert (planned["loss"], planned[phase]) == (at_loss, at_peak)
    # every phase of the plan is one of the measured moments: ZeRO-2 holds all units throughout; ZeRO-3 the root,
    # plus one block in backward and two while one is recomputed
    block = GATHERED_2_RANKS["none", 3][1] - GATHERED_2_RANKS["none", 3][0]
    expected = [at_loss] * 3 if zero == 2 else [at_loss, at_loss + block, at_loss + 2 * block]
    assert [planned[k] for k in ("loss", "backward", "backward, recompute")] == expected


def test_gathered_units_split_over_tensor_and_pipeline_parallelism() -> None:
    """With tensor parallelism each rank gathers its 1/t slice of every unit. With pipeline stages a stage's root
    is its part of the model's outer tensors: the first stage the embedding, the last the final norm and the LM head
    (the larger, planned); ZeRO-2 holds the stage's L/pp blocks. FSDP2 pads each tensor's dim 0 to a multiple of the
    ranks: 2051 vocabulary rows are 1026 a rank, so a 128-wide (2051, 128) matrix gathers 2 x 1026 x 128 floats."""
    for zero in (2, 3):
        whole = _gathered(zero, "full")
        halves = _gathered(zero, "full", gpus=2 * RANKS, tp=2)
        assert halves == {k: v / 2 for k, v in whole.items()}
    matrix, norm = 4 * 2 * 1026 * 128, 4 * 128  # fp32 bytes of a gathered (2051, 128) matrix and (128,) norm
    staged = _gathered(3, "none", gpus=2 * RANKS, pp=2)
    assert staged["loss"] == matrix + norm  # the last stage: final norm + head, larger than the embedding
    tied = {**CONFIG, "tie_word_embeddings": True}
    assert _gathered(3, "none", gpus=2 * RANKS, pp=2, config=tied)["loss"] == matrix  # the first: the embedding
    assert _gathered(3, "none", config=tied)["loss"] == matrix + norm
    block = GATHERED_2_RANKS["none", 3][1] - GATHERED_2_RANKS["none", 3][0]
    layers = CONFIG["num_hidden_layers"]
    assert _gathered(2, "none", gpus=3 * RANKS, pp=3)["loss"] == matrix + norm + block * layers / 3


@pytest.mark.parametrize("zero", [1, 2, 3])
def test_one_rank_shards_nothing(zero: int) -> None:
    """ZeRO on one GPU: each rank's share is the whole model (FSDP2 over a world of one keeps whole tensors)."""
    whole = estimate_training_memory(
        model_from_config(CONFIG), TrainSetup(seq_len=SEQ_LEN, precision="fp32", zero=0)
    ).rank_model_state_bytes
    setup = TrainSetup(seq_len=SEQ_LEN, precision="fp32", zero=zero)
    assert estimate_training_memory(model_from_config(CONFIG), setup).rank_model_state_bytes == whole


@pytest.mark.parametrize(
    ("name", "stage_root"), [("llama-3-8b", 128_256 * 4096 + 4096), ("qwen2.5-0.5b", 151_936 * 896)]
)
def test_fsdp_with_pipeline_stages_gathers_one_stages_root(name: str, stage_root: int) -> None:
    """With pipeline stages the first holds the embeddings and the last the final norm and the head (Megatron,
    torchtitan), so FSDP's root unit on the most loaded stage is one of the two, never both. Llama-3-8B (untied):
    the head and final norm, 128,256 x 4,096 + 4,096 parameters; Qwen2.5-0.5B (tied): the embeddings, 151,936 x 896
    (its last stage has only the final norm). bf16-mixed, ZeRO-3 over 2 ranks of each stage, 4 B per gathered value."""
    from treino import catalog
    from treino.plan.memory import _fsdp_gathered_bytes

    setup = TrainSetup(precision="bf16-mixed", zero=3, gpus=4, pp=2)
    gathered = _fsdp_gathered_bytes(catalog.model(name), setup, 4)
    assert gathered["loss"] == 4 * stage_root
