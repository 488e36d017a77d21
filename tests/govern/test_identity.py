"""One canonical identifier: every spelling of a CPF gives one pseudonym; migration 0009_identity ties the pseudonyms
an older treino made to the canonical ones with subject.alias records, on a real database (SQLite and PostgreSQL)
migrated by Alembic, and the chain still verifies."""

from __future__ import annotations

import hashlib
import hmac
import io
import json
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
from alembic import command
from alembic.config import Config
from sqlalchemy import MetaData, Table, insert, select
from sqlalchemy.orm import Session

from tests.conftest import Database
from treino.govern.aliases import subject_pseudonyms
from treino.govern.audit import AuditLog, export, pseudonym, verify
from treino.govern.identity import canonical_id, legacy_ids
from treino.govern.models import Erasure
from treino.server import db
from treino.server.db import make_engine, migrate

KEY = b"k" * 32
FULL, BARE = "063.469.421-90", "6346942190"  # one CPF: typed in full, and as a numeric column gave it back


def test_every_spelling_of_a_cpf_has_one_canonical_form_and_one_pseudonym() -> None:
    assert {canonical_id(s) for s in (FULL, BARE, " 06346942190 ", "063469421-90")} == {"06346942190"}
    assert pseudonym(KEY, FULL) == pseudonym(KEY, BARE)
    assert canonical_id("0034567890") == "0034567890"  # 10 digits that are no CPF once padded: left as typed
    assert canonical_id(" cliente-17 ") == "cliente-17"
    assert legacy_ids(FULL) == [BARE]
    assert legacy_ids("123.456.789-09") == []  # no leading zero: every spelling gave the canonical form


def _old_pseudonym(raw: str) -> str:
    """What treino up to revision 0008 keyed: a bare number of 10 digits was no CPF to it, so it kept no zero."""
    return hmac.new(KEY, raw.encode(), hashlib.sha256).hexdigest()


def test_old_pseudonyms_are_found_by_one_subject_query_after_0009_and_the_chain_verifies(
    tmp_path: Path, database: Database
) -> None:
    engine = make_engine(database.new_url() or f"sqlite:///{tmp_path}/t.db")
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(db.__file__).with_name("migrations")))
    store = tmp_path / "store"
    (store / "v").mkdir(parents=True)
    # The state an older server left: a dataset whose CPF column lost its leading zeros, records about the subject
    # under both spellings' pseudonyms, and an erasure requested under the bare one.
    pq.write_table(pa.table({"cpf": [BARE, "12345678909"], "plan": ["a", "b"]}), store / "v" / "1.parquet")
    old, canonical = _old_pseudonym(BARE), _old_pseudonym("06346942190")
    assert old != canonical and canonical == pseudonym(KEY, FULL)
    with engine.begin() as c:
        cfg.attributes["connection"] = c
        command.upgrade(cfg, "0008_quotas")
        t = {name: Table(name, MetaData(), autoload_with=c) for name in ("datasets", "dataset_versions", "erasures")}
        now = time.time()
        dataset = {"name": "clientes", "format": "parquet", "legal_basis": "art7-v", "purposes": ["churn"]}
        dataset |= {"personal_data": True, "sensitive": False, "residency": "BR", "retention_days": 365}
        dataset |= {"subject_column": "cpf", "created_by": "ana", "created_at": now}
        ds_id = c.execute(insert(t["datasets"]).values(**dataset)).inserted_primary_key[0]
        version = {"dataset_id": ds_id, "number": 1, "sha256": "0" * 64, "path": "v/1.parquet", "bytes": 1, "rows": 2}
        c.execute(insert(t["dataset_versions"]).values(**version, reason="import", created_by="ana", created_at=now))
        erasure = {"subject_pseudonym": old, "requested_by": "dpo", "requested_at": now, "deadline_at": now + 1}
        c.execute(insert(t["erasures"]).values(**erasure, report={}))
    with Session(engine) as s, s.begin():
        audit = AuditLog(KEY)
        audit.append(s, actor="dpo", action="subject.report", subject=old, detail={"found": True})
        audit.append(s, actor="dpo", action="subject.report", subject=canonical, detail={"found": True})
        audit.checkpoint(s)

    migrate(engine, key=KEY, store=store)
    migrate(engine, key=KEY, store=store)  # a second run ties nothing twice

    with Session(engine) as s:
        assert verify(s, KEY).ok
        aliases = s.scalars(select(Erasure.subject_pseudonym)).all()
        assert aliases == [canonical]  # the erasure row re-pseudonymised (it is not part of the chain)
        for typed in (FULL, BARE):
            assert subject_pseudonyms(s, KEY, typed)[0] == canonical
            out = io.StringIO()
            assert export(s, out, subject=canonical) == 3  # both old records and the alias record
        records = [json.loads(line) for line in out.getvalue().splitlines()]
        assert [(r["action"], r["subject"]) for r in records] == [
            ("subject.report", old),
            ("subject.report", canonical),
            ("subject.alias", canonical),
        ]
        assert records[2]["detail"]["old_pseudonym"] == old and records[2]["actor"] == "treino"
    engine.dispose()
