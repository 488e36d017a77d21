"""A small DDP training run on the treino Job SDK: seconds on CPU (gloo), unchanged on GPUs (NCCL).

    python examples/ddp_train.py --steps 30                                    # one process, no process group
    torchrun --standalone --nproc-per-node=2 examples/ddp_train.py --steps 30  # DDP, one rank per device

It fits a seeded random linear map with a small MLP. Batches are a function of (step, rank), so a run that
is killed and resumed from a checkpoint ends with exactly the loss of a run that never stopped.
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

import torch
import torch.distributed as dist
from torch import nn
from torch.nn.parallel import DistributedDataParallel

from treino import job

SEED = 0
IN_FEATURES, HIDDEN, OUT_FEATURES = 32, 64, 8
BATCH_SIZE = 64  # samples per rank per step
LEARNING_RATE = 1e-2


def batch(step: int, rank: int, device: torch.device, w_true: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The (x, y) of this step and rank: x (BATCH_SIZE, IN_FEATURES), y (BATCH_SIZE, OUT_FEATURES)."""
    g = torch.Generator().manual_seed(SEED * 1_000_003 + step * 1009 + rank)
    x = torch.randn(BATCH_SIZE, IN_FEATURES, generator=g)
    y = x @ w_true + 0.01 * torch.randn(BATCH_SIZE, OUT_FEATURES, generator=g)
    return x.to(device), y.to(device)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200, help="train until this step (inclusive)")
    parser.add_argument("--save-every", type=int, default=20, help="checkpoint every this many steps")
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep per step (for kill tests)")
    args = parser.parse_args()

    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    if world_size > 1:  # torchrun set MASTER_ADDR/PORT, RANK and WORLD_SIZE: env:// reads them
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")

    run = job.init()
    torch.manual_seed(SEED)
    w_true = torch.randn(IN_FEATURES, OUT_FEATURES)
    model = nn.Sequential(nn.Linear(IN_FEATURES, HIDDEN), nn.GELU(), nn.Linear(HIDDEN, OUT_FEATURES)).to(device)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)

    state = run.restore()
    if state is not None:
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
    start = (run.checkpoint_step or 0) + 1
    ddp: nn.Module = model
    if dist.is_initialized():
        ddp = DistributedDataParallel(model, device_ids=[local_rank] if device.type == "cuda" else None)
    if run.rank == 0:
        if run.checkpoint_step is not None:
            print(f"resumed from step={run.checkpoint_step}", flush=True)
        print(f"start step={start} world_size={run.world_size} attempt={run.attempt}", flush=True)

    def snapshot() -> dict[str, Any]:
        return {"model": model.state_dict(), "optimizer": optimizer.state_dict()}

    done = start - 1  # the last completed step
    stopped = False
    for step in range(start, args.steps + 1):
        if run.should_stop:  # SIGTERM on any rank: all ranks agree here, save the last completed step, exit 0
            stopped = True
            break
        x, y = batch(step, run.rank, device, w_true)
        loss = nn.functional.mse_loss(ddp(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        done = step
        run.log(step=step, loss=loss.item(), lr=LEARNING_RATE)
        if step % args.save_every == 0:
            run.save(snapshot(), step=step)
        if args.sleep:
            time.sleep(args.sleep)
    if done != run.checkpoint_step and done % args.save_every != 0:
        run.save(snapshot(), step=done)

    with torch.no_grad():  # a fixed evaluation batch: comparable between runs, even when no step ran
        x, y = batch(-1, 0, device, w_true)
        eval_loss = nn.functional.mse_loss(model(x), y).item()
    if run.rank == 0:
        print(f"{'stopped' if stopped else 'done'} step={done} loss={eval_loss:.4f}", flush=True)
    run.finish()
    if dist.is_initialized():
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
