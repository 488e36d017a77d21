"""treino: plan, benchmark, run and govern ML training on dedicated GPU servers."""

__version__ = "0.1.0"
