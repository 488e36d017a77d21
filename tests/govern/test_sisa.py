"""SISA training (treino.sisa): the shard/slice assignment and the ensemble, pure; and end to end on a real server,
an erasure that retrains only the shard that held the subject, from its slice checkpoint, with the memorisation
check in the erasure's record."""

from __future__ import annotations

import csv
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import torch
from pydantic import ValidationError

from tests.conftest import Database
from tests.govern.test_lgpd_e2e import DATA, api, ok, setup_people_and_data, wait_final
from tests.server.people import churn_job
from treino import sisa
from treino.errors import JobError
from treino.server.spec import JobSpec, SisaSpec


def test_one_subject_one_shard_one_slice_whatever_the_cpf_formatting() -> None:
    keys = [sisa.subject_key(v) for v in ("063.469.421-90", "6346942190", "06346942190", "111.444.777-35")]
    assert keys[0] == keys[1] == keys[2] != keys[3]
    rows = ["063.469.421-90", "111.444.777-35", "6346942190", "529.982.247-25", "123.456.789-09"] * 40
    assignment = sisa.assign([sisa.subject_key(r) for r in rows], shards=3, slices=4, holdout_buckets=0)
    where = {}
    for k, shard in enumerate(assignment.rows):
        for j, part in enumerate(shard):
            for i in part:
                where.setdefault(sisa.subject_key(rows[i]), set()).add((k, j))
    assert all(len(places) == 1 for places in where.values())  # every subject in exactly one (shard, slice)
    assert sorted(i for shard in assignment.rows for part in shard for i in part) == list(range(len(rows)))
    # Removing one subject moves no other row: the other slices are the same lists (by content).
    kept = [r for r in rows if sisa.subject_key(r) != keys[3]]
    again = sisa.assign([sisa.subject_key(r) for r in kept], shards=3, slices=4, holdout_buckets=0)
    as_keys = lambda a, src: [[sorted(sisa.subject_key(src[i]) for i in p) for p in s] for s in a.rows]  # noqa: E731
    before, after = as_keys(assignment, rows), as_keys(again, kept)
    changed = [(k, j) for k in range(3) for j in range(4) if before[k][j] != after[k][j]]
    assert changed == [(sisa.shard_of(keys[3], 3), sisa.slice_of(keys[3], 4))]
    with pytest.raises(JobError, match="To fix"):
        sisa.assign(["a"], shards=0, slices=1)


def test_keys_of_a_column_and_the_assignment_are_those_the_docstring_defines() -> None:
    """subject_keys (Arrow's compute on ASCII and integer columns) gives subject_key's keys, and assign puts each row
    where treino.sisa's docstring says: d = sha256("treino-sisa:" + key), shard = d[0:8] mod K, slice = d[8:16] mod
    R, held out when d[16:24] mod 20 < holdout_buckets; rows of a part in key order, then row order."""
    import hashlib
    import random

    import pyarrow as pa

    rng = random.Random(7)
    ids = [f"{rng.randrange(10**11):011d}" for _ in range(300)]
    typed = [f"{i[:3]}.{i[3:6]}.{i[6:9]}-{i[9:]}" for i in ids[:100]] + [i.lstrip("0") for i in ids[100:150]]
    texts = [*ids, *typed, "Cliente_42", " AB-cd 9 ", "", "123456789012", "--", *ids[:20]]  # repeats: one subject
    columns = [
        pa.chunked_array([texts[:200], texts[200:]]),
        pa.array(texts, pa.large_string()),
        pa.array([int(i) for i in ids] + [-5, 0]),
        pa.array(["joão.silva", "ÉDER", "a٣b", *ids[:5]]),  # not ASCII: value by value
        pa.array(["a", None, "b"]),  # nulls: value by value ("None" is a key, as str(None) makes it)
    ]
    for column in columns:
        assert sisa.subject_keys(column) == [sisa.subject_key(v) for v in column.to_pylist()]

    keys = sisa.subject_keys(pa.array(texts))
    shards, slices, holdout_buckets = 3, 4, 2
    want: list[list[list[int]]] = [[[] for _ in range(slices)] for _ in range(shards)]
    held: list[int] = []
    for i in sorted(range(len(keys)), key=lambda i: (keys[i], i)):
        d = hashlib.sha256(f"treino-sisa:{keys[i]}".encode()).digest()
        if int.from_bytes(d[16:24], "big") % 20 < holdout_buckets:
            held.append(i)
        else:
            want[int.from_bytes(d[0:8], "big") % shards][int.from_bytes(d[8:16], "big") % slices].append(i)
    got = sisa.assign(keys, shards, slices, holdout_buckets)
    assert (got.rows, got.holdout) == (want, held) and held
    # The keys as Arrow gives them (subject_key_array: string, or large_string for such a column), in chunks or not
    for column in (pa.array(keys, pa.large_string()), pa.chunked_array([keys[:100], keys[100:]]), pa.array(texts)):
        arrow = sisa.assign(sisa.subject_key_array(column), shards, slices, holdout_buckets)
        assert (arrow.rows, arrow.holdout) == (want, held)
    arrow = sisa.assign(pa.chunked_array([keys[:100], keys[100:]], pa.large_string()), shards, slices, holdout_buckets)
    assert (arrow.rows, arrow.holdout) == (want, held)


def test_the_ensemble_averages_probabilities_or_votes() -> None:
    probs = [torch.tensor([0.9, 0.2, 0.6]), torch.tensor([0.7, 0.4, 0.3]), torch.tensor([0.8, 0.9, 0.2])]
    assert torch.allclose(sisa.aggregate(probs), torch.tensor([0.8, 0.5, 1.1 / 3]))
    assert torch.allclose(sisa.aggregate(probs, how="vote"), torch.tensor([1.0, 1 / 3, 1 / 3]))
    multi = [torch.tensor([[0.6, 0.4]]), torch.tensor([[0.3, 0.7]]), torch.tensor([[0.2, 0.8]])]
    assert sisa.aggregate(multi, how="vote").argmax(-1).tolist() == [1]
    with pytest.raises(JobError, match="To fix"):
        sisa.aggregate(probs, how="median")


SHARDS, SLICES = 3, 2


def test_an_erasure_retrains_only_the_subjects_shard_from_its_slice(
    start_server: Callable[..., Any], database: Database
) -> None:
    if database.kind != "sqlite":
        pytest.skip(
            "two training jobs (~45 s); the erasure record is written as test_lgpd_e2e checks on both: [sqlite] runs it"
        )
    server = start_server(extra_args=["--site", "eveo-sp1", "--import-root", str(DATA)])
    tokens = setup_people_and_data(server)
    spec = {**churn_job("churn-sisa", steps=4), "sisa": {"shards": SHARDS, "slices": SLICES}}
    first = wait_final(
        server, tokens["eng1"], ok(api(server, tokens["eng1"], "POST", "/api/v1/jobs", json=spec), 201)["id"]
    )
    logs = api(server, tokens["eng1"], "GET", f"/api/v1/jobs/{first['id']}/logs").json()["text"]
    assert first["state"] == "succeeded", logs
    assert "retrained=[0, 1, 2] from=[0, 0, 0]" in logs
    (final,) = [m for m in ok(api(server, tokens["dpo1"], "GET", "/api/v1/models"))["models"] if m["kind"] == "final"]
    assert Path(final["path"]).name == "sisa"

    # A customer who is trained on (not held out), in the last slice: retraining starts from slice 1.
    with (DATA / "clientes.csv").open() as f:
        customer = next(
            r["cpf"]
            for r in csv.DictReader(f)
            if not sisa.held_out(sisa.subject_key(r["cpf"])) and sisa.slice_of(sisa.subject_key(r["cpf"]), SLICES) == 1
        )
    shard = sisa.shard_of(sisa.subject_key(customer), SHARDS)
    body = {"subject": customer, "retrain": True}
    report = ok(api(server, tokens["dpo1"], "POST", "/api/v1/erasures", json=body), 201)
    (retrain_id,) = report["retrain_jobs"]
    # Until the retraining ends, the checkpoints it continues from cannot be deleted under it.
    held = api(server, tokens["dpo1"], "POST", f"/api/v1/models/{final['id']}/delete")
    assert held.status_code == 409 and f"where job {retrain_id} continues from" in held.text, held.text
    retrained = wait_final(server, tokens["eng1"], retrain_id)
    logs = api(server, tokens["eng1"], "GET", f"/api/v1/jobs/{retrain_id}/logs").json()["text"]
    assert retrained["state"] == "succeeded", logs
    assert retrained["continues_from"] == first["id"]
    starts = [SLICES] * SHARDS
    starts[shard] = 1  # the shard's slice-0 checkpoint reused, slice 1 retrained; the other shards reused whole
    assert f"retrained=[{shard}] from={starts}" in logs, logs
    assert "rows=1999" in logs
    # The new ensemble is a model of the new version only, not marked by the erasure.
    new = [m for m in ok(api(server, tokens["dpo1"], "GET", "/api/v1/models"))["models"] if m["job"] == retrain_id]
    assert new and all(m["affected_by_erasure"] is None for m in new if m["kind"] == "final")
    assert {v["version"] for m in new for v in m["trained_on"]} == {2}
    # The erased rows it was given for the check are gone once it ended.
    assert not list((server.data_dir / "jobs" / str(retrain_id)).glob("erased-rows-*"))

    # The memorisation check: in the audit chain, and in the subject report's erasure.
    exported = api(server, tokens["dpo1"], "GET", "/api/v1/audit/export").text
    (check,) = [json.loads(line) for line in exported.splitlines() if '"erasure.memorisation"' in line]
    detail = check["detail"]
    assert detail["erasure"] == report["erasure"] and detail["job"] == retrain_id and detail["erased_rows"] == 1
    for side in ("before", "after"):
        figures = detail[side]
        assert figures["gap"] == pytest.approx(figures["erased_loss"] - figures["holdout_loss"])
    assert "does not prove" in detail["proves"]
    after = ok(api(server, tokens["dpo1"], "POST", "/api/v1/subjects/report", json={"subject": customer}))
    (erasure,) = after["erasures"]
    assert erasure["memorisation"][0]["after"] == detail["after"]
    assert ok(api(server, tokens["dpo1"], "GET", "/api/v1/audit/verify"))["ok"]
    with httpx.Client(base_url=server.url, headers={"Accept-Language": "en"}, timeout=30) as client:
        assert client.post("/login", data={"token": tokens["dpo1"], "next": "/"}).status_code == 303
        page = client.get("/data").text
    assert re.search(r"after gap -?\d+\.\d{3}", page), page[-3000:]


def test_the_spec_takes_sisa_shards_and_slices_and_refuses_nonsense() -> None:
    base = {"name": "j", "command": ["true"]}
    assert JobSpec.model_validate({**base, "sisa": {"shards": 3, "slices": 4}}).sisa == SisaSpec(shards=3, slices=4)
    for bad in ({"shards": 0}, {"shards": 3, "slices": 0}, {"shards": sisa.SHARDS_MAX + 1}, {"shards": "3"}, {}):
        with pytest.raises(ValidationError):
            JobSpec.model_validate({**base, "sisa": bad})


def test_keys_of_values_with_many_kinds_of_punctuation_are_subject_keys() -> None:
    """subject_key_array strips punctuation kind by kind (literal replaces) up to a limit, then by one regex: past
    that limit, on empty and all-punctuation values, and on underscores ([\\W_] drops them), the keys are
    subject_key's."""
    import pyarrow as pa

    marks = "._-/ ,;:+*#()[]"  # more kinds than the literal replaces take
    assert len(marks) > sisa._LITERAL_STRIPS_MAX
    values = [f"{m}063{m}469{m}421{m}90" for m in marks] + ["", "--", "_a_B_", "x" + marks + "9", "ABC", "00042"]
    for column in (pa.array(values), pa.chunked_array([values[:5], values[5:]]), pa.array(values[-3:])):
        assert sisa.subject_key_array(column).to_pylist() == [sisa.subject_key(v) for v in column.to_pylist()]


def test_a_slice_digest_is_its_rows_in_key_order_as_one_ipc_stream_whatever_the_chunks() -> None:
    """treino.sisa's docstring: a slice's digest is sha256 of its rows, every column, in key order (then row order),
    as one Arrow IPC stream. Computed here from the rows as Python values, against the plan's digests of a table
    read in several chunks (as a Parquet file's row groups are): a manifest written from one reading still matches
    another."""
    import hashlib

    import pyarrow as pa

    table = _people(120)
    chunked = pa.Table.from_batches(table.to_batches(max_chunksize=37))
    assert chunked.column("cpf").num_chunks > 1
    assignment = sisa.assign(sisa.subject_key_array(chunked.column("cpf")), 3, 2)
    got = sisa.slice_digests(chunked, assignment)
    records = table.to_pylist()
    for k in range(3):
        for j in range(2):
            part = sorted(
                (i for i, r in enumerate(records) if _place(r["cpf"], 3, 2) == (k, j) and not _held(r["cpf"])),
                key=lambda i: (sisa.subject_key(records[i]["cpf"]), i),
            )
            rows = pa.Table.from_pylist([records[i] for i in part], schema=table.schema)
            sink = pa.BufferOutputStream()
            with pa.ipc.new_stream(sink, rows.schema) as writer:
                writer.write_table(rows)
            assert got[k][j] == hashlib.sha256(sink.getvalue()).hexdigest(), (k, j)


SHARDS_LOCAL, SLICES_LOCAL = 3, 4


def test_an_erasure_reuses_only_slices_whose_rows_are_unchanged(tmp_path: Path, local_run: Any) -> None:
    """Local runs of the SDK: a first SISA training, then three retrainings, each on a fresh copy of its folder and
    on the data read in other chunks. Each shard model here is the list of rows it was trained on (its checkpoints
    chain slice after slice), so a kept checkpoint that saw a row no longer in the data shows. Erasing one subject
    retrains its shard from its slice; a row changed in an earlier slice of that shard, or in another shard, makes
    the plan retrain from that slice too: every reused slice is checked, not only the erased subject's."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from treino import job

    table = _people(400)
    base = local_run.checkpoint_dir
    _train_rows(local_run, pa.Table.from_batches(table.to_batches(max_chunksize=150)))
    cpfs = table.column("cpf").to_pylist()
    trained = [c for c in cpfs if not _held(c)]
    erased = next(c for c in trained if _place(c, SHARDS_LOCAL, SLICES_LOCAL)[1] == 2)
    k = _place(erased, SHARDS_LOCAL, SLICES_LOCAL)[0]
    same_shard = next(c for c in trained if _place(c, SHARDS_LOCAL, SLICES_LOCAL) == (k, 0))
    other = next(c for c in trained if _place(c, SHARDS_LOCAL, SLICES_LOCAL) == ((k + 1) % SHARDS_LOCAL, 1))

    def retrain(name: str, changed: str | None) -> tuple[list[int], list[int]]:
        folder = tmp_path / name
        shutil.copytree(base, folder)
        kept = table.filter(pc.invert(pc.equal(table.column("cpf"), erased)))
        if changed is not None:  # one row of a subject rectified: its x is a value no row had
            x = pc.if_else(pc.equal(kept.column("cpf"), changed), pc.add(kept.column("x"), 10**6), kept.column("x"))
            kept = kept.set_column(kept.schema.get_field_index("x"), "x", x)
        plan = _train_rows(job.init(checkpoint_dir=folder), kept.combine_chunks())
        for shard in plan.shards:  # every shard model saw exactly its rows of the new data, nothing else
            saw = plan.final_state(shard)["x"].tolist()
            assert sorted(saw) == sorted(kept.take(shard.rows).column("x").to_pylist()), shard.index
        return plan.reused_from["retrained_shards"], plan.reused_from["start_slices"]

    starts = [SLICES_LOCAL] * SHARDS_LOCAL
    starts[k] = 2
    assert retrain("erased", None) == ([k], starts)
    starts[k] = 0
    assert retrain("erased-and-same-shard-changed", same_shard) == ([k], starts)
    starts[k], starts[(k + 1) % SHARDS_LOCAL] = 2, 1
    assert retrain("erased-and-other-shard-changed", other) == (sorted([k, (k + 1) % SHARDS_LOCAL]), starts)


def _people(subjects: int) -> Any:
    """`subjects` people with two rows each (x: distinct per row), their CPF typed with punctuation in one row and
    without it (nor its leading zeros) in the other: one subject, one key."""
    import random

    import pyarrow as pa

    rng = random.Random(11)
    ids = [f"{rng.randrange(10**10):011d}" for _ in range(subjects)]
    cpfs = [f"{i[:3]}.{i[3:6]}.{i[6:9]}-{i[9:]}" for i in ids] + [i.lstrip("0") for i in ids]
    return pa.table({"cpf": cpfs, "x": list(range(len(cpfs)))})


def _held(cpf: str) -> bool:
    return sisa.held_out(sisa.subject_key(cpf))


def _place(cpf: str, shards: int, slices: int) -> tuple[int, int]:
    key = sisa.subject_key(cpf)
    return sisa.shard_of(key, shards), sisa.slice_of(key, slices)


def _train_rows(run: Any, table: Any) -> sisa.SisaPlan:
    """A SISA training whose shard model is the x of the rows it was trained on, slice after slice."""
    plan = sisa.SisaPlan.open(run, table, subject_column="cpf", shards=SHARDS_LOCAL, slices=SLICES_LOCAL)
    assert plan is not None
    for shard in plan.shards:
        state = plan.restore(shard)
        for j in range(shard.start_slice, plan.slices):
            seen = [] if state is None else state["x"].tolist()
            new = table.take(shard.slice_rows[j]).column("x").to_pylist()
            state = {"x": torch.tensor(seen + new, dtype=torch.int64)}
            plan.save(shard, j, state)
    plan.finish()
    return plan
