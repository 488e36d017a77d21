"""Speed of erasing one data subject (LGPD Art. 18 VI) from a 10-million-row Parquet dataset, against the issue's
target: <= 15 s on the 2-core CI machine, with pyarrow.compute and no pandas round trip.

    python benchmarks/erasure_bench.py        (part of make bench)

The dataset is synthetic: 10 M rows of valid formatted CPFs (random, built with numpy) and four numeric columns;
the subject has 3 rows. It is generated once and cached under $TMPDIR/treino-erasure-bench. The measured time is
the erasure end to end, as the server runs it: `scan_erasure` (read the latest version, match the subject's CPF
digits on both sides, write the new version, hash it) before the transaction, then `erase_subject` in it (update the
database, delete the old version's bytes); the table gives the transaction's share, the time other writers wait.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from rich.console import Console
from rich.table import Table

from treino.govern import datasets as D
from treino.server.db import make_engine, make_sessionmaker, migrate

ROWS = 10_000_000
SUBJECT_ROWS = (17, 4_321_987, 9_999_001)  # row indices that hold the erased subject
SEED = 7
TARGET_S = 15.0
CACHE = Path(tempfile.gettempdir()) / "treino-erasure-bench" / f"clientes-{ROWS}.parquet"


def cpf_column(first_nine: np.ndarray) -> pa.StringArray:
    """Formatted CPFs (NNN.NNN.NNN-DV) for an int array of nine-digit prefixes, built as one Arrow string buffer;
    check digits per lgpd-requirements.md §7.3 (weights 10..2 then 11..2, r = sum mod 11, 0 if r < 2 else 11 - r)."""
    n = len(first_nine)
    digits = np.empty((n, 11), np.uint8)
    for i in range(9):
        digits[:, i] = (first_nine // 10 ** (8 - i)) % 10
    for k, first_weight in ((9, 10), (10, 11)):
        weights = np.arange(first_weight, 1, -1, dtype=np.int64)
        r = (digits[:, :k].astype(np.int64) @ weights) % 11
        digits[:, k] = np.where(r < 2, 0, 11 - r)
    chars = np.empty((n, 14), np.uint8)
    chars[:, [0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13]] = digits + ord("0")
    chars[:, [3, 7]] = ord(".")
    chars[:, 11] = ord("-")
    offsets = np.arange(0, 14 * (n + 1), 14, dtype=np.int32)
    return pa.Array.from_buffers(pa.string(), n, [None, pa.py_buffer(offsets), pa.py_buffer(chars.tobytes())])


def build(path: Path) -> str:
    """Write the synthetic dataset to `path` (if absent); returns the subject's CPF."""
    rng = np.random.default_rng(SEED)
    first_nine = rng.integers(1, 10**9, ROWS)
    subject_nine = first_nine[SUBJECT_ROWS[0]]
    first_nine[list(SUBJECT_ROWS)] = subject_nine
    cpfs = cpf_column(first_nine)
    if not path.exists():
        table = pa.table(
            {
                "cpf": cpfs,
                "idade": rng.integers(18, 81, ROWS).astype(np.int16),
                "renda_mensal": np.round(3000 * np.exp(rng.normal(0, 0.6, ROWS)), 2),
                "compras_12m": rng.poisson(6, ROWS).astype(np.int32),
                "churn": rng.integers(0, 2, ROWS).astype(np.int8),
            }
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        pq.write_table(table, tmp)
        tmp.replace(path)
    return str(cpfs[SUBJECT_ROWS[0]].as_py())


def main() -> int:
    console = Console()
    subject = build(CACHE)
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{tmp}/t.db")
        migrate(engine)
        store = Path(tmp) / "store"
        with make_sessionmaker(engine)() as session:
            t0 = time.perf_counter()
            reg = D.register_dataset(
                session,
                store,
                name="clientes",
                path=CACHE,
                allowed_roots=[CACHE.parent],
                legal_basis="art7-v",
                purposes=["churn-model"],
                personal_data=True,
                sensitive=False,
                retention_days=365,
                subject_column="cpf",
                actor="bench",
            )
            session.commit()
            register_s = time.perf_counter() - t0
            t0 = time.perf_counter()  # as the server does it: the Parquet work first, then one short transaction
            scan = D.scan_erasure(session, store, subject_id=subject, dataset="clientes")
            session.commit()
            scan_s = time.perf_counter() - t0
            t1 = time.perf_counter()
            erasure = D.open_erasure(session, subject_pseudonym="0" * 64, dataset=None, requested_by="bench")
            result = D.erase_subject(
                session, store, subject_id=subject, dataset="clientes", actor="bench", erasure_id=erasure.id, scan=scan
            )
            session.commit()
            transaction_s = time.perf_counter() - t1
            erase_s = time.perf_counter() - t0
            t0 = time.perf_counter()
            report = D.subject_report(session, store, subject)
            report_s = time.perf_counter() - t0
        engine.dispose()
    assert result.rows_removed == len(SUBJECT_ROWS), result.text()
    assert not D.version_path(store, reg.version).exists() and not report.found

    table = Table(title=f"erasure of one subject ({len(SUBJECT_ROWS)} rows) from {ROWS:,} Parquet rows")
    for col in ("benchmark", "measured", "target", "ratio to target"):
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    table.add_row("erasure (scan_erasure + erase_subject)", f"{erase_s:.1f} s", "<= 15 s", f"{erase_s / TARGET_S:.2f}")
    table.add_row("  of which in the write transaction", f"{transaction_s:.2f} s", "-", "-")
    table.add_row("  of which scan_erasure (no lock held)", f"{scan_s:.1f} s", "-", "-")
    table.add_row("register_dataset (for reference)", f"{register_s:.1f} s", "-", "-")
    table.add_row("subject_report (for reference)", f"{report_s:.1f} s", "-", "-")
    console.print(table)
    console.print(
        f"v1 {reg.version.bytes / 1e6:.0f} MB. scan_erasure = read v1, match the CPF digits, write v2, hash it; "
        "erase_subject = update the database (other writers wait for this part only), delete v1's bytes. "
        "Ratio to target: measured / target (<= 1 meets it)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
