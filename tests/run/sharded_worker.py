"""Resharding on real processes for tests/run/test_sharded.py: a small fully_shard (FSDP2) model on gloo/CPU.

    python sharded_worker.py CHECKPOINT_DIR OUT_DIR

imports torch once, then forks each phase's ranks (gloo process groups of their own, torch.multiprocessing):
2 ranks train 3 steps, saving sharded at step 1 (sync), 2 and 3 (async); then 1 rank, then 4 ranks, restore the
newest into a differently seeded model. Rank 0 of each phase writes OUT_DIR/{phase}.pt (torch.save):
{"step": the restored step or None, "state": the full model and optimizer state}.
"""

from __future__ import annotations

import os
import socket
import sys
from pathlib import Path
from typing import Any

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch import nn
from torch.distributed.checkpoint.state_dict import StateDictOptions, get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard

from treino import job

PHASES = [("save", 2), ("load-1", 1), ("load-4", 4)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def phase(rank: int, mode: str, world_size: int, port: int, folder: str, out: Path) -> None:
    os.environ.update(
        MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(world_size)
    )
    dist.init_process_group("gloo", rank=rank, world_size=world_size)
    torch.manual_seed(0 if mode == "save" else 1)
    model = nn.Sequential(nn.Linear(16, 24), nn.ReLU(), nn.Linear(24, 8))
    for layer in model:
        if isinstance(layer, nn.Linear):
            fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-2)
    run = job.init(checkpoint_dir=folder, keep=2)
    step: int | None = None
    if mode == "save":
        for step in (1, 2, 3):
            g = torch.Generator().manual_seed(step * 100 + rank)
            model(torch.randn(4, 16, generator=g)).square().mean().backward()
            optimizer.step()
            optimizer.zero_grad()
            model_sd, optim_sd = get_state_dict(model, optimizer)
            run.save_sharded({"model": model_sd, "optim": optim_sd}, step=step, async_save=step > 1)
    else:
        model_sd, optim_sd = get_state_dict(model, optimizer)
        state: dict[str, Any] = {"model": model_sd, "optim": optim_sd}
        step = run.restore_sharded(state)
        if step is not None:
            set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    run.finish()  # waits for the async save of step 3
    options = StateDictOptions(full_state_dict=True, cpu_offload=True)
    model_sd, optim_sd = get_state_dict(model, optimizer, options=options)
    if rank == 0:
        torch.save({"step": step, "state": {"model": model_sd, "optim": optim_sd}}, out / f"{mode}.pt")
    dist.destroy_process_group()


def main() -> None:
    folder, out = sys.argv[1], Path(sys.argv[2])
    torch.set_num_threads(1)
    for mode, world_size in PHASES:
        mp.start_processes(
            phase, args=(mode, world_size, free_port(), folder, out), nprocs=world_size, start_method="fork"
        )


if __name__ == "__main__":
    main()
