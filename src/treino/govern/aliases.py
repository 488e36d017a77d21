"""Pseudonyms made before canonical ids, tied to the canonical ones without rewriting the audit chain.

Up to revision 0008 a CPF typed without its leading zero (`6346942190`) got another pseudonym than the same CPF typed
in full (`063.469.421-90`). The chain's records are hashed and signed, so their `subject` is never rewritten; instead:

- `realias` (run by migration 0009_identity, and safe to run again) reads the subject columns of the stored dataset
  versions, and for every id whose old pseudonym differs from its canonical one and appears in the audit chain or
  in an erasure, appends one `subject.alias` record (subject: the canonical pseudonym; detail: the old one) and
  re-pseudonymises the erasure rows (a plain table, not part of the chain);
- `subject_pseudonyms` gives, for an id typed at a query, its canonical pseudonym, the pseudonyms of its old
  spellings (computed: this covers subjects whose rows are gone), and the old pseudonyms the chain's alias records
  tie to it: a subject report or an audit export by subject looks for all of them.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from treino.govern.audit import Action, AuditLog, pseudonym, raw_pseudonym
from treino.govern.identity import canonical_id, legacy_id, legacy_ids
from treino.govern.models import AuditRecord, Dataset, DatasetVersion, Erasure

ALIAS_ACTOR = "treino"  # the actor of the alias records a migration appends
IN_CHUNK = 5_000  # pseudonyms per IN (...): a store may hold millions of ids, a statement at most 65,535 parameters


def aliases_of(session: Session, canonical_pseudonym: str) -> list[str]:
    """The old pseudonyms that the chain's `subject.alias` records tie to `canonical_pseudonym`."""
    details = session.scalars(
        select(AuditRecord.detail).where(
            AuditRecord.action == Action.SUBJECT_ALIAS.value, AuditRecord.subject == canonical_pseudonym
        )
    )
    return [str(d["old_pseudonym"]) for d in details]


def subject_pseudonyms(session: Session, key: bytes, subject_id: str) -> list[str]:
    """Every pseudonym the subject `subject_id` may be recorded under; the canonical one first."""
    canonical = pseudonym(key, subject_id)
    legacy = [raw_pseudonym(key, old) for old in legacy_ids(subject_id)]
    return list(dict.fromkeys([canonical, *legacy, *aliases_of(session, canonical)]))


def _stored_ids(session: Session, store: Path) -> set[str]:
    """The distinct values of every subject column, over the dataset versions whose bytes are in the store."""
    ids: set[str] = set()
    rows = session.execute(
        select(Dataset.subject_column, DatasetVersion.path)
        .join(DatasetVersion, DatasetVersion.dataset_id == Dataset.id)
        .where(Dataset.subject_column.is_not(None), DatasetVersion.purged_at.is_(None))
    )
    for column, rel in rows:
        path = store / rel
        if not path.exists():
            continue
        values = pq.read_table(path, columns=[column]).column(0)
        values = values if pa.types.is_string(values.type) else pc.cast(values, pa.string())
        ids.update(v for v in pc.unique(values).to_pylist() if v is not None)
    return ids


def realias(session: Session, key: bytes, store: Path, audit: AuditLog) -> int:
    """Tie each old pseudonym in use to its canonical one (module docstring); returns how many were tied."""
    olds: dict[str, str] = {}  # old pseudonym -> canonical pseudonym
    for raw in _stored_ids(session, store):
        old = legacy_id(raw)
        if old != canonical_id(raw):
            olds[raw_pseudonym(key, old)] = pseudonym(key, raw)
    if not olds:
        return 0
    in_chain: set[str] = set()
    in_erasures: set[str] = set()
    keys = sorted(olds)
    for i in range(0, len(keys), IN_CHUNK):  # bound parameters per statement: SQLite's and psycopg's limits
        chunk = keys[i : i + IN_CHUNK]
        in_chain.update(
            p for p in session.scalars(select(AuditRecord.subject).where(AuditRecord.subject.in_(chunk))) if p
        )
        in_erasures.update(
            session.scalars(select(Erasure.subject_pseudonym).where(Erasure.subject_pseudonym.in_(chunk)))
        )
    done = {
        str(d["old_pseudonym"])
        for d in session.scalars(select(AuditRecord.detail).where(AuditRecord.action == Action.SUBJECT_ALIAS.value))
    }
    tied = 0
    for old in sorted((in_chain | in_erasures) - done):
        new = olds[old]
        detail = {"old_pseudonym": old, "reason": "canonical identifier (migration 0009_identity)"}
        audit.append(session, actor=ALIAS_ACTOR, action=Action.SUBJECT_ALIAS, subject=new, detail=detail)
        session.execute(update(Erasure).where(Erasure.subject_pseudonym == old).values(subject_pseudonym=new))
        tied += 1
    return tied
