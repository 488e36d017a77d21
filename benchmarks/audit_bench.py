"""Speed of the audit chain (treino.govern.audit) against the LGPD issue's targets, on SQLite in WAL mode.

    python benchmarks/audit_bench.py

1. append, one transaction per APPEND_BATCH records, as the server commits a burst of events (target >= 5,000/s).
2. append, one record per transaction: the worst case, bounded by SQLite's commit cost (same target, reported).
3. verify of VERIFY_RECORDS records, bulk-loaded first with append_many (target <= 10 s).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from treino.govern.audit import Action, AuditLog, pseudonym, verify
from treino.server.db import make_engine, make_sessionmaker, migrate

KEY = b"benchmark-key-not-a-secret-0123456789"
APPEND_RECORDS = 5_000
APPEND_BATCH = 100
SINGLE_RECORDS = 1_000
VERIFY_RECORDS = 1_000_000
LOAD_BATCH = 20_000
APPEND_TARGET_PER_S = 5_000
VERIFY_TARGET_S = 10.0


def event(n: int, subject: str) -> dict[str, object]:
    """A realistic record: a dataset read by a job, one in ten naming a subject."""
    return {
        "actor": f"engineer{n % 7}",
        "action": Action.DATASET_READ,
        "dataset": "clientes",
        "subject": subject if n % 10 == 0 else None,
        "job_id": n // 100,
        "detail": {"version": 3, "purpose": "churn-model", "rows": 1_250_000, "site": "eveo-sp1"},
    }


def main() -> int:
    console = Console()
    table = Table(title="treino audit chain (SQLite WAL), against the LGPD issue's targets")
    for col in ("benchmark", "measured", "target", "ratio to target"):
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    subject = pseudonym(KEY, "123.456.789-09")
    with tempfile.TemporaryDirectory() as tmp:
        engine = make_engine(f"sqlite:///{Path(tmp) / 'append.db'}")
        migrate(engine)
        sessions = make_sessionmaker(engine)
        log = AuditLog(KEY)

        t0 = time.perf_counter()
        for start in range(0, APPEND_RECORDS, APPEND_BATCH):
            with sessions.begin() as s:
                for n in range(start, start + APPEND_BATCH):
                    log.append(s, **event(n, subject))  # type: ignore[arg-type]
        rate = APPEND_RECORDS / (time.perf_counter() - t0)
        table.add_row(
            f"append, {APPEND_BATCH} records per transaction ({APPEND_RECORDS:,})",
            f"{rate:,.0f} records/s",
            f">= {APPEND_TARGET_PER_S:,}/s",
            f"{rate / APPEND_TARGET_PER_S:.2f}",
        )

        t0 = time.perf_counter()
        for n in range(SINGLE_RECORDS):
            with sessions.begin() as s:
                log.append(s, **event(n, subject))  # type: ignore[arg-type]
        rate = SINGLE_RECORDS / (time.perf_counter() - t0)
        table.add_row(
            f"append, 1 record per transaction ({SINGLE_RECORDS:,})",
            f"{rate:,.0f} records/s",
            f">= {APPEND_TARGET_PER_S:,}/s",
            f"{rate / APPEND_TARGET_PER_S:.2f}",
        )
        engine.dispose()

        engine = make_engine(f"sqlite:///{Path(tmp) / 'verify.db'}")
        migrate(engine)
        sessions = make_sessionmaker(engine)
        t0 = time.perf_counter()
        for start in range(0, VERIFY_RECORDS, LOAD_BATCH):
            with sessions.begin() as s:
                log.append_many(s, [event(n, subject) for n in range(start, start + LOAD_BATCH)])
        load_rate = VERIFY_RECORDS / (time.perf_counter() - t0)
        table.add_row(
            f"append_many bulk load ({VERIFY_RECORDS:,}, {LOAD_BATCH:,} per transaction)",
            f"{load_rate:,.0f} records/s",
            "-",
            "-",
        )

        t0 = time.perf_counter()
        with sessions() as s:
            result = verify(s, KEY, checkpoint_every=log.checkpoint_every)
        seconds = time.perf_counter() - t0
        assert result.ok and result.records == VERIFY_RECORDS, result
        table.add_row(
            f"verify {VERIFY_RECORDS:,} records, {result.checkpoints:,} checkpoints",
            f"{seconds:.2f} s ({VERIFY_RECORDS / seconds:,.0f}/s)",
            f"<= {VERIFY_TARGET_S:.0f} s",
            f"{seconds / VERIFY_TARGET_S:.2f}",
        )
        engine.dispose()
    console.print(table)
    console.print(
        "ratio to target: measured / target for times (<= 1 meets it), target-relative for rates (>= 1 meets it)."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
