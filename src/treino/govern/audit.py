"""The audit log: append-only, hash-chained, with HMAC-signed checkpoints (lgpd-requirements.md §5, R27-R29).

Every record is one row of `audit_records`; rows are never updated or deleted. An auditor re-implements the check
from this docstring alone:

    fields    = {seq, time, actor, action, dataset, subject, job_id, detail, prev_hash}   (every column but hash)
    canonical = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    hash      = sha256(utf8(prev_hash + canonical)).hexdigest()
    seq starts at 1 and grows by 1; record 1 has prev_hash = GENESIS_HASH ("0" * 64); record n has
    prev_hash = hash of record n - 1. `time` is unix seconds as a JSON float, `job_id` an int or null, `detail`
    a JSON object.

    checkpoint (audit_checkpoints, every `checkpoint_every` records and on demand):
    hmac = HMAC-SHA256(server key, utf8(f"{seq}:{hash}")).hexdigest(), where hash is the hash of record `seq`.

What `verify` catches, and how:
    a record edited in place            its recomputed hash differs from its stored hash
    a record deleted                    a gap in seq (or prev_hash not linking) at the record after it
    a record inserted, the rest renumbered   the next record's prev_hash no longer links
    records swapped or reordered        prev_hash no longer links, at the first of them
    the tail cut off                    the last checkpoint names a seq beyond the last record
    the chain rewritten wholesale       a checkpoint's signed hash no longer matches the recomputed one; without
      (hashes recomputed correctly)     the key, new checkpoints cannot be signed
    a checkpoint forged or edited       its HMAC does not verify under the server key
What it cannot catch alone: records appended after the last checkpoint and then cut off together with every
checkpoint that covers them (publish `VerifyResult.last_hash` or checkpoints to an outside witness for that, R28).

Records hold pseudonyms, never raw identifiers: `subject` must be `pseudonym(key, id)` (keyed HMAC, §7.1), and a
detail that carries a CPF is refused (R29: a CPF scan of the log store finds nothing).

Appends run inside the caller's transaction (the caller commits). The chain is single-writer: `AuditLog` holds a
lock and reads the head (last seq and hash) from the table on every append, so a rolled-back append never leaves
a stale head behind. Two concurrent transactions that both append would pick the same seq: the primary key would
make the second commit fail (the chain is never forked silently), so the first append of a transaction waits for
every other appending transaction to end before it reads the head: on SQLite by taking the database's write lock
(a no-op UPDATE), on PostgreSQL with a transaction-level advisory lock (CHAIN_LOCK_KEY); both at most 10 s.
"""

from __future__ import annotations

import csv
import datetime as dt
import difflib
import enum
import hashlib
import hmac
import json
import math
import re
import sqlite3
import threading
import time
import weakref
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, TextIO, cast

from sqlalchemy import ColumnElement, Float, Integer, String, Table, column, func, insert, select, table
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, SessionTransaction

from treino.errors import TreinoError
from treino.govern.identity import canonical_id
from treino.govern.models import (
    AuditCheckpoint,
    AuditRecord,
    Dataset,
    DatasetVersion,
    Erasure,
    Grant,
    JobDataset,
    Model,
    Transfer,
    User,
)
from treino.i18n import Msg
from treino.orm import database_fault

GENESIS_HASH = "0" * 64
CHECKPOINT_EVERY_RECORDS = 1000  # default interval of signed checkpoints
KEY_MIN_BYTES = 16  # HMAC keys shorter than this are refused (fail closed on weak or default secrets)
VERIFY_BATCH_ROWS = 10_000  # rows fetched per round trip while verifying or exporting
CHAIN_LOCK_KEY = int.from_bytes(b"treinoAL", "big")  # PostgreSQL advisory lock: one appending transaction at a time
CHAIN_LOCK_TIMEOUT = "10s"  # PostgreSQL's lock_timeout for the rest of that transaction (SQLite: its busy timeout)
CONTROLLER_PLACEHOLDER = "<controller: name, CNPJ and address of the controlador (LGPD Art. 5 VI)>"

FIELDS = ("seq", "time", "actor", "action", "dataset", "subject", "job_id", "detail", "prev_hash")
EXPORT_COLUMNS = (*FIELDS[:2], "time_utc", *FIELDS[2:], "hash")
_RAW_TYPES = (Integer, Float, String, String, String, String, Integer, String, String, String)  # detail as text
# The canonical form of the docstring; one encoder object, so verify does not rebuild it per record.
_CANONICAL = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False)
# The server's jobs table, named in the Art. 37 records: a Core reference, so govern/ does not import server/.
_JOBS = table("jobs", column("id", Integer), column("name", String), column("owner", String), column("state", String))
_PSEUDONYM_RE = re.compile(r"[0-9a-f]{64}")
# CPFs in a record (lgpd-requirements.md §7.3): the NNN.NNN.NNN-NN mask anywhere, or a JSON string of exactly 11
# digits. Bare 11-digit numbers are not flagged: byte counts and hashes would trip the 1-in-100 check digits.
_CPF_IN_TEXT_RE = re.compile(r"(?<!\d)\d{3}\.\d{3}\.\d{3}-\d{2}(?!\d)|(?<=\")\d{11}(?=\")")


class Action(enum.StrEnum):
    DATASET_REGISTER = "dataset.register"
    DATASET_VERSION = "dataset.version"
    DATASET_READ = "dataset.read"
    GRANT_CREATE = "grant.create"
    GRANT_REVOKE = "grant.revoke"
    JOB_ADMIT = "job.admit"
    JOB_DENY = "job.deny"  # detail: {"rule": ..., "reason": ...}
    JOB_START = "job.start"  # detail: {"attempt", "backend", "nodes", and on Slurm "slurm_job_id", "partition"}
    CHECKPOINT_FOUND = "checkpoint.found"  # a checkpoint the job saved but never reported, found on disk
    JOB_CONTINUE = "job.continue"  # a resubmit's starting checkpoint, from the job it continues (detail: from_job)
    ERASURE_REQUEST = "erasure.request"
    ERASURE_COMPLETE = "erasure.complete"
    ERASURE_MEMORISATION = "erasure.memorisation"  # a SISA retraining's memorisation check (treino.server.unlearning)
    SUBJECT_REPORT = "subject.report"
    TOKEN_CREATE = "token.create"
    TOKEN_REVOKE = "token.revoke"
    TOKEN_USE = "token.use"  # a token used on a sensitive endpoint (access.SENSITIVE_PERMISSIONS)
    USER_CREATE = "user.create"
    USER_DISABLE = "user.disable"  # detail: {"user": name, "tokens": live tokens it held}; they fail at once
    USER_ENABLE = "user.enable"
    QUOTA_SET = "quota.set"  # detail: {"user" or "role": name, "gpu_hours_month", "concurrent_gpus"}
    TRANSFER_RECORD = "transfer.record"
    MODEL_REGISTER = "model.register"
    MODEL_MARK = "model.mark"  # a model marked as affected by an erasure
    MODEL_QUARANTINE = "model.quarantine"  # detail: {"model", "erasure"}; its file is no longer served
    # A quarantine lifted: the file is served again (treino.server.quarantine). subject: the erasure's; detail:
    # {"model", "erasure", "reason", "legal_basis", "retraining": its job's retraining by the erasure or None,
    # "quarantined_at", "quarantined_by"}
    MODEL_LIFT = "model.lift"
    MODEL_DELETE = "model.delete"  # detail: {"model", "erasure", "paths": removed, "with": the model it went with}
    SUBJECT_ALIAS = "subject.alias"  # detail: {"old_pseudonym"}: a pseudonym from before canonical ids (aliases.py)
    ERASED_ROWS_STRIPPED = "erasure.reimport"  # detail: {"rows", "subjects", "strict"}: erased subjects kept out
    RETENTION_EXTEND = "retention.extend"  # detail: {"retention_days", "from", "until", "legal_basis", "reason"}
    RETENTION_ERASE = "retention.erase"  # detail: {"versions", "models", "expired_at"}: an expired dataset purged


# --- hashing ---------------------------------------------------------------------------------------------------
def canonical_json(fields: Mapping[str, Any]) -> str:
    """The canonical JSON of a record: its FIELDS only (never `hash`), sorted keys, no spaces, UTF-8 kept."""
    return _CANONICAL.encode({k: fields[k] for k in FIELDS})


def record_hash(fields: Mapping[str, Any]) -> str:
    """sha256(prev_hash + canonical JSON), hex."""
    return hashlib.sha256((fields["prev_hash"] + canonical_json(fields)).encode()).hexdigest()


def checkpoint_hmac(key: bytes, seq: int, hash_: str) -> str:
    return hmac.new(key, f"{seq}:{hash_}".encode(), hashlib.sha256).hexdigest()


def normalise_subject_id(subject_id: str) -> str:
    """The id's canonical form (treino.govern.identity): a CPF becomes its 11 digits however it was typed
    ("063.469.421-90", "6346942190" -> "06346942190"); any other id is only stripped."""
    return canonical_id(subject_id)


def pseudonym(key: bytes, subject_id: str) -> str:
    """HMAC-SHA256(key, canonical id), hex: a keyed pseudonym (lgpd-requirements.md §7.1; an unkeyed hash of a
    CPF is reversible by brute force over its 10^9 values). Different keys give unlinkable pseudonyms."""
    return raw_pseudonym(key, normalise_subject_id(subject_id))


def raw_pseudonym(key: bytes, normalised_id: str) -> str:
    """HMAC-SHA256(key, the id exactly as given): for ids already normalised (old spellings, treino.govern.aliases)."""
    _check_key(key)
    return hmac.new(key, normalised_id.encode(), hashlib.sha256).hexdigest()


def _check_key(key: bytes) -> None:
    if not isinstance(key, bytes) or len(key) < KEY_MIN_BYTES:
        raise TreinoError(
            Msg(
                "The audit key must be at least {min_bytes} random bytes. To fix: generate one with "
                "'python -c \"import secrets; print(secrets.token_hex(32))\"'.",
                min_bytes=KEY_MIN_BYTES,
            )
        )


def _cpf_is_valid(digits: str) -> bool:
    """The check-digit test of lgpd-requirements.md §7.3 (DV1 weights 10..2, DV2 weights 11..2), of the 11 digits
    that _CPF_IN_TEXT_RE matches."""
    if digits == digits[0] * 11:
        return False
    for n in (9, 10):
        r = sum(int(d) * w for d, w in zip(digits[:n], range(n + 1, 1, -1), strict=True)) % 11
        if int(digits[n]) != (0 if r < 2 else 11 - r):
            return False
    return True


# --- appending -------------------------------------------------------------------------------------------------
# audit_records with plain column types, for inserts and reads that skip the JSON type's processing: on SQLite the
# detail is stored as its canonical text, so verify hashes it without parsing and re-encoding it (see _fast_hash).
_RECORDS_RAW = table(
    "audit_records",
    *(column(name, type_) for name, type_ in zip((*FIELDS, "hash"), _RAW_TYPES, strict=True)),
)

_INSERT_RAW = insert(_RECORDS_RAW)
# A declarative class's __table__ is typed FromClause; a class mapped by its own columns, as these are, has a Table.
_INSERT = insert(cast(Table, AuditRecord.__table__))
_INSERT_CHECKPOINT = insert(cast(Table, AuditCheckpoint.__table__))


@dataclass(frozen=True, slots=True)
class Appended:
    """The fields of a record just appended (the columns of AuditRecord)."""

    seq: int
    time: float
    actor: str
    action: str
    dataset: str | None
    subject: str | None
    job_id: int | None
    detail: dict[str, Any]
    prev_hash: str
    hash: str


class AuditLog:
    """Appends records to the chain and signs checkpoints with `key` (the server's audit key)."""

    def __init__(self, key: bytes, checkpoint_every: int = CHECKPOINT_EVERY_RECORDS) -> None:
        _check_key(key)
        if checkpoint_every < 1:
            raise TreinoError(Msg("checkpoint_every must be >= 1 record, not {every}.", every=checkpoint_every))
        self.key = key
        self.checkpoint_every = checkpoint_every
        self._lock = threading.Lock()
        # (transaction, seq, hash) of this log's last append: valid while that transaction is the session's
        # innermost one, since no other transaction can append to the chain before it commits.
        self._head: tuple[weakref.ref[SessionTransaction], int, str] | None = None

    def append(
        self,
        session: Session,
        *,
        actor: str,
        action: Action | str,
        dataset: str | None = None,
        subject: str | None = None,
        job_id: int | None = None,
        detail: Mapping[str, Any] | None = None,
    ) -> Appended:
        """One record, inserted in `session`'s transaction (the caller commits). What it returns is a plain copy of
        the record's fields for reading (building an ORM object cost a quarter of an append's time)."""
        self.hold_chain(session)
        with self._lock:
            seq, prev_hash = self._read_head(session)
            fields = _fields(seq + 1, time.time(), actor, action, dataset, subject, job_id, detail, prev_hash)
            fields["hash"] = record_hash(fields)
            self._insert(session, [fields])
            return Appended(**fields)

    def append_many(self, session: Session, records: Sequence[Mapping[str, Any]]) -> int:
        """Many records in one statement (imports, benchmarks); each a dict of append's keywords, plus an optional
        `time` (unix seconds). Returns how many were appended."""
        self.hold_chain(session)
        with self._lock:
            seq, prev_hash = self._read_head(session)
            rows = []
            for r in records:
                seq += 1
                fields = _fields(
                    seq,
                    r.get("time", time.time()),
                    r["actor"],
                    r["action"],
                    r.get("dataset"),
                    r.get("subject"),
                    r.get("job_id"),
                    r.get("detail"),
                    prev_hash,
                )
                prev_hash = fields["hash"] = record_hash(fields)
                rows.append(fields)
            if rows:
                self._insert(session, rows)
            return len(rows)

    def checkpoint(self, session: Session) -> AuditCheckpoint | None:
        """Sign the current head now (on shutdown, or hourly, so a cut-off tail is caught); None if the log is
        empty. The checkpoint is added to `session`; the caller commits."""
        self.hold_chain(session)
        with self._lock:
            seq, hash_ = self._read_head(session)
            if seq == 0:
                return None
            cp = AuditCheckpoint(**self._signed(seq, hash_))
            session.add(cp)
            session.flush()
            return cp

    def _cached_head(self, session: Session) -> tuple[int, str] | None:
        """(seq, hash) of this log's last append when it was made in `session`'s current transaction (which then
        holds the chain), else None."""
        head = self._head  # one read: another thread may replace it
        txn = session.get_nested_transaction() or session.get_transaction()
        if head is not None and txn is not None and head[0]() is txn and txn.is_active:
            return head[1], head[2]
        return None

    def hold_chain(self, session: Session) -> None:
        """The chain held by `session`'s transaction until it ends: one appending transaction at a time (see the
        module's docstring). Taken before, never while, this log's thread lock is held: a transaction that holds the
        database's write lock (SQLite has one) may be waiting for the thread lock to append, and a thread that held
        the lock while it waited for the database would wait for that transaction, which waits for it."""
        if self._cached_head(session) is not None:
            return
        session.flush()  # records this session added through the ORM must be visible to the head's lookup
        conn = session.connection()
        if conn.dialect.name == "sqlite":
            conn.exec_driver_sql("UPDATE audit_records SET seq = seq WHERE 0")
        elif conn.dialect.name == "postgresql":
            conn.execute(select(func.set_config("lock_timeout", CHAIN_LOCK_TIMEOUT, True)))
            conn.execute(select(func.pg_advisory_xact_lock(CHAIN_LOCK_KEY)))

    def _read_head(self, session: Session) -> tuple[int, str]:
        """(seq, hash) of the last record, or (0, GENESIS_HASH): from this log's own last append in the same
        transaction, else one primary-key lookup. The caller holds the chain (hold_chain)."""
        if (cached := self._cached_head(session)) is not None:
            return cached
        row = session.execute(
            select(AuditRecord.seq, AuditRecord.hash).order_by(AuditRecord.seq.desc()).limit(1)
        ).one_or_none()
        return (0, GENESIS_HASH) if row is None else (row.seq, row.hash)

    def _insert(self, session: Session, rows: list[dict[str, Any]]) -> None:
        # Core statements on the session's connection (same transaction), without the ORM's per-object work.
        conn = session.connection()
        if conn.dialect.name == "sqlite":  # store the canonical text itself (see _RECORDS_RAW)
            conn.execute(_INSERT_RAW, [{**r, "detail": _CANONICAL.encode(r["detail"])} for r in rows])
        else:
            conn.execute(_INSERT, rows)
        every = self.checkpoint_every
        signed = [self._signed(r["seq"], r["hash"]) for r in rows if r["seq"] % every == 0]
        if signed:
            conn.execute(_INSERT_CHECKPOINT, signed)
        txn = session.get_nested_transaction() or session.get_transaction()
        assert txn is not None  # session.connection() began one
        self._head = (weakref.ref(txn), rows[-1]["seq"], rows[-1]["hash"])

    def _signed(self, seq: int, hash_: str) -> dict[str, Any]:
        return {"seq": seq, "hash": hash_, "hmac": checkpoint_hmac(self.key, seq, hash_), "time": time.time()}


def _fields(
    seq: int,
    time_s: float,
    actor: str,
    action: Action | str,
    dataset: str | None,
    subject: str | None,
    job_id: int | None,
    detail: Mapping[str, Any] | None,
    prev_hash: str,
) -> dict[str, Any]:
    """The validated, normalised fields of a record: exactly the types the database gives back, so the hash
    recomputed from a row equals the one computed here."""
    if action not in Action.__members__.values():
        close = difflib.get_close_matches(str(action), [a.value for a in Action], n=1)
        hint = (
            Msg(" Did you mean '{name}'?", name=close[0])
            if close
            else Msg(" Known: {known}.", known=", ".join(a.value for a in Action))
        )
        raise TreinoError(Msg("Unknown audit action {action!r}.{hint}", action=action, hint=hint))
    time_s = float(time_s)  # an int would come back from the REAL column as a float, and hash differently
    if not math.isfinite(time_s):
        raise TreinoError(Msg("An audit record's time must be unix seconds, not {time_s!r}.", time_s=time_s))
    if subject is not None and not _PSEUDONYM_RE.fullmatch(subject):
        raise TreinoError(
            Msg(
                "An audit record's subject must be a pseudonym (64 hex digits), never a raw identifier. To fix: pass "
                "treino.govern.audit.pseudonym(key, subject_id)."
            )
        )
    # A JSON round trip gives detail the form it has when read back (tuples -> lists, int keys -> strings).
    detail_json = json.dumps(dict(detail or {}), ensure_ascii=False)
    for m in _CPF_IN_TEXT_RE.finditer(f'"{actor}" "{dataset}" {detail_json}'):
        if _cpf_is_valid(re.sub(r"\D", "", m.group(0))):
            raise TreinoError(
                Msg(
                    "An audit record may not carry a CPF (LGPD: logs hold pseudonyms only, docs/govern.md). "
                    "To fix: put pseudonym(key, cpf) in subject, and keep identifiers out of detail."
                )
            )
    return {
        "seq": int(seq),
        "time": time_s,
        "actor": str(actor),
        "action": str(Action(action).value),
        "dataset": None if dataset is None else str(dataset),
        "subject": subject,
        "job_id": None if job_id is None else int(job_id),
        "detail": json.loads(detail_json),
        "prev_hash": prev_hash,
    }


# --- verifying -------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class VerifyResult:
    ok: bool
    records: int  # records read (up to the first bad one)
    first_bad_seq: int | None
    reason: str
    checkpoints: int = 0  # signed checkpoints checked
    last_hash: str | None = None  # the head of an intact chain: publish it to a witness (R28)


def _rows(session: Session, columns: Iterable[ColumnElement[Any]], *where: Any) -> Iterator[Any]:
    """Rows of audit_records in seq order, streamed in batches, as plain Core rows (no ORM objects)."""
    stmt = select(*columns).where(*where).order_by(column("seq")).execution_options(yield_per=VERIFY_BATCH_ROWS)
    for batch in session.execute(stmt).partitions():
        yield from batch


def _chain_rows(session: Session) -> Iterator[Sequence[Any]]:
    """Every record in seq order as plain tuples. On SQLite, straight from the DBAPI cursor (a third faster than
    Core rows, which verify's 10 s per million records needs); elsewhere, Core rows streamed server-side."""
    conn = session.connection()
    if conn.dialect.name != "sqlite":
        yield from _rows(session, _RECORDS_RAW.c)
        return
    sql = str(select(*_RECORDS_RAW.c).order_by(column("seq")).compile(dialect=conn.dialect))
    cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(sql)
        while batch := cursor.fetchmany(VERIFY_BATCH_ROWS):
            yield from batch
    finally:
        cursor.close()


_encode_str = json.encoder.encode_basestring  # what the canonical encoder does to a str (ensure_ascii=False)


def _fast_hash(row: Sequence[Any]) -> str | None:
    """The record hash of a raw row, built by concatenation with the detail's stored text; None when the row's
    types are not the canonical ones. Sound: a JSON string token is self-delimiting and the ints and float carry
    no JSON punctuation, so a match means the stored detail text is exactly the canonical text that was hashed.
    A mismatch proves nothing (detail may be stored in another JSON form): the caller then tries the slow path.
    The caller has checked seq (an int) and prev (the previous record's hash)."""
    seq, t, actor, action, dataset, subject, job_id, detail, prev, _ = row
    if type(t) is not float or type(detail) is not str or not (job_id is None or type(job_id) is int):
        return None
    try:  # encode_basestring refuses anything but a str
        text = (
            f'{prev}{{"action":{_encode_str(action)},"actor":{_encode_str(actor)},'
            f'"dataset":{"null" if dataset is None else _encode_str(dataset)},"detail":{detail},'
            f'"job_id":{"null" if job_id is None else job_id},"prev_hash":"{prev}","seq":{seq},'
            f'"subject":{"null" if subject is None else _encode_str(subject)},"time":{t!r}}}'
        )
    except TypeError:
        return None
    return hashlib.sha256(text.encode()).hexdigest()


def _slow_hash(row: Sequence[Any]) -> str | None:
    """The record hash by the docstring's formula, parsing the stored detail; None if it is not JSON at all."""
    fields = dict(zip(FIELDS, row[:-1], strict=True))
    try:
        fields["detail"] = json.loads(fields["detail"]) if isinstance(fields["detail"], str) else fields["detail"]
        return hashlib.sha256((fields["prev_hash"] + canonical_json(fields)).encode()).hexdigest()
    except (ValueError, TypeError):
        return None


def _checkpoint_problem(
    key: bytes, seq: int, stored_hash: str, signed: list[tuple[int, str, str]], last_good_cp: int
) -> Msg | None:
    """Why a checkpoint of record `seq` fails (`signed`: its checkpoints' id, hash and HMAC), or None when every
    one verifies and signed `stored_hash`; `last_good_cp` is the seq of the last checkpoint that matched."""
    for cp_id, cp_hash, cp_hmac in signed:
        if not hmac.compare_digest(checkpoint_hmac(key, seq, cp_hash), cp_hmac):
            return Msg("checkpoint #{cp_id}'s HMAC does not verify (forged, or signed with another key)", cp_id=cp_id)
        if cp_hash != stored_hash:
            return Msg(
                "its hash is not the one checkpoint #{cp_id} signed: the chain was rewritten after record {good} "
                "(records {first}-{seq}), by someone without the key",
                cp_id=cp_id,
                good=last_good_cp,
                first=last_good_cp + 1,
                seq=seq,
            )
    return None


def _leftover_problem(cps: dict[int, list[tuple[int, str, str]]], expected: int) -> tuple[int, Msg]:
    """The bad seq and the reason for checkpoints left over once the records end (`expected` is the seq after the
    last record): they name records that are not there."""
    beyond = max(cps)
    if beyond >= expected:
        return (
            expected,
            Msg(
                "missing: checkpoint #{cp_id} signed record {beyond}, but the log ends at record {last} (tail deleted)",
                cp_id=cps[beyond][0][0],
                beyond=beyond,
                last=expected - 1,
            ),
        )
    return min(cps), Msg("checkpoint #{cp_id} names this record, which cannot exist", cp_id=cps[min(cps)][0][0])


def verify(session: Session, key: bytes, *, checkpoint_every: int | None = None) -> VerifyResult:
    """Recompute the chain and check every signed checkpoint against it; stop at the first bad record.
    With `checkpoint_every` (the server's interval), a checkpoint missing at a multiple of it is a failure too.
    A database too damaged to read (SQLite's "database disk image is malformed") is a verdict as well: not ok,
    saying where reading stopped. Reads only: it answers on a full disk."""
    _check_key(key)
    read = [0]  # records verified so far, for the verdict of a database that fails halfway
    try:
        return _verify(session, key, checkpoint_every, read)
    except (DBAPIError, sqlite3.DatabaseError) as exc:
        if database_fault(exc) != "corrupt":
            raise
        error = exc.orig if isinstance(exc, DBAPIError) else exc
        return VerifyResult(
            False,
            read[0],
            read[0] + 1,
            Msg(
                "record {seq}: the database is corrupt, reading the audit log failed after {n:,} intact records "
                "({error}). To fix: restore the database from a backup; 'treino server' checks it at start and says "
                "how",
                seq=read[0] + 1,
                n=read[0],
                error=str(error),
            ),
        )


def _verify(session: Session, key: bytes, checkpoint_every: int | None, read: list[int]) -> VerifyResult:
    cps: dict[int, list[tuple[int, str, str]]] = {}
    for cp_id, cp_seq, cp_hash, cp_hmac in session.execute(
        select(AuditCheckpoint.id, AuditCheckpoint.seq, AuditCheckpoint.hash, AuditCheckpoint.hmac).order_by(
            AuditCheckpoint.seq, AuditCheckpoint.id
        )
    ):
        cps.setdefault(cp_seq, []).append((cp_id, cp_hash, cp_hmac))
    n_cps = sum(map(len, cps.values()))
    last_good_cp = 0  # seq of the last checkpoint that matched: a rewrite lies after it
    n = 0  # records verified

    def bad(seq: int, reason: Msg) -> VerifyResult:
        return VerifyResult(False, n, seq, Msg("record {seq}: {reason}", seq=seq, reason=reason), n_cps)

    expected, prev_hash = 1, GENESIS_HASH
    for row in _chain_rows(session):
        seq, stored_prev, stored_hash = row[0], row[8], row[9]
        if seq != expected:
            if seq == expected + 1:
                return bad(seq, Msg("record {n} is missing before it (deleted, or the log renumbered)", n=expected))
            return bad(
                seq,
                Msg(
                    "records {first}-{last} are missing before it (deleted, or the log renumbered)",
                    first=expected,
                    last=seq - 1,
                ),
            )
        if stored_prev != prev_hash:
            if seq == 1:
                return bad(seq, Msg("previous hash does not match the genesis hash (deleted, inserted or reordered)"))
            return bad(
                seq,
                Msg("previous hash does not match record {prev} (deleted, inserted or reordered)", prev=seq - 1),
            )
        if _fast_hash(row) != stored_hash and _slow_hash(row) != stored_hash:
            return bad(seq, Msg("its hash does not match its content (modified)"))
        n += 1
        read[0] = n
        prev_hash, expected = stored_hash, seq + 1
        if seq in cps:
            problem = _checkpoint_problem(key, seq, stored_hash, cps.pop(seq), last_good_cp)
            if problem:
                return bad(seq, problem)
            last_good_cp = seq
        elif checkpoint_every and seq % checkpoint_every == 0:
            return bad(seq, Msg("its signed checkpoint (one every {every} records) is missing", every=checkpoint_every))
    if cps:  # checkpoints left over name records that are not there
        return bad(*_leftover_problem(cps, expected))
    if n == 0:
        return VerifyResult(True, 0, None, Msg("the audit log is empty"), 0, GENESIS_HASH)
    reason = Msg(  # a Msg: `treino audit verify` words it in the CLI's language
        "{n:,} records and {cps:,} signed checkpoints verified; the head is record {head}", n=n, cps=n_cps, head=str(n)
    )
    if last_good_cp < n:
        reason = Msg(
            "{n:,} records and {cps:,} signed checkpoints verified; the head is record {head} (records {first}-{last} "
            "come after the last checkpoint)",
            n=n,
            cps=n_cps,
            head=str(n),
            first=str(last_good_cp + 1),
            last=str(n),
        )
    return VerifyResult(True, n, None, reason, n_cps, prev_hash)


# --- exporting (for the DPO) -----------------------------------------------------------------------------------
def export(
    session: Session,
    out: TextIO,
    *,
    fmt: Literal["jsonl", "csv"] = "jsonl",
    dataset: str | None = None,
    actor: str | None = None,
    subject: str | None = None,
    action: str | None = None,
    since: float | None = None,
    until: float | None = None,
) -> int:
    """Write the records that match every filter given (time in unix seconds, since <= time < until), in seq
    order, with their hashes; returns how many were written. `subject` is a pseudonym: the records under the old
    pseudonyms that `subject.alias` records tie to it (treino.govern.aliases) come too."""
    if fmt not in ("jsonl", "csv"):
        raise TreinoError(Msg("Unknown export format {fmt!r}. To fix: use 'jsonl' or 'csv'.", fmt=fmt))
    c = _RECORDS_RAW.c
    filters = {"dataset": dataset, "actor": actor, "action": action}
    where = [c[name] == value for name, value in filters.items() if value is not None]
    if subject is not None:
        olds = session.scalars(
            select(AuditRecord.detail).where(
                AuditRecord.action == Action.SUBJECT_ALIAS.value, AuditRecord.subject == subject
            )
        )
        where.append(c.subject.in_([subject, *(str(d["old_pseudonym"]) for d in olds)]))
    where += [c.time >= since] if since is not None else []
    where += [c.time < until] if until is not None else []
    writer = csv.DictWriter(out, fieldnames=EXPORT_COLUMNS) if fmt == "csv" else None
    if writer:
        writer.writeheader()
    n = 0
    for row in _rows(session, c, *where):
        rec = row._asdict()
        rec["detail"] = json.loads(rec["detail"]) if isinstance(rec["detail"], str) else rec["detail"]
        rec["time_utc"] = dt.datetime.fromtimestamp(rec["time"], dt.UTC).isoformat(timespec="milliseconds")
        if writer:
            writer.writerow({**rec, "detail": _CANONICAL.encode(rec["detail"])})
        else:
            out.write(json.dumps({k: rec[k] for k in EXPORT_COLUMNS}, ensure_ascii=False) + "\n")
        n += 1
    return n


def read_export(lines: Iterable[str], fmt: Literal["jsonl", "csv"]) -> list[dict[str, Any]]:
    """Records back from an export, typed as in the database (so `record_hash` of each equals its `hash`)."""
    if fmt == "jsonl":
        return [json.loads(line) for line in lines if line.strip()]
    recs = []
    for r in csv.DictReader(lines):
        rec: dict[str, Any] = {k: (v if v != "" else None) for k, v in r.items()}
        rec["seq"], rec["time"], rec["detail"] = int(r["seq"]), float(r["time"]), json.loads(r["detail"])
        rec["job_id"] = int(r["job_id"]) if r["job_id"] else None
        recs.append(rec)
    return recs


# --- the Art. 37 record of processing operations ----------------------------------------------------------------
def processing_records(session: Session, *, controller: str = CONTROLLER_PLACEHOLDER) -> dict[str, Any]:
    """The record of processing operations (LGPD Art. 37; lgpd-requirements.md §1.9), per dataset, from the
    registry, the lineage tables and the audit log. `controller` comes from the server's settings."""
    reads = dict(
        session.execute(
            select(AuditRecord.dataset, func.count())
            .where(AuditRecord.action == Action.DATASET_READ.value, AuditRecord.dataset.is_not(None))
            .group_by(AuditRecord.dataset)
        ).all()
    )
    datasets = []
    for d in session.scalars(select(Dataset).order_by(Dataset.name)):
        versions = session.scalars(
            select(DatasetVersion).where(DatasetVersion.dataset_id == d.id).order_by(DatasetVersion.number)
        ).all()
        uses = session.execute(
            select(JobDataset, DatasetVersion.number, _JOBS.c.name, _JOBS.c.owner, _JOBS.c.state)
            .join(DatasetVersion, JobDataset.version_id == DatasetVersion.id)
            .join(_JOBS, JobDataset.job_id == _JOBS.c.id)
            .where(DatasetVersion.dataset_id == d.id)
            .order_by(JobDataset.job_id)
        ).all()
        job_ids = sorted({u.JobDataset.job_id for u in uses})
        models = session.scalar(select(func.count()).where(Model.job_id.in_(job_ids))) if job_ids else 0
        grants = session.execute(
            select(Grant, User.name).join(User, Grant.user_id == User.id).where(Grant.dataset == d.name)
        ).all()
        erasures = session.scalars(
            select(Erasure).where((Erasure.dataset == d.name) | Erasure.dataset.is_(None)).order_by(Erasure.id)
        ).all()
        transfers = session.scalars(
            select(AuditRecord.detail).where(
                AuditRecord.action == Action.TRANSFER_RECORD.value, AuditRecord.dataset == d.name
            )
        ).all()
        datasets.append(
            {
                "name": d.name,
                "legal_basis": d.legal_basis,
                "purposes": list(d.purposes),
                "personal_data": d.personal_data,
                "sensitive": d.sensitive,
                "subject_column": d.subject_column,
                "residency": d.residency,
                "retention_days": d.retention_days,
                "format": d.format,
                "registered_by": d.created_by,
                "registered_at": d.created_at,
                "versions": [
                    {
                        "number": v.number,
                        "sha256": v.sha256,
                        "rows": v.rows,
                        "bytes": v.bytes,
                        "reason": v.reason,
                        "created_at": v.created_at,
                        "purged": v.purged_at is not None,
                    }
                    for v in versions
                ],
                "jobs": [
                    {
                        "job_id": u.JobDataset.job_id,
                        "name": u.name,
                        "owner": u.owner,
                        "state": u.state,
                        "version": u.number,
                        "purpose": u.JobDataset.purpose,
                        "first_read_at": u.JobDataset.first_read_at,
                    }
                    for u in uses
                ],
                "models": models,
                "grants": [
                    {
                        "user": name,
                        "purposes": list(g.purposes),
                        "granted_by": g.granted_by,
                        "created_at": g.created_at,
                        "active": g.revoked_at is None,
                    }
                    for g, name in grants
                ],
                "reads": reads.get(d.name, 0),
                "transfers": list(transfers),
                "erasures": [
                    {
                        "id": e.id,
                        "requested_at": e.requested_at,
                        "deadline_at": e.deadline_at,
                        "all_datasets": e.dataset is None,
                    }
                    for e in erasures
                ],
            }
        )
    transfers_on_record = [
        {
            "site": t.site,
            "mechanism": t.mechanism,
            "reference": t.reference,
            "signed_on": t.signed_on,
            "active": t.revoked_at is None,
        }
        for t in session.scalars(select(Transfer).order_by(Transfer.id))
    ]
    return {
        "controller": controller,
        "generated_at": time.time(),
        "datasets": datasets,
        "transfers": transfers_on_record,
    }


def _date(t: float | None) -> str:
    return "-" if t is None else dt.datetime.fromtimestamp(t, dt.UTC).strftime("%Y-%m-%d")


def render_processing_records(records: Mapping[str, Any]) -> str:
    """The Art. 37 record as Markdown, one section per dataset."""
    out = [
        "# Record of processing operations (LGPD Art. 37)",
        "",
        f"- Controller: {records['controller']}",
        f"- Generated: {dt.datetime.fromtimestamp(records['generated_at'], dt.UTC).isoformat(timespec='seconds')}",
        f"- Datasets: {len(records['datasets'])}",
        "",
    ]
    for d in records["datasets"]:
        categories = (
            "sensitive personal data (Art. 11)"
            if d["sensitive"]
            else ("personal data" if d["personal_data"] else "no personal data")
        )
        retention = f"{d['retention_days']} days" if d["retention_days"] else "not set"
        out += [
            f"## {d['name']}",
            "",
            "| Item | Value |",
            "|---|---|",
            f"| Legal basis | {d['legal_basis']} |",
            f"| Purposes | {', '.join(d['purposes'])} |",
            f"| Data categories | {categories} |",
            f"| Subject column | {d['subject_column'] or '-'} |",
            f"| Residency | {d['residency']} |",
            f"| Retention | {retention} |",
            f"| Registered | {_date(d['registered_at'])} by {d['registered_by']} |",
            f"| Reads (audit log) | {d['reads']} |",
            f"| Models derived | {d['models']} |",
            "",
            "Versions:",
            "",
        ]
        out += [
            f"- v{v['number']}: {v['rows']} rows, sha256 {v['sha256'][:12]}, {v['reason']}, {_date(v['created_at'])}"
            + (" (bytes purged)" if v["purged"] else "")
            for v in d["versions"]
        ] or ["- none"]
        out += ["", "Jobs that used it:", ""]
        out += [
            f"- job {j['job_id']} ({j['name']}, {j['owner']}, {j['state']}): v{j['version']} for {j['purpose']}"
            for j in d["jobs"]
        ] or ["- none"]
        out += ["", "Who may access it (grants):", ""]
        out += [
            f"- {g['user']}: {', '.join(g['purposes'])}, granted by {g['granted_by']} on {_date(g['created_at'])}"
            + ("" if g["active"] else " (revoked)")
            for g in d["grants"]
        ] or ["- none"]
        out += ["", "International transfers:", ""]
        out += [f"- {json.dumps(t, sort_keys=True, ensure_ascii=False)}" for t in d["transfers"]] or ["- none"]
        out += ["", "Erasures (Art. 18 VI):", ""]
        out += [
            f"- #{e['id']}: requested {_date(e['requested_at'])}, due {_date(e['deadline_at'])}"
            + (" (every dataset)" if e["all_datasets"] else "")
            for e in d["erasures"]
        ] or ["- none"]
        out.append("")
    out += ["## Transfer mechanisms on record (Art. 33)", ""]
    out += [
        f"- {t['site']}: {t['mechanism']} {t['reference']}, signed {t['signed_on']}"
        + ("" if t["active"] else " (revoked)")
        for t in records["transfers"]
    ] or ["- none"]
    return "\n".join(out) + "\n"
