"""Data-parallel training steps on real processes, each rank's memory measured with MemTracker.

PyTorch's own implementations of the ZeRO stages the planner's `--zero` names:

    0  DistributedDataParallel: everything replicated; DDP keeps its gradient buckets besides `.grad`
    1  DistributedDataParallel + `torch.distributed.optim.ZeroRedundancyOptimizer`: each rank owns the optimizer
       state of a subset of whole parameters (greedy by size) and broadcasts them after its step
    2  FSDP2 `fully_shard(reshard_after_forward=False)` (FSDP1's SHARD_GRAD_OP): gradients and optimizer state
       sharded; each block's all-gathered parameters stay from its forward until its backward
    3  FSDP2 `fully_shard(reshard_after_forward=True)` (FULL_SHARD): parameters sharded too, gathered per block

`precision="bf16-fsdp"` gives every `fully_shard` FSDP2's `MixedPrecisionPolicy(param_dtype=bf16,
reduce_dtype=fp32)` (torchtitan's default): fp32 sharded parameters and optimizer state, parameters all-gathered
and computed in bf16 without autocast, gradients reduce-scattered in fp32. It runs on the CPU over gloo (torch 2.13).

FSDP2 wraps each transformer block and then the root (embeddings, final norm, head), the layout of
transformers' and accelerate's FSDP2 plugin (`fsdp_auto_wrap_policy=TRANSFORMER_BASED_WRAP`). Ranks run on
the CPU over gloo; FSDP2 ranks are measured with `FSDPMemTracker`, DDP ranks with `MemTracker`. As in
`engine.measure_training_step`, the first step creates the optimizer state and the second is measured.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import tempfile
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.multiprocessing.spawn import spawn

from treino.errors import PlanError
from treino.trace import engine

ZERO_STAGES = (0, 1, 2, 3)


@dataclass(frozen=True)
class RankMeasurement:
    """One rank's bytes: its own share of the model states (summed from the real tensors) and the peak of live
    tensors during the measured step (MemTracker), with the peak's categories."""

    rank: int
    weights_bytes: int  # the rank's parameters (FSDP: its shards), without buffers
    gradients_bytes: int  # its gradients after backward (FSDP: sharded; DDP: `.grad`, without the buckets)
    bucket_bytes: int  # DDP's gradient buckets (its logging data's `bucket_sizes`); 0 under FSDP
    optimizer_state_bytes: int  # its optimizer state
    peak_bytes: int
    peak_by_kind: dict[str, int]
    loss_by_kind: dict[str, int]  # the live tensors by category at the loss (after forward, before backward)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _storage_bytes(tensors: list[torch.Tensor]) -> int:
    """Bytes of the distinct storages behind `tensors` (a DTensor counts its local shard's storage)."""
    seen: dict[int, int] = {}
    for t in tensors:
        local = t.to_local() if hasattr(t, "to_local") else t
        storage = local.untyped_storage()
        seen[storage.data_ptr()] = storage.nbytes()
    return sum(seen.values())


def _ddp_bucket_bytes(wrapped: nn.Module) -> int:
    """Bytes of DDP's gradient buckets, from its own logging data (a comma-separated list of bucket sizes)."""
    logging_data = getattr(wrapped, "_get_ddp_logging_data", None)
    if logging_data is None:
        return 0
    sizes = str(logging_data().get("bucket_sizes", ""))
    return sum(int(size) for size in sizes.split(",") if size.strip())


def _blocks(model: nn.Module) -> list[nn.Module]:
    """The transformer blocks of a Hugging Face model (its `_no_split_modules` classes)."""
    names = set(getattr(model, "_no_split_modules", None) or ())
    blocks = [m for m in model.modules() if type(m).__name__ in names]
    if not blocks:
        raise PlanError(
            f"{type(model).__name__} names no transformer block class, so it cannot be sharded per block. "
            "To fix: use a Hugging Face model whose class lists its blocks in `_no_split_modules`."
        )
    return blocks


def _rank_main(rank: int, world: int, port: int, config: dict[str, Any], setup: dict[str, Any], out: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    try:
        for zero in setup["zeros"]:
            result = _measure_rank(rank, world, config, {**setup, "zero": zero})
            Path(out, f"zero{zero}-rank{rank}.json").write_text(json.dumps(asdict(result)))
    finally:
        dist.destroy_process_group()


def _measure_rank(rank: int, world: int, config: dict[str, Any], setup: dict[str, Any]) -> RankMeasurement:
    from torch.distributed._tools.fsdp2_mem_tracker import FSDPMemTracker
    from torch.distributed._tools.mem_tracker import MemTracker

    zero, precision = int(setup["zero"]), str(setup["precision"])
    fsdp_mixed = precision == "bf16-fsdp"  # FSDP2's MixedPrecisionPolicy: fp32 shards, bf16 compute
    if fsdp_mixed:
        precision = "fp32"  # the model is built in fp32 and FSDP2 casts what it gathers; no autocast
    torch.manual_seed(0)  # the same initial weights on every rank
    model = engine.build_hf_model(config, precision=precision, attention=str(setup["attention"]))
    torch.manual_seed(1 + rank)  # each rank its own batch
    batch = engine.lm_batch(config, int(setup["micro_batch"]), int(setup["seq_len"]))
    if setup["checkpointing"] == "full":  # every block recomputed in backward, as in engine.measure_training_step
        engine.enable_full_checkpointing(model)
    wrapped: nn.Module
    if zero >= 2:
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        # fully_shard's default policy casts nothing
        mp = MixedPrecisionPolicy(torch.bfloat16, torch.float32) if fsdp_mixed else MixedPrecisionPolicy()
        for block in _blocks(model):
            fully_shard(block, reshard_after_forward=zero == 3, mp_policy=mp)
        # The root left to FSDP2's default: it is not resharded after forward, as backward needs it first.
        fully_shard(model, reshard_after_forward=None if zero == 3 else False, mp_policy=mp)
        wrapped = model
    elif fsdp_mixed:
        raise PlanError("bf16-fsdp is FSDP2's mixed precision. To fix: measure it under ZeRO-2 or ZeRO-3.")
    else:
        from torch.nn.parallel import DistributedDataParallel

        wrapped = DistributedDataParallel(model)
    params = [p for p in model.parameters() if p.requires_grad]
    opt: torch.optim.Optimizer
    if zero == 1:
        from torch.distributed.optim import ZeroRedundancyOptimizer

        opt = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW, lr=1e-4, foreach=True)
    else:
        opt = engine.make_optimizer("adamw", params)
    cast = engine.autocast_dtype(precision)
    grads_after_backward = 0
    tracker: Any = None
    at_loss: dict[str, int] = {}

    def step() -> None:
        nonlocal grads_after_backward
        ctx = torch.autocast("cpu", dtype=cast) if cast else contextlib.nullcontext()
        with ctx:
            # bound to a name, as in a training loop: the outputs (the logits) stay live until the step ends
            outputs = wrapped(**batch)
        loss = engine._loss_of(outputs)
        if tracker is not None:
            at_loss.update(_by_kind(tracker.get_tracker_snapshot()))
        loss.backward()  # type: ignore[no-untyped-call]  # unannotated (torch 2.13)
        grads_after_backward = _storage_bytes([p.grad for p in params if p.grad is not None])
        opt.step()
        opt.zero_grad(set_to_none=True)

    step()  # creates the optimizer state
    if zero >= 2:
        tracker = FSDPMemTracker(model, opt)  # fully_shard made `model` an FSDPModule
        tracker.track_inputs(tuple(batch.values()))
    else:
        tracker = MemTracker()
        tracker.track_external(wrapped, getattr(opt, "optim", opt), *batch.values())
    with tracker:
        step()
    by_kind = _by_kind(tracker.get_tracker_snapshot("peak"))
    inner = getattr(opt, "optim", opt)  # ZeroRedundancyOptimizer keeps its rank's state in an inner optimizer
    state = [v for s in inner.state.values() for v in s.values() if isinstance(v, torch.Tensor) and v.dim()]
    return RankMeasurement(
        rank=rank,
        weights_bytes=_storage_bytes(list(model.parameters())),
        gradients_bytes=grads_after_backward,
        bucket_bytes=_ddp_bucket_bytes(wrapped),
        optimizer_state_bytes=_storage_bytes(state),
        peak_bytes=by_kind.get("Total", 0),
        peak_by_kind=by_kind,
        loss_by_kind=at_loss,
    )


def _by_kind(snapshot: dict[Any, dict[Any, int]]) -> dict[str, int]:
    """A MemTracker snapshot's bytes by category ("Sharded Param", "All Gather", "Total", ...), over devices."""
    by_kind: dict[str, int] = {}
    for per_device in snapshot.values():
        for kind, nbytes in per_device.items():
            key = str(getattr(kind, "value", kind))
            by_kind[key] = by_kind.get(key, 0) + int(nbytes)
    return by_kind


def measure_sharded_steps(
    config: dict[str, Any],
    *,
    ranks: int,
    zeros: tuple[int, ...],
    micro_batch: int,
    seq_len: int,
    precision: str = "fp32",
    attention: str = "sdpa",
    checkpointing: str = "none",
) -> dict[int, list[RankMeasurement]]:
    """Train `config` (a config.json dict) on `ranks` CPU processes under each ZeRO stage of `zeros` in turn
    (see the module's docstring for what runs) and return each stage's measurements, in rank order."""
    unknown = [z for z in zeros if z not in ZERO_STAGES]
    if unknown or not zeros:
        raise PlanError(f"ZeRO stages must be among {ZERO_STAGES}, got {zeros}. To fix: pick stages from 0 to 3.")
    if ranks < 2:
        raise PlanError(f"A sharded step needs at least 2 ranks, got {ranks}. To fix: pass ranks=2 or more.")
    setup = {"zeros": list(zeros), "micro_batch": micro_batch, "seq_len": seq_len, "precision": precision}
    setup["attention"] = attention
    setup["checkpointing"] = checkpointing
    if checkpointing not in ("none", "full"):
        raise PlanError(f"Checkpointing must be none or full, got {checkpointing!r}. To fix: pass one of them.")
    with tempfile.TemporaryDirectory(prefix="treino-sharded-") as out:
        # torch.multiprocessing's spawn is unannotated (torch 2.13).
        spawn(_rank_main, args=(ranks, _free_port(), config, setup, out), nprocs=ranks, join=True)  # type: ignore[no-untyped-call]
        return {
            zero: [
                RankMeasurement(**json.loads(Path(out, f"zero{zero}-rank{r}.json").read_text())) for r in range(ranks)
            ]
            for zero in zeros
        }
