"""Erased stays erased: tombstones of erased subjects, and imports checked against them.

An erasure (Art. 18 VI) leaves a tombstone: HMAC-SHA256(tombstone salt, canonical id) in `erased_subjects`, with the
dataset it was erased from (none: every dataset). The salt is derived from the server key
(HMAC-SHA256(key, TOMBSTONE_SALT_LABEL)), so it lives in the server's secrets: a plain hash of a CPF would be
brute-forced over its 10^9 values, and a tombstone is not the subject's pseudonym either, so the tombstone list
cannot be joined with the audit chain. The id is canonical (treino.govern.identity), so a re-import that types the
CPF otherwise (`6346942190` for `063.469.421-90`) or changes every other field of the row is still caught.

Every import (a new dataset, a new version) runs its subject column through `KeepOut`: the erased subjects' rows
are stripped (the default; the answer and an `erasure.reimport` audit record give the count, never an id), or with
`strict` the import is refused.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker
import pyarrow.compute as pc  # type: ignore[import-untyped]
from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import PolicyViolation
from treino.govern.identity import canonical_id
from treino.govern.models import ErasedSubject

TOMBSTONE_SALT_LABEL = b"treino tombstone salt v1"


def tombstone_salt(key: bytes) -> bytes:
    return hmac.new(key, TOMBSTONE_SALT_LABEL, hashlib.sha256).digest()


def tombstone_digest(salt: bytes, subject_id: str) -> str:
    """HMAC-SHA256(salt, canonical id), hex."""
    return hmac.new(salt, canonical_id(subject_id).encode(), hashlib.sha256).hexdigest()


def bury(session: Session, key: bytes, subject_id: str, *, dataset: str | None, erasure_id: int) -> None:
    """The tombstone of an erasure of `subject_id` from `dataset` (None: every dataset)."""
    digest = tombstone_digest(tombstone_salt(key), subject_id)
    session.add(ErasedSubject(digest=digest, dataset=dataset, erasure_id=erasure_id))
    session.flush()


class ErasedSubjectsRefused(PolicyViolation):
    """An import refused (strict) for holding `rows` rows of `subjects` erased subjects."""

    def __init__(self, rows: int, subjects: int, column: str) -> None:
        super().__init__(
            "LGPD Art. 18 VI",
            f"{rows} row(s) of this import belong to {subjects} subject(s) erased earlier (matched on column "
            f"'{column}', however their id was typed). To fix: remove those rows from the file, or import it "
            "without --strict to have them stripped.",
        )
        self.rows, self.subjects = rows, subjects


@dataclass
class KeepOut:
    """Strips (or, `strict`, refuses) erased subjects' rows from imported tables; counts what it stripped."""

    session: Session
    key: bytes
    strict: bool = False
    rows: int = 0  # rows stripped so far
    subjects: int = 0  # distinct erased subjects among them

    def __call__(self, table: pa.Table, column: str | None, dataset: str) -> pa.Table:
        if column is None or column not in table.column_names:
            return table
        digests = set(
            self.session.scalars(
                select(ErasedSubject.digest).where(
                    (ErasedSubject.dataset.is_(None)) | (ErasedSubject.dataset == dataset)
                )
            )
        )
        if not digests:
            return table
        values = table.column(column)
        values = values if pa.types.is_string(values.type) else pc.cast(values, pa.string())
        salt = tombstone_salt(self.key)
        erased = [v for v in pc.unique(values).to_pylist() if v is not None and tombstone_digest(salt, v) in digests]
        if not erased:
            return table
        mask = pc.is_in(values, value_set=pa.array(erased, pa.string()))
        rows = int(pc.sum(mask).as_py() or 0)
        subjects = len({canonical_id(v) for v in erased})
        if self.strict:
            raise ErasedSubjectsRefused(rows, subjects, column)
        self.rows += rows
        self.subjects += subjects
        return table.filter(pc.invert(mask))
