"""The audit chain on a real database (each test on SQLite and on PostgreSQL, see tests/conftest.py): tampering with
rows by raw SQL (edit, delete, swap, insert, cut the tail, rewrite the chain without the key, forge a checkpoint)
makes `verify` fail at the right record (lgpd-requirements.md §5, R28); concurrent appenders keep one chain;
pseudonyms; exports for the DPO; the Art. 37 record."""

from __future__ import annotations

import io
import json
import random
import re
import shutil
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from tests.conftest import Database
from treino.errors import TreinoError
from treino.govern import audit
from treino.govern.audit import Action, AuditLog, export, pseudonym, read_export, record_hash, verify
from treino.govern.models import Dataset, DatasetVersion, Erasure, Grant, JobDataset, Model, Transfer, User
from treino.server.db import Job, make_engine, make_sessionmaker, migrate

KEY = b"k" * 32
RECORDS = 200
EVERY = 50  # checkpoints at 50, 100, 150, 200


def open_db(database: Database, path: Path) -> sessionmaker[Session]:
    """A fresh, migrated database: SQLite at `path`, or a new PostgreSQL database."""
    engine = make_engine(database.new_url() or f"sqlite:///{path}")
    migrate(engine)
    return make_sessionmaker(engine)


@pytest.fixture(scope="module")
def chain_db(tmp_path_factory: pytest.TempPathFactory, database: Database) -> str:
    """200 records (one transaction per 10), checkpointed every 50; the database is closed (and, for SQLite,
    checkpointed). Its SQLite file's path, or its PostgreSQL database's name."""
    path = tmp_path_factory.mktemp("chain") / "audit.db"
    sessions = open_db(database, path)
    log = AuditLog(KEY, checkpoint_every=EVERY)
    subject = pseudonym(KEY, "123.456.789-09")
    for batch in range(RECORDS // 10):
        with sessions.begin() as s:
            for i in range(10):
                n = batch * 10 + i
                log.append(
                    s,
                    actor=f"user{n % 3}",
                    action=Action.DATASET_READ if n % 2 else Action.JOB_ADMIT,
                    dataset="clientes" if n % 2 else None,
                    subject=subject if n % 5 == 0 else None,
                    job_id=n if n % 4 else None,
                    detail={"n": n, "purpose": "churn", "nota": "ação"},
                )
    engine = sessions.kw["bind"]
    assert engine is not None
    engine.dispose()
    return str(engine.url.database)


@pytest.fixture
def db(chain_db: str, database: Database, tmp_path: Path) -> Iterator[sessionmaker[Session]]:
    """A fresh copy of the 200-record chain (PostgreSQL: a database made from it as a template)."""
    if database.postgres:
        url = database.postgres.create_database(template=chain_db)
    else:
        url = f"sqlite:///{shutil.copy(chain_db, tmp_path / 'audit.db')}"
    engine = make_engine(url)
    yield make_sessionmaker(engine)
    engine.dispose()


def check(sessions: sessionmaker[Session], key: bytes = KEY, **kw: int) -> audit.VerifyResult:
    with sessions() as s:
        return verify(s, key, **kw)


def sql(sessions: sessionmaker[Session], *statements: str, **params: object) -> None:
    with sessions.begin() as s:
        for statement in statements:
            s.execute(text(statement), params)


def row(sessions: sessionmaker[Session], seq: int) -> dict[str, object]:
    """Record `seq` as raw SQL reads it; `detail` as its JSON text (PostgreSQL's driver decodes a json column)."""
    with sessions() as s:
        r = dict(s.execute(text("SELECT * FROM audit_records WHERE seq = :seq"), {"seq": seq}).mappings().one())
    return r | {"detail": json_text(r["detail"])}


def json_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def test_intact_chain_verifies(db: sessionmaker[Session], database: Database, monkeypatch: pytest.MonkeyPatch) -> None:
    """An intact chain verifies, and by the fast path: records as append stores them hash by concatenation
    (verify's 10 s per million records); the slow path, which parses each detail, is only for details rewritten in
    another JSON form. A slip in the fast path would only show as a slower verify, so the second check runs with
    the slow path unavailable (SQLite: PostgreSQL's driver gives detail back parsed, so there every record takes
    the slow path). The first test on the chain: mutmut gives the fixture's appends to it."""
    result = check(db, checkpoint_every=EVERY)
    assert (result.ok, result.records, result.first_bad_seq, result.checkpoints) == (True, RECORDS, None, 4)
    assert result.reason == "200 records and 4 signed checkpoints verified; the head is record 200"
    assert result.last_hash == row(db, RECORDS)["hash"]

    def slow(row: object) -> None:
        raise AssertionError(f"the slow path hashed {row}")

    if not database.postgres:
        monkeypatch.setattr(audit, "_slow_hash", slow)
        assert check(db, checkpoint_every=EVERY) == result


def test_empty_log_verifies(database: Database, tmp_path: Path) -> None:
    result = check(open_db(database, tmp_path / "a.db"), checkpoint_every=EVERY)
    assert result == audit.VerifyResult(True, 0, None, "the audit log is empty", 0, audit.GENESIS_HASH)


@pytest.mark.parametrize(
    ("column", "value"), [("detail", '{"n":56,"nota":"ação","purpose":"fraud"}'), ("actor", "mallory")]
)
def test_edited_record_fails_at_it(db: sessionmaker[Session], column: str, value: str) -> None:
    sql(db, f"UPDATE audit_records SET {column} = :value WHERE seq = 57", value=value)
    result = check(db)
    assert (result.ok, result.first_bad_seq, result.records) == (False, 57, 56)
    assert result.reason == "record 57: its hash does not match its content (modified)"


def test_equivalent_json_is_not_tampering(db: sessionmaker[Session]) -> None:
    """Detail rewritten in another JSON form (spaces, key order) is the same record: the slow path accepts it."""
    equivalent = '{"purpose": "churn", "n": 56, "nota": "a\\u00e7\\u00e3o"}'
    sql(db, "UPDATE audit_records SET detail = :v WHERE seq = 57", v=equivalent)
    assert check(db).ok


def test_deleted_record_fails_at_the_next(db: sessionmaker[Session]) -> None:
    sql(db, "DELETE FROM audit_records WHERE seq = 57")
    result = check(db)
    assert (result.ok, result.first_bad_seq) == (False, 58)
    assert result.reason == "record 58: record 57 is missing before it (deleted, or the log renumbered)"


def test_deleted_records_fail_at_the_next(db: sessionmaker[Session]) -> None:
    sql(db, "DELETE FROM audit_records WHERE seq IN (57, 58)")
    result = check(db)
    assert (result.ok, result.first_bad_seq, result.records) == (False, 59, 56)
    assert result.reason == "record 59: records 57-58 are missing before it (deleted, or the log renumbered)"


def test_first_record_links_to_the_genesis_hash(db: sessionmaker[Session]) -> None:
    sql(db, "UPDATE audit_records SET prev_hash = :h WHERE seq = 1", h="1" * 64)
    result = check(db)
    assert (result.ok, result.first_bad_seq, result.records) == (False, 1, 0)
    assert result.reason == "record 1: previous hash does not match the genesis hash (deleted, inserted or reordered)"


def test_swapped_records_fail_at_the_first(db: sessionmaker[Session]) -> None:
    cols = ["time", "actor", "action", "dataset", "subject", "job_id", "detail", "prev_hash", "hash"]
    a, b = row(db, 57), row(db, 58)
    assign = ", ".join(f"{c} = :{c}" for c in cols)
    with db.begin() as s:
        s.execute(text(f"UPDATE audit_records SET {assign} WHERE seq = 57"), {c: b[c] for c in cols})
        s.execute(text(f"UPDATE audit_records SET {assign} WHERE seq = 58"), {c: a[c] for c in cols})
    result = check(db)
    assert (result.ok, result.first_bad_seq) == (False, 57)
    assert result.reason == "record 57: previous hash does not match record 56 (deleted, inserted or reordered)"


def test_inserted_record_renumbering_the_rest_fails(db: sessionmaker[Session]) -> None:
    """A forged record 97 with a correct hash and link; the old 97.. become 98..: 98 no longer links."""
    sql(
        db,
        "UPDATE audit_records SET seq = -seq WHERE seq >= 97",
        "UPDATE audit_records SET seq = 1 - seq WHERE seq < 0",
    )
    fields = {
        "seq": 97,
        "time": time.time(),
        "actor": "mallory",
        "action": "grant.create",
        "dataset": "clientes",
        "subject": None,
        "job_id": None,
        "detail": {},
        "prev_hash": row(db, 96)["hash"],
    }
    forged = {**fields, "detail": "{}", "hash": record_hash(fields)}
    sql(
        db,
        "INSERT INTO audit_records VALUES (:seq, :time, :actor, :action, :dataset, :subject, :job_id, :detail, "
        ":prev_hash, :hash)",
        **forged,
    )
    result = check(db)
    assert (result.ok, result.first_bad_seq) == (False, 98)
    assert result.reason == "record 98: previous hash does not match record 97 (deleted, inserted or reordered)"


def test_cut_tail_fails_by_the_checkpoint(db: sessionmaker[Session]) -> None:
    sql(db, "DELETE FROM audit_records WHERE seq > 190")
    result = check(db)
    assert (result.ok, result.first_bad_seq, result.records, result.checkpoints) == (False, 191, 190, 4)
    assert result.reason == (
        "record 191: missing: checkpoint #4 signed record 200, but the log ends at record 190 (tail deleted)"
    )


def rewrite_chain_from(db: sessionmaker[Session], seq: int) -> None:
    """What an attacker who read the module docstring but lacks the key can do: edit a record, rehash the rest."""
    with db() as s:
        rows = [dict(r) for r in s.execute(text("SELECT * FROM audit_records ORDER BY seq")).mappings()]
    prev = rows[seq - 2]["hash"]
    with db.begin() as s:
        for r in rows[seq - 1 :]:
            fields = {**r, "detail": json.loads(json_text(r["detail"])), "prev_hash": prev}
            if r["seq"] == seq:
                fields["actor"] = "mallory"
            prev = record_hash(fields)
            s.execute(
                text("UPDATE audit_records SET actor = :actor, prev_hash = :prev_hash, hash = :hash WHERE seq = :seq"),
                {**fields, "hash": prev},
            )


def test_chain_rewritten_without_the_key_fails_by_the_checkpoint(db: sessionmaker[Session]) -> None:
    rewrite_chain_from(db, 57)
    result = check(db)
    assert (result.ok, result.first_bad_seq) == (False, 100)
    assert result.reason == (
        "record 100: its hash is not the one checkpoint #2 signed: the chain was rewritten after record 50 "
        "(records 51-100), by someone without the key"
    )


def test_rewritten_checkpoints_fail_by_their_hmac(db: sessionmaker[Session]) -> None:
    """The attacker also copies the new hashes into the checkpoints, but cannot sign them."""
    rewrite_chain_from(db, 57)
    sql(
        db, "UPDATE audit_checkpoints SET hash = (SELECT hash FROM audit_records r WHERE r.seq = audit_checkpoints.seq)"
    )
    result = check(db)
    assert (result.ok, result.first_bad_seq) == (False, 100)
    assert result.reason == "record 100: checkpoint #2's HMAC does not verify (forged, or signed with another key)"


def test_forged_checkpoint_and_wrong_key_fail(db: sessionmaker[Session]) -> None:
    assert check(db, b"x" * 32).first_bad_seq == 50  # the first checkpoint
    sql(db, "UPDATE audit_checkpoints SET hmac = :h WHERE seq = 150", h="f" * 64)
    result = check(db)
    assert (result.ok, result.first_bad_seq) == (False, 150)


def test_every_checkpoint_of_a_record_is_checked(db: sessionmaker[Session]) -> None:
    """A forged checkpoint of record 100 next to its true one (#2): the true one does not vouch for it."""
    sql(
        db,
        "INSERT INTO audit_checkpoints (seq, hash, hmac, time) VALUES (100, :h, :f, 0)",
        h=row(db, 100)["hash"],
        f="f" * 64,
    )
    result = check(db)
    assert (result.ok, result.first_bad_seq, result.records) == (False, 100, 100)  # its content is intact
    assert result.reason == "record 100: checkpoint #5's HMAC does not verify (forged, or signed with another key)"


def test_deleted_checkpoint_fails_when_the_interval_is_known(db: sessionmaker[Session]) -> None:
    sql(db, "DELETE FROM audit_checkpoints WHERE seq IN (100, 200)")
    result = check(db)  # alone, a missing checkpoint is not evidence
    assert (result.ok, result.records, result.checkpoints, result.last_hash) == (True, 200, 2, row(db, 200)["hash"])
    assert result.reason == (
        "200 records and 2 signed checkpoints verified; the head is record 200 "
        "(records 151-200 come after the last checkpoint)"
    )
    result = check(db, checkpoint_every=EVERY)
    assert (result.ok, result.first_bad_seq) == (False, 100)
    assert result.reason == "record 100: its signed checkpoint (one every 50 records) is missing"


def test_appends_after_a_rollback_and_in_bulk_keep_one_chain(database: Database, tmp_path: Path) -> None:
    sessions = open_db(database, tmp_path / "a.db")
    log = AuditLog(KEY, checkpoint_every=3)
    with sessions.begin() as s:
        first = log.append(s, actor="admin", action="user.create", detail={"user": "ana"})
        assert (first.seq, first.prev_hash) == (1, audit.GENESIS_HASH)
    s = sessions()
    log.append(s, actor="admin", action="token.create")  # seq 2, rolled back
    s.rollback()
    s.close()
    with sessions.begin() as s:
        again = log.append(s, actor="admin", action="token.create")
        n = log.append_many(s, [{"actor": "ana", "action": "dataset.read", "dataset": "d", "time": 5}] * 4)
        cp = log.checkpoint(s)
    assert (again.seq, again.prev_hash, n) == (2, first.hash, 4)
    assert cp is not None and cp.seq == 6
    result = check(sessions, checkpoint_every=3)
    assert (result.ok, result.records, result.checkpoints) == (True, 6, 3)


def test_concurrent_transactions_keep_one_chain(database: Database, tmp_path: Path) -> None:
    """Appenders in concurrent transactions that commit late (as a request that audits, then does more work):
    each waits for the one before it to end, instead of reading the same head and failing on its seq."""
    sessions = open_db(database, tmp_path / "a.db")
    log = AuditLog(KEY)
    failures: list[BaseException] = []

    def append(n: int) -> None:
        try:
            with sessions.begin() as s:
                log.append(s, actor=f"user{n}", action="dataset.read", dataset="clientes")
                time.sleep(0.05)
        except Exception as e:
            failures.append(e)

    threads = [threading.Thread(target=append, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    result = check(sessions)
    assert (result.ok, result.records) == (True, 8)
    assert result.reason == (
        "8 records and 0 signed checkpoints verified; the head is record 8 (records 1-8 come after the last checkpoint)"
    )


def test_a_transaction_appends_again_while_another_waits_for_the_chain(database: Database, tmp_path: Path) -> None:
    """A transaction that holds the chain (and on SQLite the database's write lock) appends a second time while
    another transaction waits for the chain: the waiter must not hold the log's thread lock as it waits, or each
    waits for the other until the database's lock timeout fails one (an erasure's 500 under load once)."""
    sessions = open_db(database, tmp_path / "a.db")
    log = AuditLog(KEY)
    failures: list[BaseException] = []
    first_done = threading.Event()

    def waiter() -> None:
        first_done.wait()
        try:
            with sessions.begin() as s:
                log.append(s, actor="dpo", action="erasure.complete")
        except Exception as e:
            failures.append(e)

    thread = threading.Thread(target=waiter)
    thread.start()
    began = time.monotonic()
    with sessions.begin() as s:
        log.append(s, actor="server", action="job.start", job_id=1)
        first_done.set()
        time.sleep(0.5)  # the waiter is now waiting for the chain
        log.append(s, actor="server", action="job.start", job_id=2)
    thread.join()
    assert failures == []
    assert time.monotonic() - began < 5  # no wait for a lock timeout (10 s on both databases)
    result = check(sessions)
    assert (result.ok, result.records) == (True, 3)


def exactly(message: str) -> str:
    """pytest.raises' `match` for the whole of `message`: the users read all of it, the "To fix" above all."""
    return f"^{re.escape(message)}$"


SUBJECT_REFUSED = (
    "An audit record's subject must be a pseudonym (64 hex digits), never a raw identifier. "
    "To fix: pass treino.govern.audit.pseudonym(key, subject_id)."
)
CPF_REFUSED = (
    "An audit record may not carry a CPF (LGPD: logs hold pseudonyms only, docs/govern.md). "
    "To fix: put pseudonym(key, cpf) in subject, and keep identifiers out of detail."
)
KEY_REFUSED = (
    "The audit key must be at least 16 random bytes. "
    "To fix: generate one with 'python -c \"import secrets; print(secrets.token_hex(32))\"'."
)


def test_bad_input_is_refused(database: Database, tmp_path: Path) -> None:
    sessions = open_db(database, tmp_path / "a.db")
    log = AuditLog(KEY)
    with sessions.begin() as s:
        with pytest.raises(
            TreinoError, match=exactly("Unknown audit action 'dataset.raed'. Did you mean 'dataset.read'?")
        ):
            log.append(s, actor="ana", action="dataset.raed")
        known = ", ".join(a.value for a in Action)
        with pytest.raises(TreinoError, match=exactly(f"Unknown audit action 'zzz'. Known: {known}.")):
            log.append(s, actor="ana", action="zzz")
        with pytest.raises(TreinoError, match=exactly(SUBJECT_REFUSED)):
            log.append(s, actor="ana", action="subject.report", subject="12345678909")
        for cpf in ("123.456.789-09", "12345678909"):
            with pytest.raises(TreinoError, match=exactly(CPF_REFUSED)):
                log.append(s, actor="ana", action="dataset.read", detail={"row": {"cpf": cpf}})
        for where in ({"actor": "123.456.789-09"}, {"actor": "ana", "dataset": "123.456.789-09"}):
            with pytest.raises(TreinoError, match=exactly(CPF_REFUSED)):
                log.append(s, action="dataset.read", **where)
        log.append(s, actor="ana", action="dataset.version", detail={"bytes": 12345678909, "sha256": "a1" * 32})
        # shaped like CPFs, but not CPFs: one digit repeated, the first check digit wrong, the second one wrong
        for not_a_cpf in ("111.111.111-11", "00000000000", "123.456.789-17", "12345678900"):
            log.append(s, actor="ana", action="dataset.read", detail={"placeholder": not_a_cpf})
        for t in (float("nan"), float("inf")):
            with pytest.raises(TreinoError, match=exactly(f"An audit record's time must be unix seconds, not {t!r}.")):
                log.append_many(s, [{"actor": "ana", "action": "dataset.read", "time": t}])
    for key in (b"secret", b"k" * 15, "k" * 32):
        with pytest.raises(TreinoError, match=exactly(KEY_REFUSED)):
            AuditLog(key)  # type: ignore[arg-type]
        with sessions() as s, pytest.raises(TreinoError, match=exactly(KEY_REFUSED)):
            verify(s, key)  # type: ignore[arg-type]
        with pytest.raises(TreinoError, match=exactly(KEY_REFUSED)):
            pseudonym(key, "12345678909")  # type: ignore[arg-type]
    with pytest.raises(TreinoError, match=exactly("checkpoint_every must be >= 1 record, not 0.")):
        AuditLog(KEY, checkpoint_every=0)
    assert AuditLog(b"k" * 16, checkpoint_every=1).checkpoint_every == 1


def test_pseudonyms() -> None:
    p = pseudonym(KEY, "123.456.789-09")
    assert p == pseudonym(KEY, "12345678909") == pseudonym(KEY, " 123.456.789-09 ")
    assert len(p) == 64 and "12345678909" not in p and "123456789" not in p
    assert p != pseudonym(b"j" * 32, "12345678909")
    assert p != pseudonym(KEY, "12345678900")


def test_export_filters_round_trip(db: sessionmaker[Session]) -> None:
    subject = pseudonym(KEY, "12345678909")
    with db() as s:
        for fmt in ("jsonl", "csv"):
            out = io.StringIO()
            n = export(s, out, fmt=fmt, dataset="clientes", actor="user1")  # type: ignore[arg-type]
            records = read_export(io.StringIO(out.getvalue()), fmt)  # type: ignore[arg-type]
            assert n == len(records) == 34  # odd n with n % 3 == 1
            assert all(r["dataset"] == "clientes" and r["actor"] == "user1" for r in records)
            assert all(record_hash(r) == r["hash"] for r in records)  # the DPO can re-check each record
            assert records[0]["detail"] == {"n": 1, "nota": "ação", "purpose": "churn"}
            assert (records[0]["seq"], records[0]["action"], records[0]["job_id"], records[0]["subject"]) == (
                2,
                "dataset.read",
                1,
                None,
            )
            assert records[0]["time_utc"].endswith("+00:00")
        out = io.StringIO()
        assert export(s, out, subject=subject) == 40
        t = row(db, 101)["time"]
        assert export(s, io.StringIO(), since=t) == 100
        assert export(s, io.StringIO(), since=t, until=row(db, 111)["time"]) == 10
        with pytest.raises(TreinoError, match=exactly("Unknown export format 'xml'. To fix: use 'jsonl' or 'csv'.")):
            export(s, io.StringIO(), fmt="xml")  # type: ignore[arg-type]


def test_processing_records(database: Database, tmp_path: Path) -> None:
    sessions = open_db(database, tmp_path / "a.db")
    log = AuditLog(KEY)
    with sessions.begin() as s:
        ana, bia = User(name="ana", role="engineer"), User(name="bia", role="engineer")
        ds = Dataset(
            name="clientes",
            format="parquet",
            legal_basis="art7-ix",
            purposes=["churn"],
            personal_data=True,
            sensitive=False,
            residency="BR",
            retention_days=365,
            subject_column="cpf",
            created_by="ana",
            created_at=1_700_000_000.0,
        )
        s.add_all([ana, bia, ds])
        s.flush()
        v1 = DatasetVersion(
            dataset_id=ds.id,
            number=1,
            sha256="ab" * 32,
            path="/x",
            bytes=10,
            rows=3,
            reason="import a.parquet",
            created_by="ana",
            created_at=1_700_000_000.0,
        )
        s.add(v1)
        job = Job(name="churn-v1", spec={}, owner="ana", gpus=1, job_token_hash="0" * 64)
        s.add(job)
        s.flush()
        s.add_all(
            [
                JobDataset(job_id=job.id, version_id=v1.id, purpose="churn"),
                Model(job_id=job.id, kind="final", path="/m", personal_data=True, sensitive=False, residency="BR"),
                Grant(
                    user_id=ana.id, dataset="clientes", purposes=["churn"], granted_by="dpo", created_at=1_700_000_000.0
                ),
                Grant(user_id=bia.id, dataset="other", purposes=["churn"], granted_by="dpo"),
                Erasure(
                    subject_pseudonym=pseudonym(KEY, "12345678909"),
                    dataset=None,
                    requested_by="dpo",
                    requested_at=1_700_000_000.0,
                    deadline_at=1_701_296_000.0,
                    report={},
                ),
                Transfer(
                    site="miami", mechanism="anpd-scc", reference="SCC-1", signed_on="2025-01-01", created_by="dpo"
                ),
            ]
        )
        for _ in range(3):
            log.append(s, actor="ana", action="dataset.read", dataset="clientes", job_id=job.id)
        log.append(s, actor="ana", action="dataset.read", dataset="other")
    with sessions() as s:
        rec = audit.processing_records(s, controller="ACME Ltda")
    (d,) = rec["datasets"]
    assert rec["controller"] == "ACME Ltda"
    assert (d["name"], d["legal_basis"], d["purposes"], d["residency"], d["retention_days"]) == (
        "clientes",
        "art7-ix",
        ["churn"],
        "BR",
        365,
    )
    assert (d["reads"], d["models"], len(d["versions"]), len(d["erasures"])) == (3, 1, 1, 1)
    assert d["grants"] == [
        {"user": "ana", "purposes": ["churn"], "granted_by": "dpo", "created_at": 1_700_000_000.0, "active": True}
    ]
    assert d["jobs"][0] | {"first_read_at": None} == {
        "job_id": 1,
        "name": "churn-v1",
        "owner": "ana",
        "state": "queued",
        "version": 1,
        "purpose": "churn",
        "first_read_at": None,
    }
    md = audit.render_processing_records(rec)
    assert "# Record of processing operations (LGPD Art. 37)" in md
    assert "- Controller: ACME Ltda" in md
    assert "| Data categories | personal data |" in md
    assert "| Retention | 365 days |" in md
    assert "- v1: 3 rows, sha256 abababababab, import a.parquet, 2023-11-14" in md
    assert "- job 1 (churn-v1, ana, queued): v1 for churn" in md
    assert "- ana: churn, granted by dpo on 2023-11-14" in md
    assert "- #1: requested 2023-11-14, due 2023-11-29 (every dataset)" in md
    assert "- miami: anpd-scc SCC-1, signed 2025-01-01" in md


def test_tail_cut_one_record_after_the_last_checkpoint(db: sessionmaker[Session]) -> None:
    """The smallest cut: only the checkpointed head, record 200, deleted."""
    sql(db, "DELETE FROM audit_records WHERE seq = 200")
    result = check(db)
    assert (result.ok, result.first_bad_seq, result.records) == (False, 200, 199)
    assert result.reason == (
        "record 200: missing: checkpoint #4 signed record 200, but the log ends at record 199 (tail deleted)"
    )


def test_checkpoint_of_a_record_that_cannot_exist_fails(db: sessionmaker[Session]) -> None:
    """A checkpoint added for seq 0 (records start at 1), signed with the key or not: no record can match it."""
    sql(
        db,
        "INSERT INTO audit_checkpoints (seq, hash, hmac, time) VALUES (0, :h, :hmac, 0)",
        h=audit.GENESIS_HASH,
        hmac=audit.checkpoint_hmac(KEY, 0, audit.GENESIS_HASH),
    )
    result = check(db)
    assert (result.ok, result.first_bad_seq, result.records) == (False, 0, RECORDS)
    assert result.reason == "record 0: checkpoint #5 names this record, which cannot exist"


def test_detail_of_another_type_is_tampering(db: sessionmaker[Session], database: Database) -> None:
    """A detail overwritten with a number (SQLite keeps any type in any column) is an edit, not a crash."""
    number = "'56'" if database.postgres else "56"  # PostgreSQL's json column takes the JSON text of a number
    sql(db, f"UPDATE audit_records SET detail = {number} WHERE seq = 57")
    result = check(db)
    assert (result.ok, result.first_bad_seq) == (False, 57)
    assert result.reason == "record 57: its hash does not match its content (modified)"
    with db() as s:  # the DPO's export shows the record as it is stored
        out = io.StringIO()
        assert export(s, out, since=row(db, 57)["time"], until=row(db, 58)["time"]) == 1
    assert read_export(out.getvalue().splitlines(), "jsonl")[0]["detail"] == 56


def test_bulk_appends_keep_every_field_and_export_follows_aliases(database: Database, tmp_path: Path) -> None:
    """append_many stores each record's own fields; an export by subject brings the records of the pseudonyms
    that subject.alias records tie to it, in seq order, and nobody else's; a CSV export reads back hashable."""
    sessions = open_db(database, tmp_path / "a.db")
    log = AuditLog(KEY, checkpoint_every=100)
    # the old pseudonym sorts first, so rows read through the subject index would come out of seq order
    new, old = sorted([pseudonym(KEY, "ana"), pseudonym(KEY, "bia")], reverse=True)
    other, others_old = pseudonym(KEY, "caio"), pseudonym(KEY, "davi")
    with sessions.begin() as s:
        assert log.checkpoint(s) is None  # nothing to sign yet
        assert log.append(s, actor="dpo", action="subject.report", subject=new, job_id=3).job_id == 3
        cp = log.checkpoint(s)
        assert cp is not None and cp.seq == 1
        bulk = [
            {"actor": "ana", "action": "dataset.read", "dataset": "clientes", "subject": old, "job_id": 7,
             "detail": {"nota": "ação"}, "time": 1_700_006_400.5},
            {"actor": "bob", "action": "grant.create"},
            {"actor": "server", "action": "subject.alias", "subject": new, "detail": {"old_pseudonym": old}},
            {"actor": "server", "action": "subject.alias", "subject": other, "detail": {"old_pseudonym": others_old}},
            {"actor": "ana", "action": "dataset.read", "subject": others_old},
        ]  # fmt: skip
        before = time.time()
        assert log.append_many(s, bulk) == 5
    with sessions() as s:
        out = io.StringIO()
        assert export(s, out) == 6
        lines = out.getvalue().splitlines()
        assert '"nota": "ação"' in lines[1]  # readable text, not \\u escapes
        recs = read_export(lines, "jsonl")
        assert {k: recs[1][k] for k in ("actor", "dataset", "subject", "job_id", "detail", "time", "time_utc")} == {
            "actor": "ana",
            "dataset": "clientes",
            "subject": old,
            "job_id": 7,
            "detail": {"nota": "ação"},
            "time": 1_700_006_400.5,
            "time_utc": "2023-11-15T00:00:00.500+00:00",
        }
        assert (recs[2]["actor"], recs[2]["dataset"], recs[2]["subject"], recs[2]["job_id"]) == (
            "bob",
            None,
            None,
            None,
        )
        assert recs[2]["detail"] == {} and before <= recs[2]["time"] <= time.time()
        out = io.StringIO()
        assert export(s, out, subject=new) == 3
        assert [r["seq"] for r in read_export(out.getvalue().splitlines(), "jsonl")] == [1, 2, 4]
        assert export(s, io.StringIO(), action="grant.create") == 1
        out = io.StringIO()
        assert export(s, out, fmt="csv") == 6
        csv_recs = read_export(io.StringIO(out.getvalue()), "csv")
        assert [r["job_id"] for r in csv_recs] == [3, 7, None, None, None, None]
        assert all(record_hash(r) == r["hash"] for r in csv_recs)
    assert check(sessions).ok


MIDNIGHT = 1_700_006_400.0  # 2023-11-15 00:00:00 UTC: the day before in any time zone west of Greenwich


def test_processing_records_render_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Markdown the DPO files, whole: every item, '- none' for empty lists, '-' for a date not set, and dates
    in UTC whatever the server's time zone."""
    monkeypatch.setenv("TZ", "BRT+3")  # São Paulo's offset, as a POSIX rule (no tz database needed)
    time.tzset()
    try:
        dataset = {
            "name": "saude",
            "legal_basis": "art11-ii-f",
            "purposes": ["triage", "research"],
            "personal_data": True,
            "sensitive": True,
            "subject_column": "cpf",
            "residency": "BR",
            "retention_days": 30,
            "registered_by": "ana",
            "registered_at": MIDNIGHT,
            "reads": 4,
            "models": 2,
            "versions": [
                {"number": 1, "rows": 3, "sha256": "ab" * 32, "reason": "new", "created_at": MIDNIGHT, "purged": True},
                {"number": 2, "rows": 5, "sha256": "cd" * 32, "reason": "add", "created_at": None, "purged": False},
            ],
            "jobs": [{"job_id": 3, "name": "t", "owner": "ana", "state": "done", "version": 2, "purpose": "triage"}],
            "grants": [
                {"user": "ana", "purposes": ["triage", "research"], "granted_by": "dpo", "created_at": MIDNIGHT,
                 "active": True},
                {"user": "bia", "purposes": ["triage"], "granted_by": "dpo", "created_at": MIDNIGHT, "active": False},
            ],
            "transfers": [{"site": "são paulo", "mechanism": "anpd-scc"}],
            "erasures": [
                {"id": 1, "requested_at": MIDNIGHT, "deadline_at": MIDNIGHT + 15 * 86400, "all_datasets": True},
                {"id": 2, "requested_at": MIDNIGHT, "deadline_at": MIDNIGHT, "all_datasets": False},
            ],
        }  # fmt: skip
        empty = {
            **dataset,
            "name": "logs",
            "purposes": ["ops"],
            "personal_data": False,
            "sensitive": False,
            "subject_column": None,
            "retention_days": None,
            "reads": 0,
            "models": 0,
            **{k: [] for k in ("versions", "jobs", "grants", "transfers", "erasures")},
        }
        personal = {**empty, "name": "web", "personal_data": True}
        transfers = [
            {"site": "miami", "mechanism": "anpd-scc", "reference": "SCC-1", "signed_on": "2025-01-01", "active": True},
            {"site": "lisboa", "mechanism": "adequacy", "reference": "EU", "signed_on": "2024-02-02", "active": False},
        ]  # fmt: skip
        records = {"controller": "ACME", "generated_at": MIDNIGHT, "datasets": [dataset, empty, personal]}
        md = audit.render_processing_records(records | {"transfers": transfers})
        md_empty = audit.render_processing_records({**records, "datasets": [], "transfers": []})
    finally:
        monkeypatch.undo()  # the server's own TZ back, and applied
        time.tzset()
    none = ["- none", ""]
    empty_sections = [
        *["Versions:", "", *none, "Jobs that used it:", "", *none, "Who may access it (grants):", "", *none],
        *["International transfers:", "", *none, "Erasures (Art. 18 VI):", "", *none],
    ]
    head = ["# Record of processing operations (LGPD Art. 37)", "", "- Controller: ACME"]
    assert md.split("\n") == [
        *head,
        "- Generated: 2023-11-15T00:00:00+00:00",
        "- Datasets: 3",
        "",
        "## saude",
        "",
        "| Item | Value |",
        "|---|---|",
        "| Legal basis | art11-ii-f |",
        "| Purposes | triage, research |",
        "| Data categories | sensitive personal data (Art. 11) |",
        "| Subject column | cpf |",
        "| Residency | BR |",
        "| Retention | 30 days |",
        "| Registered | 2023-11-15 by ana |",
        "| Reads (audit log) | 4 |",
        "| Models derived | 2 |",
        "",
        "Versions:",
        "",
        "- v1: 3 rows, sha256 abababababab, new, 2023-11-15 (bytes purged)",
        "- v2: 5 rows, sha256 cdcdcdcdcdcd, add, -",
        "",
        "Jobs that used it:",
        "",
        "- job 3 (t, ana, done): v2 for triage",
        "",
        "Who may access it (grants):",
        "",
        "- ana: triage, research, granted by dpo on 2023-11-15",
        "- bia: triage, granted by dpo on 2023-11-15 (revoked)",
        "",
        "International transfers:",
        "",
        '- {"mechanism": "anpd-scc", "site": "são paulo"}',
        "",
        "Erasures (Art. 18 VI):",
        "",
        "- #1: requested 2023-11-15, due 2023-11-30 (every dataset)",
        "- #2: requested 2023-11-15, due 2023-11-15",
        "",
        "## logs",
        "",
        "| Item | Value |",
        "|---|---|",
        "| Legal basis | art11-ii-f |",
        "| Purposes | ops |",
        "| Data categories | no personal data |",
        "| Subject column | - |",
        "| Residency | BR |",
        "| Retention | not set |",
        "| Registered | 2023-11-15 by ana |",
        "| Reads (audit log) | 0 |",
        "| Models derived | 0 |",
        "",
        *empty_sections,
        "## web",
        "",
        "| Item | Value |",
        "|---|---|",
        "| Legal basis | art11-ii-f |",
        "| Purposes | ops |",
        "| Data categories | personal data |",
        "| Subject column | - |",
        "| Residency | BR |",
        "| Retention | not set |",
        "| Registered | 2023-11-15 by ana |",
        "| Reads (audit log) | 0 |",
        "| Models derived | 0 |",
        "",
        *empty_sections,
        "## Transfer mechanisms on record (Art. 33)",
        "",
        "- miami: anpd-scc SCC-1, signed 2025-01-01",
        "- lisboa: adequacy EU, signed 2024-02-02 (revoked)",
        "",
    ]
    assert md_empty.split("\n") == [
        *head,
        "- Generated: 2023-11-15T00:00:00+00:00",
        "- Datasets: 0",
        "",
        "## Transfer mechanisms on record (Art. 33)",
        "",
        "- none",
        "",
    ]


def test_processing_records_whole(database: Database, tmp_path: Path) -> None:
    """Every item of the Art. 37 record, per dataset: in name order, each dataset's own versions (by number),
    jobs (by id), grants, erasures (its own and those of every dataset), reads and transfers from the audit log."""
    sessions = open_db(database, tmp_path / "a.db")
    log = AuditLog(KEY)
    base = {"legal_basis": "art7-ix", "personal_data": True, "sensitive": False, "residency": "BR"}
    with sessions.begin() as s:
        ana, bia = User(name="ana", role="engineer"), User(name="bia", role="engineer")
        zeta = Dataset(name="zeta", format="csv", purposes=["ops"], created_by="bia", created_at=2.0, **base)
        alfa = Dataset(name="alfa", format="parquet", purposes=["churn"], created_by="ana", created_at=1.0, **base)
        s.add_all([ana, bia, zeta, alfa])  # zeta first: its id is the lower one
        s.flush()
        version = {"path": "/x", "created_by": "ana", "dataset_id": alfa.id}
        v2 = DatasetVersion(number=2, sha256="cd" * 32, bytes=20, rows=5, reason="b", created_at=4.0, **version)
        v1 = DatasetVersion(number=1, sha256="ab" * 32, bytes=10, rows=3, reason="a", created_at=3.0, **version)
        s.add_all([v2, v1])
        s.flush()
        v1.purged_at = 5.0
        jobs = [Job(name=f"j{n}", spec={}, owner="ana", gpus=1, job_token_hash="0" * 64) for n in (1, 2)]
        s.add_all(jobs)
        s.flush()
        s.add_all(
            [
                JobDataset(job_id=jobs[1].id, version_id=v2.id, purpose="churn"),
                JobDataset(job_id=jobs[0].id, version_id=v1.id, purpose="churn"),
                Model(job_id=jobs[0].id, kind="final", path="/m", personal_data=True, sensitive=False, residency="BR"),
                Grant(user_id=bia.id, dataset="zeta", purposes=["ops"], granted_by="dpo", created_at=6.0),
                Grant(user_id=ana.id, dataset="alfa", purposes=["churn"], granted_by="dpo", created_at=7.0),
                Transfer(site="miami", mechanism="anpd-scc", reference="SCC-1", signed_on="2025-01-01", created_by="d"),
                Transfer(site="lisboa", mechanism="adequacy", reference="EU", signed_on="2024-01-01", created_by="d"),
            ]
        )
        erasure = {"subject_pseudonym": pseudonym(KEY, "12345678909"), "requested_by": "dpo", "report": {}}
        s.add_all(
            [
                Erasure(dataset="zeta", requested_at=8.0, deadline_at=9.0, **erasure),
                Erasure(dataset=None, requested_at=10.0, deadline_at=11.0, **erasure),
                Erasure(dataset="alfa", requested_at=12.0, deadline_at=13.0, **erasure),
            ]
        )
        s.flush()
        s.get(Transfer, 2).revoked_at = 14.0  # type: ignore[union-attr]
        for _ in range(3):
            log.append(s, actor="ana", action="dataset.read", dataset="alfa", detail={"site": "read"})
        log.append(s, actor="ana", action="dataset.version", dataset="alfa")
        log.append(s, actor="ana", action="dataset.read")
        log.append(s, actor="dpo", action="transfer.record", dataset="alfa", detail={"site": "miami"})
        log.append(s, actor="dpo", action="transfer.record", dataset="zeta", detail={"site": "lisboa"})
    with sessions() as s:
        before = time.time()
        rec = audit.processing_records(s)
    assert before <= rec.pop("generated_at") <= time.time()
    assert [d["name"] for d in rec["datasets"]] == ["alfa", "zeta"]
    alfa_rec, zeta_rec = rec["datasets"]
    for d in rec["datasets"]:
        for j in d["jobs"]:
            j.pop("first_read_at")
    assert alfa_rec == {
        "name": "alfa",
        **base,
        "purposes": ["churn"],
        "subject_column": None,
        "retention_days": None,
        "format": "parquet",
        "registered_by": "ana",
        "registered_at": 1.0,
        "versions": [
            {"number": 1, "sha256": "ab" * 32, "rows": 3, "bytes": 10, "reason": "a", "created_at": 3, "purged": True},
            {"number": 2, "sha256": "cd" * 32, "rows": 5, "bytes": 20, "reason": "b", "created_at": 4, "purged": False},
        ],
        "jobs": [
            {"job_id": 1, "name": "j1", "owner": "ana", "state": "queued", "version": 1, "purpose": "churn"},
            {"job_id": 2, "name": "j2", "owner": "ana", "state": "queued", "version": 2, "purpose": "churn"},
        ],
        "models": 1,
        "grants": [{"user": "ana", "purposes": ["churn"], "granted_by": "dpo", "created_at": 7.0, "active": True}],
        "reads": 3,
        "transfers": [{"site": "miami"}],
        "erasures": [
            {"id": 2, "requested_at": 10.0, "deadline_at": 11.0, "all_datasets": True},
            {"id": 3, "requested_at": 12.0, "deadline_at": 13.0, "all_datasets": False},
        ],
    }  # fmt: skip
    assert (zeta_rec["format"], zeta_rec["versions"], zeta_rec["jobs"], zeta_rec["models"], zeta_rec["reads"]) == (
        "csv",
        [],
        [],
        0,
        0,
    )
    assert (zeta_rec["transfers"], [e["id"] for e in zeta_rec["erasures"]]) == ([{"site": "lisboa"}], [1, 2])
    assert rec == {
        "controller": audit.CONTROLLER_PLACEHOLDER,
        "datasets": [alfa_rec, zeta_rec],
        "transfers": [
            {"site": "miami", "mechanism": "anpd-scc", "reference": "SCC-1", "signed_on": "2025-01-01", "active": True},
            {"site": "lisboa", "mechanism": "adequacy", "reference": "EU", "signed_on": "2024-01-01", "active": False},
        ],
    }  # fmt: skip


def corrupt(path: Path, table: str) -> None:
    """Overwrite the middle leaf page of `table` in the SQLite file at `path` with garbage."""
    with sqlite3.connect(path) as conn:
        page_size = conn.execute("PRAGMA page_size").fetchone()[0]
        leaves = conn.execute(
            "SELECT pageno FROM dbstat WHERE name = ? AND pagetype = 'leaf' ORDER BY pageno", (table,)
        ).fetchall()
    conn.close()
    with path.open("r+b") as f:
        f.seek((leaves[len(leaves) // 2][0] - 1) * page_size)
        f.write(random.Random(20261202).randbytes(page_size))


TO_RESTORE = "To fix: restore the database from a backup; 'treino server' checks it at start and says how"


def test_corrupt_database_is_a_verdict(
    db: sessionmaker[Session], chain_db: str, database: Database, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A page of the audit tables overwritten with garbage (SQLite: "database disk image is malformed"): the
    verdict says how many records were read intact before it and how to recover, instead of an error."""
    if database.postgres:
        pytest.skip("PostgreSQL checks its own pages: a file cannot be corrupted from outside in this way")
    monkeypatch.setattr(audit, "VERIFY_BATCH_ROWS", 10)  # batches smaller than a page, so reading stops at it
    corrupt(tmp_path / "audit.db", "audit_records")
    result = check(db)
    n = result.records
    assert (result.ok, result.first_bad_seq) == (False, n + 1) and 0 < n < RECORDS
    assert result.reason == (
        f"record {n + 1}: the database is corrupt, reading the audit log failed after {n:,} intact records "
        f"(database disk image is malformed). {TO_RESTORE}"
    )
    # the checkpoints, read before any record
    engine = make_engine(f"sqlite:///{shutil.copy(chain_db, tmp_path / 'b.db')}")
    corrupt(tmp_path / "b.db", "audit_checkpoints")
    result = check(make_sessionmaker(engine))
    engine.dispose()
    assert (result.ok, result.first_bad_seq, result.records) == (False, 1, 0)
    assert result.reason == (
        "record 1: the database is corrupt, reading the audit log failed after 0 intact records "
        f"(database disk image is malformed). {TO_RESTORE}"
    )
