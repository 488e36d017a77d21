"""Do a multi-node job's ranks reach each other? One all_reduce over every rank, checked against its known sum.

    torchrun ... examples/allreduce_check.py     # or through treino: examples/multinode.yaml (nodes: 2)

Each rank contributes rank + 1, so the sum over a world of N ranks is N (N + 1) / 2. Every rank prints its rank,
world size, host and the sum it got, and exits 1 if the sum is wrong: a first job to run on a new cluster.
"""

from __future__ import annotations

import os
import socket

import torch
import torch.distributed as dist


def main() -> int:
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group("nccl" if use_cuda else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    value = torch.tensor([float(rank + 1)], device="cuda" if use_cuda else "cpu")
    dist.all_reduce(value)
    expected = world * (world + 1) / 2
    print(
        f"rank={rank} world_size={world} host={socket.gethostname()} allreduce={value.item():g} "
        f"expected={expected:g} {'ok' if value.item() == expected else 'WRONG'}",
        flush=True,
    )
    dist.destroy_process_group()
    return 0 if value.item() == expected else 1


if __name__ == "__main__":
    raise SystemExit(main())
