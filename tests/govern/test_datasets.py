"""Dataset registration, content-addressed versions, erasure and subject reports, on a real database (migrated by
Alembic; each test runs on SQLite and on PostgreSQL, see tests/conftest.py) and real files in a store directory."""

from __future__ import annotations

import csv
import hashlib
import json
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from sqlalchemy.orm import Session

from tests.conftest import Database
from treino.errors import PolicyViolation, TreinoError
from treino.govern import datasets as D
from treino.govern.cpf import cpf_digits, is_valid_cpf
from treino.govern.models import DatasetVersion, JobDataset, Model
from treino.govern.synthetic import write_csv
from treino.server.db import Job, make_engine, make_sessionmaker, migrate

ROWS = 300


@dataclass
class Env:
    session: Session
    store: Path
    roots: list[Path]
    csv: Path  # ROWS synthetic customers, then the first customer's row again (a subject with 2 rows)
    subject: str  # that customer's CPF, formatted as in the file

    def register(self, name: str = "clientes", path: Path | None = None, **kw: Any) -> D.Registered:
        args: dict[str, Any] = dict(
            name=name,
            path=path or self.csv,
            allowed_roots=self.roots,
            legal_basis="art7-v",
            purposes=["churn-model"],
            personal_data=True,
            sensitive=False,
            residency="BR",
            retention_days=365,
            subject_column="cpf",
            actor="ana",
        )
        return D.register_dataset(self.session, self.store, **(args | kw))


@pytest.fixture
def env(tmp_path: Path, database: Database) -> Iterator[Env]:
    engine = make_engine(database.new_url() or f"sqlite:///{tmp_path}/t.db")
    migrate(engine)
    imports = tmp_path / "imports"
    path = write_csv(imports / "clientes.csv", rows=ROWS, seed=11)
    lines = path.read_text(encoding="utf-8").splitlines()
    path.write_text("\n".join([*lines, lines[1]]) + "\n", encoding="utf-8")
    subject = lines[1].split(",")[0]
    with make_sessionmaker(engine)() as session:
        yield Env(session, tmp_path / "store", [imports], path, subject)
    engine.dispose()


def _job_with_model(session: Session, version: DatasetVersion, kind: str = "final") -> tuple[Job, Model]:
    job = Job(name="churn", spec={}, owner="ana", gpus=0, job_token_hash="0" * 64)
    session.add(job)
    session.flush()
    session.add(JobDataset(job_id=job.id, version_id=version.id, purpose="churn-model"))
    model = Model(job_id=job.id, kind=kind, path="/m", personal_data=True, sensitive=False, residency="BR")
    session.add(model)
    session.flush()
    return job, model


def _subject_rows(path: Path, cpf: str) -> int:
    column = pq.read_table(path, columns=["cpf"]).column(0).to_pylist()
    return sum(cpf_digits(v) == cpf_digits(cpf) for v in column)


# ---------------------------------------------------------------------------------------------- registration


def test_no_legal_basis_refused_naming_art7(env: Env) -> None:
    with pytest.raises(PolicyViolation, match=r"Art\. 7.*To fix") as e:
        env.register(legal_basis=None)
    assert e.value.rule == "LGPD Art. 7"
    with pytest.raises(PolicyViolation, match="Did you mean 'art7-ix'"):
        env.register(legal_basis="art-7-ix")


@pytest.mark.parametrize("basis", ["art7-ix", "art7-v", "art7-x", "art7-i"])
def test_sensitive_on_an_art7_basis_refused_naming_art11(env: Env, basis: str) -> None:
    with pytest.raises(PolicyViolation, match=r"Art\. 11.*To fix") as e:
        env.register(legal_basis=basis, sensitive=True)
    assert e.value.rule == "LGPD Art. 11"
    assert env.register(legal_basis="art11-i", sensitive=True).dataset.legal_basis == "art11-i"


def test_no_purpose_refused_naming_art6(env: Env) -> None:
    with pytest.raises(PolicyViolation, match=r"Art\. 6 I"):
        env.register(purposes=[" "])


def test_path_outside_roots_refused(env: Env, tmp_path: Path) -> None:
    outside = tmp_path / "outside" / "secret.csv"
    write_csv(outside, rows=5)
    with pytest.raises(PolicyViolation, match="outside the allowed import roots") as e:
        env.register(path=outside)
    assert str(env.roots[0]) in str(e.value)
    with pytest.raises(PolicyViolation, match="outside"):
        env.register(path=env.roots[0] / ".." / "outside" / "secret.csv")
    link = env.roots[0] / "link.csv"
    link.symlink_to(outside)
    with pytest.raises(PolicyViolation, match=r"resolves to .*secret\.csv"):
        env.register(path=link)


def test_missing_subject_column_and_unknown_format(env: Env) -> None:
    with pytest.raises(TreinoError, match="Did you mean 'cpf'"):
        env.register(subject_column="cpff")
    other = env.roots[0] / "x.xlsx"
    other.write_bytes(b"")
    with pytest.raises(TreinoError, match=r"\.parquet, \.csv or \.jsonl"):
        env.register(path=other)


def test_content_addressed_and_read_only(env: Env) -> None:
    a = env.register("a")
    b = env.register("b")
    assert a.version.sha256 == b.version.sha256 and a.version.path == b.version.path
    path = D.version_path(env.store, a.version)
    assert path == env.store / "sha256" / a.version.sha256[:2] / f"{a.version.sha256}.parquet"
    assert hashlib.sha256(path.read_bytes()).hexdigest() == a.version.sha256
    assert stat.S_IMODE(path.stat().st_mode) == 0o400
    assert a.version.rows == ROWS + 1 and a.version.bytes == path.stat().st_size
    assert a.cpf_findings[0].column == "cpf" and a.warnings == []
    # same content again: no new version; changed content: v2
    assert D.new_version(env.session, env.store, name="a", path=env.csv, allowed_roots=env.roots, actor="ana").unchanged
    write_csv(env.roots[0] / "v2.csv", rows=50, seed=12)
    v2 = D.new_version(
        env.session, env.store, name="a", path=env.roots[0] / "v2.csv", allowed_roots=env.roots, actor="x"
    )
    assert (v2.version.number, v2.version.parent_id, v2.version.rows) == (2, a.version.id, 50)
    assert [v.number for v in D.versions(env.session, "a")] == [1, 2]
    assert D.resolve(env.session, "a").number == 2 and D.resolve(env.session, "a", 1).id == a.version.id


def test_cpfs_in_a_dataset_not_flagged_personal_warn_and_stay_erasable(env: Env) -> None:
    reg = env.register(legal_basis="not-personal", personal_data=False, subject_column=None)
    assert [f.column for f in reg.cpf_findings] == ["cpf"]
    assert len(reg.warnings) == 2 and "column 'cpf'" in reg.warnings[0] and "Art. 5 I" in reg.warnings[0]
    # Mislabelled, yet an Art. 18 request must still reach its rows (found in review: it used to be skipped).
    assert reg.dataset.subject_column == "cpf" and "Art. 18" in reg.warnings[1]
    env.session.flush()
    report = D.subject_report(env.session, env.store, env.subject)
    assert report.found and report.holdings[0].rows == 2


def test_jsonl_with_numeric_subject_ids(env: Env) -> None:
    path = env.roots[0] / "events.jsonl"
    path.write_text("".join(json.dumps({"user": i, "clicks": i * 2}) + "\n" for i in range(10)))
    reg = env.register("events", path=path, subject_column="user")
    table = pq.read_table(D.version_path(env.store, reg.version))
    assert table.column("user").to_pylist()[:2] == ["0", "1"] and reg.dataset.format == "jsonl"


# --------------------------------------------------------------------------------------------- erasure, report


@pytest.mark.parametrize("form", ["formatted", "bare"])
def test_erasure_end_to_end(env: Env, form: str) -> None:
    reg = env.register()
    v1 = reg.version
    v1_path = D.version_path(env.store, v1)
    job, model = _job_with_model(env.session, v1)
    subject = env.subject if form == "formatted" else cpf_digits(env.subject)

    before = D.subject_report(env.session, env.store, subject)
    assert [(h.dataset, h.version, h.rows) for h in before.holdings] == [("clientes", 1, 2)]
    assert [(m.model_id, m.job_id) for m in before.models] == [(model.id, job.id)]

    erasure = D.open_erasure(env.session, subject_pseudonym="p" * 64, dataset=None, requested_by="dpo")
    assert erasure.deadline_at - erasure.requested_at == 15 * 86_400
    result = D.erase_subject(
        env.session, env.store, subject_id=subject, dataset=None, actor="dpo", erasure_id=erasure.id
    )
    env.session.commit()

    (d,) = result.datasets
    assert (d.dataset, d.new_version, d.rows_removed) == ("clientes", 2, 2)
    assert [(p.number, p.sha256, p.subject_rows) for p in d.purged] == [(1, v1.sha256, 2)]
    v2 = D.resolve(env.session, "clientes")
    assert v2.rows == ROWS - 1 and v2.parent_id == v1.id and v2.reason == f"erasure #{erasure.id}"
    assert _subject_rows(D.version_path(env.store, v2), env.subject) == 0
    assert pq.read_table(D.version_path(env.store, v2)).num_rows == ROWS - 1
    assert not v1_path.exists() and result.deleted_files == [v1.path]
    env.session.refresh(v1)
    assert v1.sha256 == d.purged[0].sha256 and v1.purged_at is not None
    env.session.refresh(model)
    assert model.erasure_id == erasure.id
    assert model.erasure_note == f"erasure #{erasure.id}: trained on clientes v1, which held the erased subject"
    assert result.model_ids == [model.id] and result.job_ids == [job.id]
    env.session.refresh(erasure)
    assert erasure.report["rows_removed"] == 2 and erasure.report["models"] == [model.id]
    assert cpf_digits(env.subject) not in json.dumps(erasure.report)

    after = D.subject_report(env.session, env.store, subject)
    assert not after.found and after.text().startswith("no records")
    # the purged content cannot come back by re-importing the original file
    with pytest.raises(PolicyViolation, match=r"Art\. 18 VI"):
        D.new_version(env.session, env.store, name="clientes", path=env.csv, allowed_roots=env.roots, actor="ana")


def test_erasure_no_records(env: Env) -> None:
    reg = env.register()
    nobody = "111.444.777-35"
    assert is_valid_cpf(nobody) and _subject_rows(D.version_path(env.store, reg.version), nobody) == 0
    erasure = D.open_erasure(env.session, subject_pseudonym="q" * 64, dataset="clientes", requested_by="dpo")
    result = D.erase_subject(
        env.session, env.store, subject_id=nobody, dataset="clientes", actor="dpo", erasure_id=erasure.id
    )
    assert result.rows_removed == 0 and not result.found and result.model_ids == []
    assert (
        result.text()
        == "no records: the subject is in no stored version of 1 searched dataset(s) (clientes); nothing was erased."
    )
    assert D.version_path(env.store, reg.version).exists() and D.resolve(env.session, "clientes").number == 1
    report = D.subject_report(env.session, env.store, "not-a-cpf")
    assert report.text() == "no records: the subject is in no stored version of 1 searched dataset(s) (clientes)."


def test_erasure_purges_every_version_and_spares_shared_bytes(env: Env) -> None:
    v1 = env.register().version
    env.register("copia")  # the same bytes as clientes v1
    with env.csv.open("a", encoding="utf-8", newline="") as f:
        csv.writer(f).writerow(["987.654.321-00", "Ana Lima Costa", "Recife", "PE", 30, 1000.0, 2, 0])
    v2 = D.new_version(
        env.session, env.store, name="clientes", path=env.csv, allowed_roots=env.roots, actor="a"
    ).version
    _, m1 = _job_with_model(env.session, v1, kind="checkpoint")
    _, m2 = _job_with_model(env.session, v2)

    e1 = D.open_erasure(env.session, subject_pseudonym="r" * 64, dataset="clientes", requested_by="dpo")
    r1 = D.erase_subject(
        env.session, env.store, subject_id=env.subject, dataset="clientes", actor="dpo", erasure_id=e1.id
    )
    (d,) = r1.datasets
    assert [p.number for p in d.purged] == [1, 2] and d.new_version == 3 and d.rows_removed == 2
    assert D.resolve(env.session, "clientes").rows == ROWS  # ROWS + 1 + 1 - 2
    assert r1.model_ids == sorted([m1.id, m2.id])
    assert D.version_path(env.store, v1).exists()  # 'copia' v1 still holds these bytes
    assert not D.version_path(env.store, v2).exists() and r1.deleted_files == [v2.path]

    e2 = D.open_erasure(env.session, subject_pseudonym="r" * 64, dataset=None, requested_by="dpo")
    r2 = D.erase_subject(env.session, env.store, subject_id=env.subject, dataset=None, actor="dpo", erasure_id=e2.id)
    assert [x.dataset for x in r2.datasets] == ["copia"] and r2.deleted_files == [v1.path]
    assert not D.version_path(env.store, v1).exists()
    env.session.refresh(m1)
    assert m1.erasure_id == e1.id  # the first erasure that marked it
    filtered = pq.read_table(D.version_path(env.store, D.resolve(env.session, "copia")), columns=["cpf"])
    assert not pc.any(pc.equal(filtered.column(0), env.subject)).as_py()


def test_an_erasure_scanned_before_its_transaction_reads_no_parquet_in_it(env: Env) -> None:
    """The Parquet work is done by scan_erasure before the transaction (which then holds SQLite's write lock and the
    audit chain for its updates only): inside it, no version file is read again, and the result is the same."""
    env.register()
    env.register("copia")  # the same bytes: one file, two versions
    scan = D.scan_erasure(env.session, env.store, subject_id=env.subject, dataset=None)
    env.session.commit()  # the registrations (the scan only read)
    assert sorted(s.rows for s in scan.values()) == [2, 2] and all(s.stored is not None for s in scan.values())
    real_read = pq.read_table
    reads: list[str] = []
    pq.read_table = lambda *a, **kw: reads.append(str(a[0])) or real_read(*a, **kw)  # type: ignore[assignment]
    try:
        erasure = D.open_erasure(env.session, subject_pseudonym="s" * 64, dataset=None, requested_by="dpo")
        result = D.erase_subject(
            env.session, env.store, subject_id=env.subject, dataset=None, actor="dpo", erasure_id=erasure.id, scan=scan
        )
        env.session.commit()
    finally:
        pq.read_table = real_read  # type: ignore[assignment]
    assert reads == []
    assert sorted((d.dataset, d.new_version, d.rows_removed) for d in result.datasets) == [
        ("clientes", 2, 2),
        ("copia", 2, 2),
    ]
    for name in ("clientes", "copia"):
        assert _subject_rows(D.version_path(env.store, D.resolve(env.session, name)), env.subject) == 0
    assert D.drop_unused_files(env.session, env.store, scan) == []  # every file it wrote is a version now


def test_a_version_added_after_the_scan_is_erased_too_and_the_unused_file_dropped(env: Env) -> None:
    env.register()
    scan = D.scan_erasure(env.session, env.store, subject_id=env.subject, dataset="clientes")
    env.session.commit()
    (scanned,) = [s for s in scan.values() if s.stored is not None]
    with env.csv.open("a", encoding="utf-8", newline="") as f:  # v2 comes in between, the subject still in it
        csv.writer(f).writerow(["987.654.321-00", "Ana Lima Costa", "Recife", "PE", 30, 1000.0, 2, 0])
    D.new_version(env.session, env.store, name="clientes", path=env.csv, allowed_roots=env.roots, actor="a")
    erasure = D.open_erasure(env.session, subject_pseudonym="t" * 64, dataset="clientes", requested_by="dpo")
    result = D.erase_subject(
        env.session,
        env.store,
        subject_id=env.subject,
        dataset="clientes",
        actor="dpo",
        erasure_id=erasure.id,
        scan=scan,
    )
    env.session.commit()
    (d,) = result.datasets
    assert [p.number for p in d.purged] == [1, 2] and d.new_version == 3 and d.rows_removed == 2
    v3 = D.resolve(env.session, "clientes")
    assert v3.rows == ROWS and _subject_rows(D.version_path(env.store, v3), env.subject) == 0
    # v1 without the subject, written by the scan, is no version: dropped
    assert (env.store / scanned.stored.path).exists()  # type: ignore[union-attr]
    assert D.drop_unused_files(env.session, env.store, scan) == [scanned.stored.path]  # type: ignore[union-attr]
    assert not (env.store / scanned.stored.path).exists()  # type: ignore[union-attr]


def test_a_scanned_file_deleted_before_the_transaction_is_written_again(env: Env) -> None:
    """Two erasures of one subject scan the same content (one file, by its hash); when the first fails, its clean-up
    deletes that file: the second's transaction must write it again, not commit a version without bytes."""
    env.register()
    env.session.commit()
    scan = D.scan_erasure(env.session, env.store, subject_id=env.subject, dataset="clientes")
    (scanned,) = [s for s in scan.values() if s.stored is not None]
    assert D.drop_unused_files(env.session, env.store, scan) == [scanned.stored.path]  # type: ignore[union-attr]
    erasure = D.open_erasure(env.session, subject_pseudonym="u" * 64, dataset="clientes", requested_by="dpo")
    D.erase_subject(
        env.session,
        env.store,
        subject_id=env.subject,
        dataset="clientes",
        actor="dpo",
        erasure_id=erasure.id,
        scan=scan,
    )
    env.session.commit()
    v2 = D.resolve(env.session, "clientes")
    assert v2.number == 2 and D.version_path(env.store, v2).exists()
    assert pq.read_table(D.version_path(env.store, v2)).num_rows == ROWS - 1


def test_the_start_up_sweep_deletes_files_no_version_took_and_keeps_the_live_ones(env: Env) -> None:
    """A server stopped between an erasure's scan (or an import's file) and its transaction leaves a file no version
    points to: the next start deletes it, and never a file a live version holds."""
    live = env.register().version
    env.session.commit()
    scan = D.scan_erasure(env.session, env.store, subject_id=env.subject, dataset="clientes")
    (scanned,) = [s for s in scan.values() if s.stored is not None]  # then the server stops: no transaction
    assert D.sweep_purged(env.session, env.store) == [scanned.stored.path]  # type: ignore[union-attr]
    assert not (env.store / scanned.stored.path).exists()  # type: ignore[union-attr]
    assert D.version_path(env.store, live).exists()
