"""The governance tables. They share the server's metadata (treino.orm.Base), so one Alembic history
migrates both.

    users ─< tokens            people with a role; tokens are stored as SHA-256 only, with expiry and revocation
    users ─< grants            per-dataset access, for the purposes listed
    datasets ─< dataset_versions        content-addressed, immutable; erasure makes a new version, purges old bytes
    transfers                  recorded transfer mechanisms (Art. 33) that let a foreign site hold BR data
    jobs ─< job_datasets       the dataset versions pinned at submit, and when the job read them; and those its
                               starting checkpoint was trained on (inherited_from: the job it continues)
    jobs ─< models             checkpoints and final models, with the classification and residency they inherit
    erasures                   Art. 18 VI requests, their deadline (Art. 19: 15 days) and report
    erasures ─< erased_subjects         tombstones: a salted hash of each erased subject's canonical id (tombstones.py)
    audit_records, audit_checkpoints    the hash chain and its HMAC-signed checkpoints
"""

from __future__ import annotations

import enum
import time
from typing import Any

from sqlalchemy import Boolean, Float, ForeignKey, Index, String, Text, UniqueConstraint
from sqlalchemy.orm import Mapped, mapped_column

from treino.orm import Base, BigInt


class Role(enum.StrEnum):
    ADMIN = "admin"  # everything
    ENGINEER = "engineer"  # submit jobs, read granted datasets, register datasets
    DPO = "dpo"  # the encarregado: audit, lineage, erasure, subject reports, grants
    VIEWER = "viewer"  # read jobs and metrics


class User(Base):
    __tablename__ = "users"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    role: Mapped[str] = mapped_column(String(20))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    disabled_at: Mapped[float | None] = mapped_column(Float, default=None)


class Grant(Base):
    __tablename__ = "grants"

    id: Mapped[int] = mapped_column(primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("users.id"), index=True)
    dataset: Mapped[str] = mapped_column(String(100))
    purposes: Mapped[list[Any]]
    granted_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    revoked_at: Mapped[float | None] = mapped_column(Float, default=None)


class Dataset(Base):
    __tablename__ = "datasets"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100), unique=True)
    format: Mapped[str] = mapped_column(String(10))  # parquet, csv, jsonl
    legal_basis: Mapped[str] = mapped_column(String(40))  # e.g. "art7-ix" (legitimate interest), "art11-i"
    purposes: Mapped[list[Any]]
    personal_data: Mapped[bool] = mapped_column(Boolean)
    sensitive: Mapped[bool] = mapped_column(Boolean)
    residency: Mapped[str] = mapped_column(String(10))  # ISO country code the data must stay in ("BR"), or "any"
    retention_days: Mapped[int | None] = mapped_column(BigInt, default=None)
    subject_column: Mapped[str | None] = mapped_column(String(100), default=None)
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    # When the retention period starts (unix s): the data's collection, if older than its registration; else
    # created_at. Moved by an extension of the retention (treino.govern.retention).
    retention_from: Mapped[float | None] = mapped_column(Float, default=None)


class DatasetVersion(Base):
    __tablename__ = "dataset_versions"
    __table_args__ = (UniqueConstraint("dataset_id", "number"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    dataset_id: Mapped[int] = mapped_column(ForeignKey("datasets.id"), index=True)
    number: Mapped[int] = mapped_column(BigInt)
    sha256: Mapped[str] = mapped_column(String(64))
    path: Mapped[str] = mapped_column(Text)  # in the content-addressed store
    bytes: Mapped[int] = mapped_column(BigInt)
    rows: Mapped[int] = mapped_column(BigInt)
    reason: Mapped[str] = mapped_column(String(200))  # "import PATH", "erasure #N"
    parent_id: Mapped[int | None] = mapped_column(ForeignKey("dataset_versions.id"), default=None)
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    purged_at: Mapped[float | None] = mapped_column(Float, default=None)  # bytes deleted (erasure); hash kept


class Transfer(Base):
    __tablename__ = "transfers"

    id: Mapped[int] = mapped_column(primary_key=True)
    site: Mapped[str] = mapped_column(String(40))
    mechanism: Mapped[str] = mapped_column(String(40))  # "anpd-scc" (Res. CD/ANPD 19/2024 standard clauses), ...
    reference: Mapped[str] = mapped_column(String(200))
    signed_on: Mapped[str] = mapped_column(String(10))  # ISO date
    created_by: Mapped[str] = mapped_column(String(100))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    revoked_at: Mapped[float | None] = mapped_column(Float, default=None)


class JobDataset(Base):
    __tablename__ = "job_datasets"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    version_id: Mapped[int] = mapped_column(ForeignKey("dataset_versions.id"), index=True)
    purpose: Mapped[str] = mapped_column(String(100))
    pinned_at: Mapped[float] = mapped_column(Float, default=time.time)
    first_read_at: Mapped[float | None] = mapped_column(Float, default=None)
    # Not pinned for reading: the version a job's starting checkpoint was trained on, inherited from the job it
    # continues (a resubmit): its models derive from that version too, so lineage and erasure follow this edge.
    inherited_from: Mapped[int | None] = mapped_column(BigInt, default=None)


class Model(Base):
    __tablename__ = "models"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    kind: Mapped[str] = mapped_column(String(20))  # "checkpoint" or "final"
    step: Mapped[int | None] = mapped_column(BigInt, default=None)
    path: Mapped[str] = mapped_column(Text)
    personal_data: Mapped[bool] = mapped_column(Boolean)  # inherited from its datasets: models memorise
    sensitive: Mapped[bool] = mapped_column(Boolean)
    residency: Mapped[str] = mapped_column(String(10))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    erasure_id: Mapped[int | None] = mapped_column(ForeignKey("erasures.id"), default=None)  # marked as affected
    erasure_note: Mapped[str | None] = mapped_column(Text, default=None)
    # A marked model taken out of use (treino.server.quarantine): its file no longer served; deleted: its files gone
    # from disk, the row kept as a tombstone
    quarantined_at: Mapped[float | None] = mapped_column(Float, default=None)
    quarantined_by: Mapped[str | None] = mapped_column(String(100), default=None)
    deleted_at: Mapped[float | None] = mapped_column(Float, default=None)
    deleted_by: Mapped[str | None] = mapped_column(String(100), default=None)


class Erasure(Base):
    __tablename__ = "erasures"

    id: Mapped[int] = mapped_column(primary_key=True)
    subject_pseudonym: Mapped[str] = mapped_column(String(64), index=True)
    dataset: Mapped[str | None] = mapped_column(String(100), default=None)  # None: every dataset
    requested_by: Mapped[str] = mapped_column(String(100))
    requested_at: Mapped[float] = mapped_column(Float, default=time.time)
    deadline_at: Mapped[float] = mapped_column(Float)
    report: Mapped[dict[str, Any]]


class ErasedSubject(Base):
    """A tombstone: HMAC-SHA256(tombstone salt, canonical id) of an erased subject, never the id or its pseudonym."""

    __tablename__ = "erased_subjects"

    id: Mapped[int] = mapped_column(primary_key=True)
    digest: Mapped[str] = mapped_column(String(64), index=True)
    dataset: Mapped[str | None] = mapped_column(String(100), default=None)  # None: erased from every dataset
    erasure_id: Mapped[int] = mapped_column(ForeignKey("erasures.id"))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class AuditRecord(Base):
    __tablename__ = "audit_records"
    __table_args__ = (Index("ix_audit_dataset", "dataset"), Index("ix_audit_subject", "subject"))

    seq: Mapped[int] = mapped_column(BigInt, primary_key=True, autoincrement=False)
    time: Mapped[float] = mapped_column(Float)
    actor: Mapped[str] = mapped_column(String(100))
    action: Mapped[str] = mapped_column(String(40))  # dataset.read, dataset.register, grant.create, job.admit, ...
    dataset: Mapped[str | None] = mapped_column(String(100), default=None)
    subject: Mapped[str | None] = mapped_column(String(64), default=None)  # HMAC pseudonym, never a raw id
    job_id: Mapped[int | None] = mapped_column(BigInt, default=None)
    detail: Mapped[dict[str, Any]]
    prev_hash: Mapped[str] = mapped_column(String(64))
    hash: Mapped[str] = mapped_column(String(64))  # SHA-256 of prev_hash + this record's canonical JSON


class AuditCheckpoint(Base):
    __tablename__ = "audit_checkpoints"

    id: Mapped[int] = mapped_column(primary_key=True)
    seq: Mapped[int] = mapped_column(BigInt)
    hash: Mapped[str] = mapped_column(String(64))
    hmac: Mapped[str] = mapped_column(String(64))  # HMAC-SHA256(server key, f"{seq}:{hash}")
    time: Mapped[float] = mapped_column(Float, default=time.time)
