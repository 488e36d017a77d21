"""A model that is not a Hugging Face one, for `--model tests.trace.tiny_model:build`."""

from __future__ import annotations

import torch
from torch import nn

VOCAB, WIDTH, TOKENS, BATCH = 64, 32, 16, 4


class TinyLM(nn.Module):
    """Embedding -> MLP -> head; forward returns the cross-entropy loss of predicting `targets`."""

    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(VOCAB, WIDTH)
        self.mlp = nn.Sequential(nn.Linear(WIDTH, 4 * WIDTH), nn.GELU(), nn.Linear(4 * WIDTH, WIDTH))
        self.head = nn.Linear(WIDTH, VOCAB, bias=False)

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        x = self.embed(tokens)  # (B, T, C)
        logits = self.head(x + self.mlp(x))  # (B, T, VOCAB)
        return nn.functional.cross_entropy(logits.flatten(0, 1), targets.flatten())


def build() -> tuple[nn.Module, dict[str, torch.Tensor]]:
    tokens = torch.randint(0, VOCAB, (BATCH, TOKENS))
    return TinyLM(), {"tokens": tokens, "targets": tokens.roll(-1, dims=1)}


def params() -> int:
    """TinyLM's parameter count, by hand: embedding, two biased linears, the head."""
    return VOCAB * WIDTH + (WIDTH * 4 * WIDTH + 4 * WIDTH) + (4 * WIDTH * WIDTH + WIDTH) + WIDTH * VOCAB


def not_a_pair() -> nn.Module:
    return TinyLM()


class ReadsValues(TinyLM):
    """Branches on a tensor's value, which fake tensors do not have."""

    def forward(self, tokens: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        loss = super().forward(tokens, targets)
        return loss * 2 if loss.item() > 0 else loss


def build_reads_values() -> tuple[nn.Module, dict[str, torch.Tensor]]:
    _, batch = build()
    return ReadsValues(), batch
