"""Synthetic Brazilian customer data for demos, tests and benchmarks. ALL DATA HERE IS SYNTHETIC: the CPFs are
random nine-digit numbers completed with valid check digits, the names are drawn from short lists of common first
names and surnames, and no row describes a real person.

    python -m treino.govern.synthetic examples/data/clientes.csv --rows 2000 --seed 7

Columns: cpf (valid, formatted NNN.NNN.NNN-DV), nome, cidade, uf, idade (years), renda_mensal (BRL per month),
compras_12m (purchases in the last 12 months), churn (0/1). Churn is drawn from a logistic model of the other
columns (fewer purchases, lower income and younger customers churn more; see CHURN_*), so a classifier trained on
the file learns something real about its inputs.
"""

from __future__ import annotations

import argparse
import csv
import math
import random
from pathlib import Path
from typing import Any

from treino.govern.cpf import make_cpf

DEFAULT_SEED = 7
DEFAULT_ROWS = 2_000
COLUMNS = ("cpf", "nome", "cidade", "uf", "idade", "renda_mensal", "compras_12m", "churn")

FIRST_NAMES = (
    "Ana", "Maria", "Francisca", "Antônia", "Adriana", "Juliana", "Márcia", "Fernanda", "Patrícia", "Aline",
    "José", "João", "Antônio", "Francisco", "Carlos", "Paulo", "Pedro", "Lucas", "Luiz", "Marcos",
    "Gabriel", "Rafael", "Beatriz", "Larissa", "Camila", "Mateus", "Thiago", "Letícia", "Bruno", "Vitória",
)  # fmt: skip
SURNAMES = (
    "Silva", "Santos", "Oliveira", "Souza", "Rodrigues", "Ferreira", "Alves", "Pereira", "Lima", "Gomes",
    "Costa", "Ribeiro", "Martins", "Carvalho", "Almeida", "Lopes", "Soares", "Fernandes", "Vieira", "Barbosa",
)  # fmt: skip
CITIES = (
    ("São Paulo", "SP"), ("Campinas", "SP"), ("Rio de Janeiro", "RJ"), ("Niterói", "RJ"), ("Belo Horizonte", "MG"),
    ("Salvador", "BA"), ("Fortaleza", "CE"), ("Recife", "PE"), ("Curitiba", "PR"), ("Porto Alegre", "RS"),
    ("Manaus", "AM"), ("Belém", "PA"), ("Goiânia", "GO"), ("Brasília", "DF"), ("Florianópolis", "SC"),
)  # fmt: skip

AGE_MIN_YEARS, AGE_MAX_YEARS = 18, 80
INCOME_MEDIAN_BRL = 3_000.0  # lognormal median; sigma below gives a long right tail
INCOME_SIGMA = 0.6
# churn ~ Bernoulli(sigmoid(z)), z = CHURN_BIAS + purchases * CHURN_PER_PURCHASE + log(income / median) *
# CHURN_PER_LOG_INCOME + (age - 40) * CHURN_PER_YEAR: about a third of customers churn.
CHURN_BIAS = 0.4
CHURN_PER_PURCHASE = -0.18
CHURN_PER_LOG_INCOME = -0.8
CHURN_PER_YEAR = -0.03


def random_cpf(rng: random.Random, formatted: bool = True) -> str:
    """A valid CPF: nine random digits (never one repeated digit) and their check digits."""
    while True:
        first_nine = f"{rng.randrange(10**9):09d}"
        if first_nine != first_nine[0] * 9:
            return make_cpf(first_nine, formatted)


def generate(rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """`rows` synthetic customers with distinct CPFs; the same seed always gives the same rows."""
    rng = random.Random(seed)
    seen: set[str] = set()
    out: list[dict[str, Any]] = []
    while len(out) < rows:
        cpf = random_cpf(rng)
        if cpf in seen:
            continue
        seen.add(cpf)
        age = rng.randint(AGE_MIN_YEARS, AGE_MAX_YEARS)
        income = round(INCOME_MEDIAN_BRL * math.exp(rng.gauss(0.0, INCOME_SIGMA)), 2)
        purchases = min(60, int(rng.expovariate(1 / 6)))
        z = (
            CHURN_BIAS
            + purchases * CHURN_PER_PURCHASE
            + math.log(income / INCOME_MEDIAN_BRL) * CHURN_PER_LOG_INCOME
            + (age - 40) * CHURN_PER_YEAR
        )
        churn = int(rng.random() < 1 / (1 + math.exp(-z)))
        city, uf = rng.choice(CITIES)
        name = f"{rng.choice(FIRST_NAMES)} {rng.choice(SURNAMES)} {rng.choice(SURNAMES)}"
        out.append(dict(zip(COLUMNS, (cpf, name, city, uf, age, income, purchases, churn), strict=True)))
    return out


def write_csv(path: Path, rows: int = DEFAULT_ROWS, seed: int = DEFAULT_SEED) -> Path:
    """Write `rows` synthetic customers to `path` (UTF-8 CSV with a header); returns the path."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=COLUMNS)
        writer.writeheader()
        writer.writerows(generate(rows, seed))
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Write synthetic Brazilian customer data (all synthetic).")
    parser.add_argument("path", type=Path)
    parser.add_argument("--rows", type=int, default=DEFAULT_ROWS)
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    write_csv(args.path, args.rows, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
