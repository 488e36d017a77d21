"""Churn model on the synthetic customer dataset, read through the governed catalog: `run.dataset("clientes")`.

    treino submit examples/churn_job.yaml        # under the server: the pinned version, the read audited
    python examples/churn_train.py --data examples/data/clientes.parquet   # locally, on a file

A logistic regression on age, monthly income and purchases (standardised), trained with full-batch AdamW; it
checkpoints through the SDK, so the server's lineage links every checkpoint and the final model to the exact
dataset version it read.
"""

from __future__ import annotations

import argparse

import torch
from torch import nn

from treino import job

FEATURES = ("idade", "renda_mensal", "compras_12m")
LABEL = "churn"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--save-every", type=int, default=25)
    parser.add_argument("--data", default="clientes", help="dataset name (under the server) or a Parquet path")
    args = parser.parse_args()

    run = job.init()
    table = run.dataset(args.data, as_table=True)
    x = torch.tensor([table.column(c).to_pylist() for c in FEATURES], dtype=torch.float32).T  # (rows, 3)
    y = torch.tensor(table.column(LABEL).to_pylist(), dtype=torch.float32)
    x = (x - x.mean(0)) / x.std(0)
    torch.manual_seed(0)
    model = nn.Linear(len(FEATURES), 1)
    opt = torch.optim.AdamW(model.parameters(), lr=0.05)
    start = 1
    state = run.restore()
    if state is not None:
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        start = state["step"] + 1
        print(f"resumed from step={state['step']}", flush=True)
    print(f"training on {table.num_rows} rows", flush=True)
    loss = torch.tensor(0.0)
    for step in range(start, args.steps + 1):
        logits = model(x).squeeze(1)
        loss = nn.functional.binary_cross_entropy_with_logits(logits, y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        accuracy = float(((logits > 0).float() == y).float().mean())
        run.log(step=step, loss=loss.item(), accuracy=accuracy)
        if step % args.save_every == 0 or step == args.steps or run.should_stop:
            run.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, step=step)
        if run.should_stop:
            print(f"stopped step={step}", flush=True)
            return
    print(f"done step={args.steps} loss={loss.item():.4f} rows={table.num_rows}", flush=True)
    run.finish()


if __name__ == "__main__":
    main()
