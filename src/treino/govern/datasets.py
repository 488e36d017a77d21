"""Datasets under LGPD: registration with a legal basis, content-addressed immutable versions, erasure of one data
subject, and the access report. Functions over a SQLAlchemy Session and the store's root directory; they flush but
never commit (the caller commits, and records what they return in the audit log).

    register_dataset(...)  refuses a missing legal basis (Art. 7), sensitive data on a basis Art. 11 does not allow,
                           no purpose (Art. 6 I), a path outside the import roots; writes the content as Parquet to
                           STORE/sha256/ab/abcdef....parquet (SHA-256 of the file's bytes, mode 0444) and scans it
                           for CPFs (cpf.py): CPFs in a dataset not flagged as personal data give a warning
    new_version(...)       a re-import: a new version when the content changed
    erase_subject(...)     Art. 18 VI: a new version without the subject's rows, the old versions' bytes deleted
                           (their hashes stay in dataset_versions), every model of a job that read them marked
    subject_report(...)    Art. 18 II: which datasets and versions hold the subject, which jobs and models used them

Versions are immutable: a change is always a new DatasetVersion row with a new hash. `DatasetVersion.path` is
relative to the store (see `version_path`). The raw subject id never leaves these functions: the results carry
counts, dataset names, version numbers and hashes only.
"""

from __future__ import annotations

import difflib
import enum
import hashlib
import os
import re
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.csv as pacsv  # type: ignore[import-untyped]
import pyarrow.json as pajson  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from treino.errors import PolicyViolation, TreinoError
from treino.govern.cpf import ColumnFinding, cpf_digits, scan_column, scan_table
from treino.govern.models import Dataset, DatasetVersion, Erasure, JobDataset, Model
from treino.govern.tombstones import KeepOut
from treino.i18n import N_, Joined, Msg

FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".jsonl": "jsonl", ".ndjson": "jsonl"}
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,99}$")
RESIDENCY_RE = re.compile(r"^(?:[A-Z]{2}|any)$")  # ISO 3166-1 alpha-2, or "any"
STORE_FILE_MODE = 0o400  # versions are immutable, and personal data: read-only, for the server's user alone
HASH_CHUNK_BYTES = 8 << 20
ERASURE_DEADLINE_S = 15 * 86_400.0  # Art. 19 II: a complete answer within 15 days
SUBJECT_SCAN_ROWS = 1_000  # rows sampled to decide whether the subject column holds CPFs


class LegalBasis(enum.StrEnum):
    """The legal bases of LGPD Art. 7 (personal data) and Art. 11 (sensitive data), plus `not-personal` for data
    the LGPD does not cover (no personal data, Art. 5 I; the CPF scanner still checks the claim)."""

    ART7_I = "art7-i"
    ART7_II = "art7-ii"
    ART7_III = "art7-iii"
    ART7_IV = "art7-iv"
    ART7_V = "art7-v"
    ART7_VI = "art7-vi"
    ART7_VII = "art7-vii"
    ART7_VIII = "art7-viii"
    ART7_IX = "art7-ix"
    ART7_X = "art7-x"
    ART11_I = "art11-i"
    ART11_II_A = "art11-ii-a"
    ART11_II_B = "art11-ii-b"
    ART11_II_C = "art11-ii-c"
    ART11_II_D = "art11-ii-d"
    ART11_II_E = "art11-ii-e"
    ART11_II_F = "art11-ii-f"
    ART11_II_G = "art11-ii-g"
    NOT_PERSONAL = "not-personal"

    @property
    def label(self) -> str:
        return BASIS_LABELS[self]

    @property
    def allows_sensitive(self) -> bool:
        return self.value.startswith("art11-")


# Lei 13.709/2018, Art. 7 I-X and Art. 11 I, II a-g (https://www.planalto.gov.br/ccivil_03/_ato2015-2018/2018/lei/l13709.htm).
BASIS_LABELS: dict[LegalBasis, str] = {
    LegalBasis.ART7_I: N_("Art. 7 I: consent of the data subject"),
    LegalBasis.ART7_II: N_("Art. 7 II: legal or regulatory obligation"),
    LegalBasis.ART7_III: N_("Art. 7 III: public administration, for public policies"),
    LegalBasis.ART7_IV: N_("Art. 7 IV: studies by a research body"),
    LegalBasis.ART7_V: N_("Art. 7 V: performance of a contract"),
    LegalBasis.ART7_VI: N_("Art. 7 VI: exercise of rights in judicial, administrative or arbitral proceedings"),
    LegalBasis.ART7_VII: N_("Art. 7 VII: protection of life or physical safety"),
    LegalBasis.ART7_VIII: N_("Art. 7 VIII: health protection, by health professionals or services"),
    LegalBasis.ART7_IX: N_("Art. 7 IX: legitimate interest of the controller or a third party"),
    LegalBasis.ART7_X: N_("Art. 7 X: credit protection"),
    LegalBasis.ART11_I: N_("Art. 11 I: specific and highlighted consent, for specific purposes"),
    LegalBasis.ART11_II_A: N_("Art. 11 II a: legal or regulatory obligation"),
    LegalBasis.ART11_II_B: N_("Art. 11 II b: public administration, for public policies"),
    LegalBasis.ART11_II_C: N_("Art. 11 II c: studies by a research body"),
    LegalBasis.ART11_II_D: N_("Art. 11 II d: exercise of rights, including in contracts and proceedings"),
    LegalBasis.ART11_II_E: N_("Art. 11 II e: protection of life or physical safety"),
    LegalBasis.ART11_II_F: N_("Art. 11 II f: health protection, by health professionals or services"),
    LegalBasis.ART11_II_G: N_("Art. 11 II g: fraud prevention and the subject's security in identification"),
    LegalBasis.NOT_PERSONAL: N_("no personal data (Art. 5 I): the LGPD does not apply"),
}
# The Art. 11 basis that corresponds to an Art. 7 one, for the refusal's "To fix". Contract (V), legitimate interest
# (IX) and credit protection (X) have none: they are not available for sensitive data (reference §1.3).
ART11_FOR_ART7: dict[LegalBasis, LegalBasis] = {
    LegalBasis.ART7_I: LegalBasis.ART11_I,
    LegalBasis.ART7_II: LegalBasis.ART11_II_A,
    LegalBasis.ART7_III: LegalBasis.ART11_II_B,
    LegalBasis.ART7_IV: LegalBasis.ART11_II_C,
    LegalBasis.ART7_VI: LegalBasis.ART11_II_D,
    LegalBasis.ART7_VII: LegalBasis.ART11_II_E,
    LegalBasis.ART7_VIII: LegalBasis.ART11_II_F,
}


def _bases_list(sensitive: bool) -> str:
    return ", ".join(b.value for b in LegalBasis if b.allows_sensitive or not sensitive)


def validate_registration(
    *,
    legal_basis: str | None,
    purposes: Sequence[str],
    personal_data: bool,
    sensitive: bool,
    residency: str = "BR",
    retention_days: int | None = None,
) -> LegalBasis:
    """The parsed legal basis, or PolicyViolation naming the article the registration breaks."""
    if not legal_basis or not legal_basis.strip():
        raise PolicyViolation(
            "LGPD Art. 7",
            Msg(
                "a dataset needs a legal basis for its processing (Art. 7; Art. 11 for sensitive data). To fix: pass "
                "one of {bases} (or not-personal for data about no one).",
                bases=_bases_list(sensitive),
            ),
        )
    try:
        basis = LegalBasis(legal_basis.strip().lower())
    except ValueError:
        close = difflib.get_close_matches(legal_basis.strip().lower(), [b.value for b in LegalBasis], n=1)
        hint = Msg("Did you mean '{name}'? ", name=close[0]) if close else ""
        raise PolicyViolation(
            "LGPD Art. 7",
            Msg(
                "unknown legal basis '{legal_basis}'. {hint}To fix: use one of {bases}.",
                legal_basis=legal_basis,
                hint=hint,
                bases=_bases_list(sensitive),
            ),
        ) from None
    if sensitive and not personal_data:
        raise PolicyViolation(
            "LGPD Art. 5 II",
            Msg("sensitive data is personal data by definition. To fix: flag the dataset as personal data too."),
        )
    if basis is LegalBasis.NOT_PERSONAL and personal_data:
        raise PolicyViolation(
            "LGPD Art. 7",
            Msg(
                "the dataset is flagged as personal data, so 'not-personal' is no legal basis for it. To fix: pass "
                "one of {bases}.",
                bases=_bases_list(sensitive),
            ),
        )
    if sensitive and not basis.allows_sensitive:
        label = Msg(basis.label)  # a catalog text (N_ in BASIS_LABELS): in the reader's language
        if basis in ART11_FOR_ART7:
            instead = ART11_FOR_ART7[basis]
            raise PolicyViolation(
                "LGPD Art. 11",
                Msg(
                    "{label} does not cover sensitive data; Art. 11 has its own, narrower list. To fix: use {basis} "
                    "({basis_label}).",
                    label=label,
                    basis=instead.value,
                    basis_label=Msg(instead.label),
                ),
            )
        raise PolicyViolation(
            "LGPD Art. 11",
            Msg(
                "{label} is not available for sensitive data (only Art. 11 bases are). To fix: choose one of {bases}, "
                "if one truly applies, or drop the sensitive columns.",
                label=label,
                bases=_bases_list(True),
            ),
        )
    if not [p for p in purposes if p and p.strip()]:
        raise PolicyViolation(
            "LGPD Art. 6 I",
            Msg(
                "processing needs legitimate, specific and explicit purposes (purpose principle). To fix: name at "
                "least one purpose, e.g. --purpose churn-model."
            ),
        )
    if not RESIDENCY_RE.match(residency):
        raise TreinoError(
            Msg(
                "Residency '{residency}' is neither an ISO 3166-1 alpha-2 country code nor 'any'. To fix: e.g. BR.",
                residency=residency,
            )
        )
    if retention_days is not None and retention_days <= 0:
        raise TreinoError(
            Msg(
                "Retention of {retention_days} days: it must be a positive number of days, or none.",
                retention_days=retention_days,
            )
        )
    return basis


# --------------------------------------------------------------------------------------------------------- store


def version_path(store: Path, version: DatasetVersion) -> Path:
    """Where a version's bytes are (or were, once purged)."""
    return store / version.path


def _check_root(path: Path, allowed_roots: Sequence[Path]) -> Path:
    """`path` resolved (symlinks followed), or PolicyViolation when it lies outside every import root."""
    resolved = Path(path).expanduser().resolve()
    roots = [Path(r).expanduser().resolve() for r in allowed_roots]
    if not any(resolved.is_relative_to(r) for r in roots):
        shown = ", ".join(str(r) for r in roots) or Msg("(none configured)")
        target: str = str(path)
        if resolved != Path(path):
            target = Msg("{path} (resolves to {resolved})", path=target, resolved=str(resolved))
        raise PolicyViolation(
            "import roots",
            Msg(
                "{target} is outside the allowed import roots: {shown}. To fix: copy the file under one of them, or "
                "ask an admin to add its directory as an import root.",
                target=target,
                shown=shown,
            ),
        )
    if not resolved.is_file():
        raise TreinoError(Msg("No such file: {path}. To fix: check the path (it is read on the server).", path=path))
    return resolved


def _format_of(path: Path) -> str:
    fmt = FORMATS.get(path.suffix.lower())
    if fmt is None:
        raise TreinoError(
            Msg(
                "Unknown dataset format '{suffix}' ({file}). To fix: use .parquet, .csv or .jsonl.",
                suffix=path.suffix,
                file=path.name,
            )
        )
    return fmt


def _as_string(table: pa.Table, column: str) -> pa.Table:
    col = table.column(column)
    if pa.types.is_string(col.type):
        return table
    i = table.column_names.index(column)
    return table.set_column(i, pa.field(column, pa.string()), pc.cast(col, pa.string()))


def _read(path: Path, fmt: str, subject_column: str | None) -> pa.Table:
    """The file as an Arrow table, the subject column as strings (ids keep their leading zeros in CSV)."""
    try:
        if fmt == "parquet":
            table = pq.read_table(path)
        elif fmt == "csv":
            types = {subject_column: pa.string()} if subject_column else {}
            table = pacsv.read_csv(path, convert_options=pacsv.ConvertOptions(column_types=types))
        else:
            table = pajson.read_json(path)
    except (pa.ArrowInvalid, OSError) as e:
        raise TreinoError(
            Msg("Cannot read {path} as {fmt}: {e}. To fix: check the file's format.", path=path, fmt=fmt, e=e)
        ) from e
    if subject_column is not None:
        if subject_column not in table.column_names:
            close = difflib.get_close_matches(subject_column, table.column_names, n=1)
            hint = Msg(" Did you mean '{name}'?", name=close[0]) if close else ""
            raise TreinoError(
                Msg(
                    "Subject column '{subject_column}' is not in {file} (columns: {columns}).{hint}",
                    subject_column=subject_column,
                    file=path.name,
                    columns=", ".join(table.column_names),
                    hint=hint,
                )
            )
        table = _as_string(table, subject_column)
    return table


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(HASH_CHUNK_BYTES):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class _Stored:
    sha256: str
    path: str  # relative to the store
    bytes: int
    rows: int


def _store_table(session: Session, store: Path, table: pa.Table, *, import_check: bool) -> _Stored:
    """Write `table` as Parquet into the store under the SHA-256 of the file's bytes. The same content gives the
    same file: when it is already there, the new copy is dropped. With `import_check`, content that an erasure
    purged is refused before it reaches the store."""
    tmp_dir = store / "tmp"
    tmp_dir.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(dir=tmp_dir, suffix=".parquet")
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        pq.write_table(table, tmp)
        sha = _sha256_file(tmp)
        if import_check:
            _refuse_purged_content(session, sha)
        stored = _Stored(sha, f"sha256/{sha[:2]}/{sha}.parquet", tmp.stat().st_size, table.num_rows)
        final = store / stored.path
        if not final.exists():
            final.parent.mkdir(parents=True, exist_ok=True)
            tmp.chmod(STORE_FILE_MODE)
            os.replace(tmp, final)
        return stored
    finally:
        tmp.unlink(missing_ok=True)


def _refuse_purged_content(session: Session, sha: str) -> None:
    purged = session.scalar(
        select(DatasetVersion).where(DatasetVersion.sha256 == sha, DatasetVersion.purged_at.is_not(None)).limit(1)
    )
    if purged is not None:
        raise PolicyViolation(
            "LGPD Art. 18 VI",
            Msg(
                "this content (sha256 {sha}…) was purged from the store by an erasure; importing it again would "
                "restore erased subjects' data. To fix: import the data without the erased subjects' rows.",
                sha=sha[:12],
            ),
        )


# ------------------------------------------------------------------------------------------------- registration


@dataclass
class Registered:
    dataset: Dataset
    version: DatasetVersion
    cpf_findings: list[ColumnFinding]
    warnings: list[str]
    unchanged: bool = False  # new_version on content identical to the latest version: no version was made


def get_dataset(session: Session, name: str) -> Dataset:
    ds = session.scalar(select(Dataset).where(Dataset.name == name))
    if ds is None:
        names = list(session.scalars(select(Dataset.name)))
        close = difflib.get_close_matches(name, names, n=1)
        hint = Msg("Did you mean '{name}'? ", name=close[0]) if close else ""
        raise TreinoError(Msg("Unknown dataset '{name}'. {hint}See 'treino data list'.", name=name, hint=hint))
    return ds


def versions(session: Session, name: str) -> list[DatasetVersion]:
    """Every version of dataset `name`, oldest first (purged ones included: their hashes are the record)."""
    ds = get_dataset(session, name)
    return list(
        session.scalars(
            select(DatasetVersion).where(DatasetVersion.dataset_id == ds.id).order_by(DatasetVersion.number)
        )
    )


def resolve(session: Session, name: str, number: int | None = None) -> DatasetVersion:
    """Version `number` of dataset `name`, the latest by default."""
    all_versions = versions(session, name)
    if not all_versions:
        raise TreinoError(Msg("Dataset '{name}' has no versions.", name=name))
    if number is None:
        return all_versions[-1]
    for v in all_versions:
        if v.number == number:
            return v
    raise TreinoError(
        Msg(
            "Dataset '{name}' has no version {number} (it has v1 to v{last}).",
            name=name,
            number=number,
            last=all_versions[-1].number,
        )
    )


def _warnings(ds: Dataset, findings: list[ColumnFinding]) -> list[str]:
    """The import's warnings, in English: Msgs, which the API also gives as data (a client's language)."""
    out: list[str] = []
    if findings and not ds.personal_data:
        out.append(
            Msg(
                "'{name}' holds CPFs ({columns}) but is registered as not holding personal data; a CPF identifies a "
                "person (LGPD Art. 5 I). To fix: register it as personal data with its legal basis, or drop the "
                "column (a plain hash of a CPF is not anonymisation: 10^9 candidates are brute-forced in seconds).",
                name=ds.name,
                columns=Joined("; ", [f.describe() for f in findings]),
            )
        )
    if ds.personal_data and ds.subject_column is None:
        out.append(
            Msg(
                "'{name}' holds personal data but has no subject column: erasure and subject reports cannot find its "
                "rows (Art. 18). To fix: register it with --subject-column.",
                name=ds.name,
            )
        )
    if ds.personal_data and ds.retention_days is None:
        out.append(
            Msg("'{name}' holds personal data with no retention period (Art. 15-16). To fix: set one.", name=ds.name)
        )
    return out


def _add_version(
    session: Session, ds: Dataset, stored: _Stored, *, reason: str, actor: str, parent_id: int | None
) -> DatasetVersion:
    last = session.scalar(select(func.max(DatasetVersion.number)).where(DatasetVersion.dataset_id == ds.id))
    version = DatasetVersion(
        dataset_id=ds.id,
        number=(last or 0) + 1,
        sha256=stored.sha256,
        path=stored.path,
        bytes=stored.bytes,
        rows=stored.rows,
        reason=reason[:200],
        parent_id=parent_id,
        created_by=actor,
        created_at=time.time(),
    )
    session.add(version)
    session.flush()
    return version


def register_dataset(
    session: Session,
    store: Path,
    *,
    name: str,
    path: Path,
    allowed_roots: Sequence[Path],
    legal_basis: str | None,
    purposes: Sequence[str],
    personal_data: bool,
    sensitive: bool,
    residency: str = "BR",
    retention_days: int | None = None,
    subject_column: str | None = None,
    actor: str,
    keep_out: KeepOut | None = None,
) -> Registered:
    """Register dataset `name` from the file at `path` (Parquet, CSV or JSONL) as its version 1. `keep_out` takes
    the rows of erased subjects out first (treino.govern.tombstones), from the subject column or, when none was
    given, from the CPF column that becomes it."""
    basis = validate_registration(
        legal_basis=legal_basis,
        purposes=purposes,
        personal_data=personal_data,
        sensitive=sensitive,
        residency=residency,
        retention_days=retention_days,
    )
    if not NAME_RE.match(name):
        raise TreinoError(
            Msg("Dataset name '{name}': use lowercase letters, digits, '.', '_' and '-' (at most 100).", name=name)
        )
    if session.scalar(select(Dataset.id).where(Dataset.name == name)) is not None:
        raise TreinoError(Msg("Dataset '{name}' exists. To fix: add a version of it, or pick another name.", name=name))
    source = _check_root(path, allowed_roots)
    fmt = _format_of(source)
    table = _read(source, fmt, subject_column)
    ds = Dataset(
        name=name,
        format=fmt,
        legal_basis=basis.value,
        purposes=list(dict.fromkeys(p.strip() for p in purposes if p and p.strip())),
        personal_data=personal_data,
        sensitive=sensitive,
        residency=residency,
        retention_days=retention_days,
        subject_column=subject_column,
        created_by=actor,
        created_at=time.time(),
    )
    findings = scan_table(table)
    if keep_out is not None:
        cpf_column = max(findings, key=lambda f: f.valid_cpfs).column if findings else None
        table = keep_out(table, subject_column or cpf_column, name)
    stored = _store_table(session, store, table, import_check=True)
    session.add(ds)
    session.flush()
    version = _add_version(session, ds, stored, reason=f"import {path}", actor=actor, parent_id=None)
    adopted = _adopt_cpf_column(ds, table, findings)
    warnings = _warnings(ds, findings)
    if adopted:
        warnings.append(
            Msg(
                "Its CPF column '{column}' is recorded as the subject column, so erasure and access requests "
                "(Art. 18) reach its rows even though it was registered without one.",
                column=adopted,
            )
        )
    return Registered(ds, version, findings, warnings)


def _adopt_cpf_column(ds: Dataset, table: pa.Table, findings: list[ColumnFinding]) -> str | None:
    """Fail closed: a dataset registered without a subject column but holding CPFs gets the CPF column (the one
    with the most valid CPFs, if it holds text) as its subject column, so no Art. 18 request can miss it."""
    if ds.subject_column is not None or not findings:
        return None
    best = max(findings, key=lambda f: f.valid_cpfs)
    if not pa.types.is_string(table.schema.field(best.column).type):
        return None
    ds.subject_column = best.column
    return best.column


def new_version(
    session: Session,
    store: Path,
    *,
    name: str,
    path: Path,
    allowed_roots: Sequence[Path],
    actor: str,
    reason: str | None = None,
    keep_out: KeepOut | None = None,
) -> Registered:
    """Re-import dataset `name` from `path`: a new version if the content differs from the latest one (after
    `keep_out` took the rows of erased subjects out)."""
    ds = get_dataset(session, name)
    source = _check_root(path, allowed_roots)
    fmt = _format_of(source)
    table = _read(source, fmt, ds.subject_column)
    if keep_out is not None:
        table = keep_out(table, ds.subject_column, name)
    latest = resolve(session, name)
    findings = scan_table(table)
    stored = _store_table(session, store, table, import_check=True)
    if stored.sha256 == latest.sha256 and latest.purged_at is None:
        return Registered(ds, latest, findings, _warnings(ds, findings), unchanged=True)
    ds.format = fmt
    version = _add_version(session, ds, stored, reason=reason or f"import {path}", actor=actor, parent_id=latest.id)
    return Registered(ds, version, findings, _warnings(ds, findings))


# ------------------------------------------------------------------------------------------------ subject search


def _holds_cpfs(name: str, column: pa.ChunkedArray) -> bool:
    return scan_column(name, column, SUBJECT_SCAN_ROWS) is not None


def _normalised_cpfs(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """Digits only, zero-padded to 11: '063.469.421-90', '06346942190' and 6346942190 all give '06346942190'."""
    column = pc.replace_substring(column, ".", "")
    column = pc.replace_substring(column, "-", "")
    column = pc.utf8_trim_whitespace(column)
    return pc.utf8_lpad(column, width=11, padding="0")


def _subject_mask(name: str, column: pa.ChunkedArray, subject_id: str) -> pa.ChunkedArray:
    """True on the subject's rows, False elsewhere (null ids included). When the column holds CPFs, both sides are
    compared as digits, so the id matches whatever mask the data or the request used."""
    if _holds_cpfs(name, column):
        wanted = cpf_digits(subject_id).zfill(11)
        column = _normalised_cpfs(column)
    else:
        wanted = subject_id.strip()
    return pc.fill_null(pc.equal(column, pa.scalar(wanted, pa.string())), False)


def _count(mask: pa.ChunkedArray) -> int:
    return int(pc.sum(mask).as_py() or 0)


def _live_versions(session: Session, store: Path, ds: Dataset) -> list[DatasetVersion]:
    """The dataset's versions whose bytes are still in the store, oldest first."""
    rows = session.scalars(
        select(DatasetVersion)
        .where(DatasetVersion.dataset_id == ds.id, DatasetVersion.purged_at.is_(None))
        .order_by(DatasetVersion.number)
    )
    return [v for v in rows if version_path(store, v).exists()]


def _searchable(session: Session, dataset: str | None) -> tuple[list[Dataset], list[str]]:
    if dataset is not None:
        candidates = [get_dataset(session, dataset)]
    else:
        candidates = list(session.scalars(select(Dataset).order_by(Dataset.name)))
    with_column = [d for d in candidates if d.subject_column]
    without = [d.name for d in candidates if not d.subject_column and d.personal_data]
    return with_column, without


@dataclass(frozen=True)
class ModelUse:
    model_id: int
    job_id: int
    kind: str  # "checkpoint" or "final"
    dataset: str
    version: int


def _models_of(session: Session, version_ids: dict[int, tuple[str, int]]) -> tuple[list[ModelUse], list[int]]:
    """The models and jobs that read any of these versions (JobDataset is the lineage edge)."""
    if not version_ids:
        return [], []
    ids = list(version_ids)
    jobs = sorted(set(session.scalars(select(JobDataset.job_id).where(JobDataset.version_id.in_(ids)))))
    rows = session.execute(
        select(Model, JobDataset.version_id)
        .join(JobDataset, JobDataset.job_id == Model.job_id)
        .where(JobDataset.version_id.in_(ids))
        .order_by(Model.id, JobDataset.version_id)
    )
    uses = [ModelUse(m.id, m.job_id, m.kind, *version_ids[vid]) for m, vid in rows]
    return uses, jobs


# ---------------------------------------------------------------------------------------------------- erasure


@dataclass(frozen=True)
class PurgedVersion:
    number: int
    sha256: str  # kept in dataset_versions; the bytes are gone
    subject_rows: int


@dataclass(frozen=True)
class ErasedDataset:
    dataset: str
    purged: list[PurgedVersion]
    new_version: int | None  # None when the latest version did not hold the subject (only older ones did)
    new_sha256: str | None
    rows_removed: int  # from the latest version


@dataclass
class ErasureResult:
    erasure_id: int
    datasets: list[ErasedDataset]
    models: list[ModelUse]  # now marked with erasure_id
    job_ids: list[int]  # every job that read an affected version: candidates for retraining
    searched: list[str]  # dataset names searched
    unsearched: list[str] = field(default_factory=list)  # personal data with no subject column: not searchable
    deleted_files: list[str] = field(default_factory=list)  # store paths removed from disk

    @property
    def rows_removed(self) -> int:
        return sum(d.rows_removed for d in self.datasets)

    @property
    def model_ids(self) -> list[int]:
        return sorted({m.model_id for m in self.models})

    @property
    def found(self) -> bool:
        return bool(self.datasets)

    def text(self) -> str:
        lines = []
        if not self.found:
            lines.append(
                f"no records: the subject is in no stored version of {len(self.searched)} searched dataset(s)"
                + (f" ({', '.join(self.searched)})" if self.searched else "")
                + "; nothing was erased."
            )
        for d in self.datasets:
            purged = ", ".join(f"v{p.number} ({p.sha256[:12]}…, {p.subject_rows} rows)" for p in d.purged)
            new = f"new version v{d.new_version} without {d.rows_removed} row(s); " if d.new_version else ""
            lines.append(f"{d.dataset}: {new}purged {purged}")
        if self.models:
            lines.append(f"marked {len(self.model_ids)} model(s) {self.model_ids} of job(s) {self.job_ids}")
        elif self.job_ids:
            lines.append(f"job(s) {self.job_ids} read the erased versions (no models recorded)")
        if self.unsearched:
            lines.append(f"not searchable (personal data, no subject column): {', '.join(self.unsearched)}")
        return "\n".join(lines)

    def report(self) -> dict[str, Any]:
        """The JSON report (Erasure.report): names, numbers and hashes; never the subject id."""
        return {
            "found": self.found,
            "rows_removed": self.rows_removed,
            "datasets": [
                {
                    "dataset": d.dataset,
                    "purged": [{"version": p.number, "sha256": p.sha256, "rows": p.subject_rows} for p in d.purged],
                    "new_version": d.new_version,
                    "new_sha256": d.new_sha256,
                    "rows_removed": d.rows_removed,
                }
                for d in self.datasets
            ],
            "models": self.model_ids,
            "jobs": self.job_ids,
            "searched": self.searched,
            "unsearched": self.unsearched,
            "text": self.text(),
        }


def open_erasure(
    session: Session, *, subject_pseudonym: str, dataset: str | None, requested_by: str, now: float | None = None
) -> Erasure:
    """The Erasure row for a request, with its Art. 19 deadline (15 days); erase_subject then fills its report."""
    now = time.time() if now is None else now
    erasure = Erasure(
        subject_pseudonym=subject_pseudonym,
        dataset=dataset,
        requested_by=requested_by,
        requested_at=now,
        deadline_at=now + ERASURE_DEADLINE_S,
        report={},
    )
    session.add(erasure)
    session.flush()
    return erasure


@dataclass(frozen=True)
class ScannedVersion:
    """One version as an erasure's scan found it: the subject's rows in it and, for the latest version when it holds
    the subject, the version without them, already written to the store (`stored`)."""

    rows: int
    stored: _Stored | None = None


# What scan_erasure found, by version id: the file work of an erasure, done before its write transaction
ErasureScan = dict[int, ScannedVersion]


def scan_erasure(session: Session, store: Path, *, subject_id: str, dataset: str | None) -> ErasureScan:
    """The slow part of erase_subject (read every live version, match the subject, write the latest one without the
    subject's rows to the store), done in a read-only session before the erasure's transaction, so that the
    transaction holds the database (SQLite's one write lock, the audit chain) for its updates only, not for seconds
    per GB of Parquet. Versions are immutable, so what it found stays true; a version added in between is scanned
    again inside the transaction. The files it writes are content-addressed: one no committed version points to is
    the caller's to delete (drop_unused_files)."""
    scan: ErasureScan = {}
    targets, _ = _searchable(session, dataset)
    for ds in targets:
        live = _live_versions(session, store, ds)
        if live:
            latest = resolve(session, ds.name)
            for v in live:
                scan[v.id] = _scan_version(session, store, ds, v, subject_id, latest=v.id == latest.id)
    return scan


def _scan_version(
    session: Session, store: Path, ds: Dataset, v: DatasetVersion, subject_id: str, *, latest: bool
) -> ScannedVersion:
    assert ds.subject_column is not None
    if not latest:
        column = pq.read_table(version_path(store, v), columns=[ds.subject_column]).column(0)
        return ScannedVersion(_count(_subject_mask(ds.subject_column, column, subject_id)))
    table = pq.read_table(version_path(store, v))
    mask = _subject_mask(ds.subject_column, table.column(ds.subject_column), subject_id)
    removed = _count(mask)
    if not removed:
        return ScannedVersion(0)
    return ScannedVersion(removed, _store_table(session, store, table.filter(pc.invert(mask)), import_check=False))


def drop_unused_files(session: Session, store: Path, scan: ErasureScan) -> list[str]:
    """The files `scan` wrote that no version points to (its erasure failed, or a version came in between), deleted.
    Run it in a transaction that holds the audit chain (AuditLog.hold_chain), as every erasure's does: another
    erasure that scanned the same content (the same subject again) then has either committed its version, which
    keeps the file, or not yet begun, and its transaction scans again what it finds gone."""
    paths = {s.stored.path for s in scan.values() if s.stored is not None}
    if not paths:
        return []
    used = set(session.scalars(select(DatasetVersion.path).where(DatasetVersion.path.in_(list(paths)))))
    for rel in sorted(paths - used):
        (store / rel).unlink(missing_ok=True)
    return sorted(paths - used)


def _erase_in_dataset(
    session: Session,
    store: Path,
    ds: Dataset,
    subject_id: str,
    *,
    erasure_id: int,
    actor: str,
    scan: ErasureScan,
) -> tuple[list[tuple[DatasetVersion, int]], DatasetVersion | None, int]:
    """The live versions of `ds` that hold `subject_id`, each with its count of the subject's rows; when the latest
    holds the subject, the version written without those rows (reason "erasure #ID") and how many rows it lost.
    What `scan` found is taken as found; a version it does not know is read here."""
    assert ds.subject_column is not None
    live = _live_versions(session, store, ds)
    if not live:
        return [], None, 0
    latest = resolve(session, ds.name)
    held: list[tuple[DatasetVersion, int]] = []
    new: DatasetVersion | None = None
    removed = 0
    for v in live:
        found = scan.get(v.id)
        stale = found is not None and found.stored is not None and not (store / found.stored.path).exists()
        if found is None or stale or (v.id == latest.id and found.rows and found.stored is None):
            # not scanned; or its new file deleted since (another erasure of the subject that failed dropped it)
            found = _scan_version(session, store, ds, v, subject_id, latest=v.id == latest.id)
        if not found.rows:
            continue
        held.append((v, found.rows))
        if v.id == latest.id:
            assert found.stored is not None  # the latest version's scan writes the version without the subject
            removed = found.rows
            reason = f"erasure #{erasure_id}"
            new = _add_version(session, ds, found.stored, reason=reason, actor=actor, parent_id=v.id)
    return held, new, removed


def _mark_models(session: Session, uses: list[ModelUse], erasure_id: int) -> None:
    """Mark every model trained on an erased version: `erasure_id`, unless an earlier erasure marked it already,
    and a note (appended to any earlier one) naming the versions it read."""
    notes: dict[int, list[str]] = {}
    for u in uses:
        notes.setdefault(u.model_id, []).append(f"trained on {u.dataset} v{u.version}, which held the erased subject")
    for model in session.scalars(select(Model).where(Model.id.in_(list(notes)))):
        note = f"erasure #{erasure_id}: " + "; ".join(dict.fromkeys(notes[model.id]))
        if model.erasure_id is None:
            model.erasure_id = erasure_id
        model.erasure_note = f"{model.erasure_note}\n{note}" if model.erasure_note else note


def _unshared_files(session: Session, store: Path, paths: set[str], *, delete_files: bool) -> list[str]:
    """The store paths in `paths` that no live version points to any more, in order; deleted when `delete_files`."""
    unshared: list[str] = []
    for rel in sorted(paths):
        shared = session.scalar(
            select(func.count())
            .select_from(DatasetVersion)
            .where(DatasetVersion.path == rel, DatasetVersion.purged_at.is_(None))
        )
        if not shared:
            if delete_files:  # else the caller deletes them once its transaction has committed
                (store / rel).unlink(missing_ok=True)
            unshared.append(rel)
    return unshared


def erase_subject(
    session: Session,
    store: Path,
    *,
    subject_id: str,
    dataset: str | None,
    actor: str,
    erasure_id: int,
    delete_files: bool = True,
    scan: ErasureScan | None = None,
) -> ErasureResult:
    """Remove every row of `subject_id` from `dataset` (or from every dataset with a subject column).

    For each dataset whose stored versions hold the subject: the latest version, filtered with pyarrow.compute, is
    written as a new version (reason "erasure #ID"); every version that held the subject is marked purged and its
    bytes deleted from the store (unless another live version shares the same bytes); the models of every job that
    read one of those versions get `erasure_id` and a note. The erasure row `erasure_id` must exist (open_erasure);
    its report is filled. Flushes, then deletes the files: commit right after. With `scan` (scan_erasure's, made
    before the transaction), the versions it read are not read again.
    """
    targets, unsearched = _searchable(session, dataset)
    now = time.time()
    erased: list[ErasedDataset] = []
    affected: dict[int, tuple[str, int]] = {}  # version id -> (dataset, number)
    to_delete: set[str] = set()
    for ds in targets:
        held, new, removed = _erase_in_dataset(
            session, store, ds, subject_id, erasure_id=erasure_id, actor=actor, scan=scan or {}
        )
        if not held:
            continue
        for v, _ in held:
            v.purged_at = now
            to_delete.add(v.path)
            affected[v.id] = (ds.name, v.number)
        erased.append(
            ErasedDataset(
                dataset=ds.name,
                purged=[PurgedVersion(v.number, v.sha256, n) for v, n in held],
                new_version=new.number if new else None,
                new_sha256=new.sha256 if new else None,
                rows_removed=removed,
            )
        )
    uses, jobs = _models_of(session, affected)
    _mark_models(session, uses, erasure_id)
    result = ErasureResult(erasure_id, erased, uses, jobs, [d.name for d in targets], unsearched)
    session.flush()
    result.deleted_files.extend(_unshared_files(session, store, to_delete, delete_files=delete_files))
    erasure = session.get(Erasure, erasure_id)
    if erasure is not None:
        erasure.report = result.report()
        session.flush()
    return result


def sweep_purged(session: Session, store: Path) -> list[str]:
    """Delete store files that only purged versions point to: bytes an erasure committed but could not delete
    (the server stopped between its commit and the deletion); and files no version points to at all: a new version
    an erasure's scan wrote (scan_erasure) or an import stored, whose transaction never committed (the server or
    the CLI stopped in between). Run it when nothing else writes to the store (at the server's start). Returns the
    store paths removed."""
    live = set(session.scalars(select(DatasetVersion.path).where(DatasetVersion.purged_at.is_(None))))
    purged = set(session.scalars(select(DatasetVersion.path).where(DatasetVersion.purged_at.is_not(None))))
    on_disk = {p.relative_to(store).as_posix() for p in (store / "sha256").glob("*/*.parquet")}
    removed = []
    for rel in sorted((purged - live) | (on_disk - live - purged)):
        if (store / rel).exists():
            (store / rel).unlink()
            removed.append(rel)
    return removed


# ----------------------------------------------------------------------------------------------- access report


@dataclass(frozen=True)
class Holding:
    dataset: str
    version: int
    sha256: str
    rows: int  # the subject's rows in this version
    legal_basis: str
    purposes: list[str]
    residency: str


@dataclass
class SubjectReport:
    holdings: list[Holding]
    models: list[ModelUse]
    job_ids: list[int]
    searched: list[str]
    unsearched: list[str] = field(default_factory=list)

    @property
    def found(self) -> bool:
        return bool(self.holdings)

    def text(self) -> str:
        """The report in English lines; a Joined of Msgs, which the API also gives as data (a client's language)."""
        lines: list[str]
        if not self.found and self.searched:
            lines = [
                Msg(
                    "no records: the subject is in no stored version of {n} searched dataset(s) ({names}).",
                    n=len(self.searched),
                    names=", ".join(self.searched),
                )
            ]
        elif not self.found:
            lines = [Msg("no records: the subject is in no stored version of {n} searched dataset(s).", n=0)]
        else:
            lines = [
                Msg(
                    "{dataset} v{version}: {rows} row(s); basis {basis}; purposes {purposes}; kept in {residency}",
                    dataset=h.dataset,
                    version=h.version,
                    rows=h.rows,
                    basis=h.legal_basis,
                    purposes=", ".join(h.purposes),
                    residency=h.residency,
                )
                for h in self.holdings
            ]
        for m in self.models:
            lines.append(
                Msg(
                    "model #{id} ({kind}) of job #{job} used {dataset} v{version}",
                    id=m.model_id,
                    kind=m.kind,
                    job=m.job_id,
                    dataset=m.dataset,
                    version=m.version,
                )
            )
        if self.unsearched:
            lines.append(
                Msg("not searchable (personal data, no subject column): {names}", names=", ".join(self.unsearched))
            )
        return Joined("\n", lines)


def subject_report(session: Session, store: Path, subject_id: str, dataset: str | None = None) -> SubjectReport:
    """Art. 18 II: the stored versions that hold `subject_id` (row counts, basis, purposes), and the jobs and
    models that read them. Purged versions are not searched: their bytes are gone."""
    targets, unsearched = _searchable(session, dataset)
    holdings: list[Holding] = []
    found: dict[int, tuple[str, int]] = {}
    for ds in targets:
        assert ds.subject_column is not None
        for v in _live_versions(session, store, ds):
            column = pq.read_table(version_path(store, v), columns=[ds.subject_column]).column(0)
            n = _count(_subject_mask(ds.subject_column, column, subject_id))
            if n:
                holdings.append(Holding(ds.name, v.number, v.sha256, n, ds.legal_basis, ds.purposes, ds.residency))
                found[v.id] = (ds.name, v.number)
    uses, jobs = _models_of(session, found)
    return SubjectReport(holdings, uses, jobs, [d.name for d in targets], unsearched)
