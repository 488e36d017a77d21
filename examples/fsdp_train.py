"""A small Llama trained with FSDP2 (`fully_shard`) on the treino Job SDK, with sharded checkpoints: every rank
saves its own shard (torch.distributed.checkpoint), in the background, and a restart resumes from the newest one.

    python examples/fsdp_train.py --steps 40                                    # one process
    torchrun --standalone --nproc-per-node=2 examples/fsdp_train.py --steps 40   # gloo on CPU, NCCL on GPUs
    treino submit examples/fsdp_job.yaml                                        # the same under the server

The model is a transformers LlamaConfig built in code (no download). Batches are a function of (step, rank), and
the model and optimizer state come back bit for bit from the checkpoint, so a run killed and resumed logs the same
loss at every step as one that never stopped.
"""

from __future__ import annotations

import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import fully_shard
from transformers import LlamaConfig, LlamaForCausalLM

from treino import job

SEED = 0
VOCAB_SIZE = 128
SEQ_LEN = 32  # tokens per sample
BATCH_SIZE = 8  # samples per rank per step
LEARNING_RATE = 3e-3
PAUSE_ENV = "EXAMPLE_PAUSE_AT_STEP"  # tests: the first attempt waits after saving this step, to be killed there
PAUSE_MAX_S = 600.0
PAUSE_CHECK_S = 0.2
CONFIG = LlamaConfig(  # ~60 k parameters: seconds on two CPU cores
    vocab_size=VOCAB_SIZE,
    hidden_size=32,
    intermediate_size=64,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=SEQ_LEN,
)


def batch(step: int, rank: int, device: torch.device) -> torch.Tensor:
    """Token ids (BATCH_SIZE, SEQ_LEN) of this step and rank: sequences t[i+1] = (5 t[i] + 3) mod VOCAB_SIZE from
    random starts, so there is something to learn."""
    g = torch.Generator().manual_seed(SEED * 1_000_003 + step * 1009 + rank)
    tokens = torch.empty(BATCH_SIZE, SEQ_LEN, dtype=torch.long)
    tokens[:, 0] = torch.randint(0, VOCAB_SIZE, (BATCH_SIZE,), generator=g)
    for i in range(1, SEQ_LEN):
        tokens[:, i] = (5 * tokens[:, i - 1] + 3) % VOCAB_SIZE
    return tokens.to(device)


def pause_if_asked(run: job.Run, step: int) -> None:
    """With EXAMPLE_PAUSE_AT_STEP=N in the job's environment (a test sets it in the spec), the first attempt waits
    here once it has saved step N, until it is killed or stopped (at most PAUSE_MAX_S): a kill lands at a known step
    however loaded the machine is. Without it, nothing. Every rank waits the same number of checks (each one is a
    collective: `should_stop`), so they leave together; a rank killed meanwhile ends the others' check with an
    error."""
    if run.attempt != 1 or os.environ.get(PAUSE_ENV) != str(step):
        return
    for _ in range(int(PAUSE_MAX_S / PAUSE_CHECK_S)):
        if run.should_stop:
            return
        time.sleep(PAUSE_CHECK_S)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=40, help="train until this step (inclusive)")
    parser.add_argument("--save-every", type=int, default=10, help="save a sharded checkpoint every this many steps")
    parser.add_argument("--sync-save", action="store_true", help="wait for the disk at each save (default: async)")
    parser.add_argument("--sleep", type=float, default=0.0, help="seconds to sleep per step (for kill tests)")
    args = parser.parse_args()

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if torch.cuda.is_available():
        device = torch.device("cuda", local_rank)
        torch.cuda.set_device(device)
        backend = "cpu:gloo,cuda:nccl"  # async saves need a CPU backend too
    else:
        device, backend = torch.device("cpu"), "gloo"
    if "WORLD_SIZE" in os.environ:  # torchrun set MASTER_ADDR/PORT, RANK and WORLD_SIZE: env:// reads them
        dist.init_process_group(backend)
    else:  # a plain `python fsdp_train.py`: a group of one, since fully_shard needs one
        dist.init_process_group(backend, store=dist.HashStore(), rank=0, world_size=1)

    run = job.init()
    torch.manual_seed(SEED)
    model = LlamaForCausalLM(CONFIG).to(device)
    for layer in model.model.layers:
        fully_shard(layer)
    fully_shard(model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=LEARNING_RATE)

    def state() -> dict[str, object]:
        """This rank's shards of the model and optimizer (DTensors, by reference: no copy)."""
        model_sd, optim_sd = get_state_dict(model, optimizer)
        return {"model": model_sd, "optim": optim_sd}

    restored = state()
    if run.restore_sharded(restored) is not None:
        set_state_dict(model, optimizer, model_state_dict=restored["model"], optim_state_dict=restored["optim"])
    start = (run.checkpoint_step or 0) + 1
    if run.rank == 0:
        if run.checkpoint_step is not None:
            print(f"resumed from step={run.checkpoint_step}", flush=True)
        print(f"start step={start} world_size={run.world_size} attempt={run.attempt}", flush=True)

    done = start - 1  # the last completed step
    for step in range(start, args.steps + 1):
        if run.should_stop:  # SIGTERM on any rank: all ranks agree here and save below
            break
        began = time.perf_counter()
        tokens = batch(step, run.rank, device)
        loss = model(input_ids=tokens, labels=tokens).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        done = step
        mean = loss.detach().clone()
        dist.all_reduce(mean, op=dist.ReduceOp.AVG if device.type == "cuda" else dist.ReduceOp.SUM)
        if device.type != "cuda":  # gloo has no AVG
            mean /= run.world_size
        run.log(step=step, loss=mean.item(), step_s=time.perf_counter() - began)
        if step % args.save_every == 0:
            run.save_sharded(state(), step=step, async_save=not args.sync_save)
            pause_if_asked(run, step)
        if args.sleep:
            time.sleep(args.sleep)
    if done != run.checkpoint_step and done % args.save_every != 0:
        run.save_sharded(state(), step=done)  # the last completed step, waited for
    if run.rank == 0:
        print(f"done step={done}", flush=True)
    run.finish()  # waits for an async save still in flight, then sends what is unsent
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
