"""SISA training (Bourtoule et al., "Machine Unlearning", IEEE S&P 2021): Sharded, Isolated, Sliced, Aggregated.

A job whose spec has `sisa: {shards: K, slices: R}` gets TREINO_SISA=K:R in its environment. Its script reads its
dataset as usual and asks for the plan:

    from treino import job, sisa

    run = job.init()
    table = run.dataset("clientes", as_table=True)
    plan = sisa.SisaPlan.open(run, table, subject_column="cpf")   # K, R from TREINO_SISA (or shards=, slices=)
    for shard in plan.shards:
        state = plan.restore(shard)                 # the reusable slice checkpoint (or None): trains from there
        for j in range(shard.start_slice, plan.slices):
            rows = shard.rows_through(j)            # slices 0..j of the shard: each slice adds rows
            state = train(state, table.take(rows))  # the model of this shard only: isolated from the others
            plan.save(shard, j, state)              # the checkpoint at the slice boundary
    plan.finish()                                   # the folder `sisa/` registered as the job's model
    probs = sisa.aggregate([predict(plan.final_state(s), x) for s in plan.shards])   # the ensemble

Assignment is deterministic and content-based, so that an erasure moves no other row:
- a row's key is its subject column's value in one canonical form (`subject_key`: letters and digits only, lower
  case; an all-digit value of at most 11 digits zero-padded to 11, so a CPF typed with or without dots and leading
  zero is one key); one subject's rows all fall in one shard and one slice;
- d = sha256("treino-sisa:" + key); shard = d[0:8] mod K, slice = d[8:16] mod R (as big-endian integers); rows
  whose d[16:24] mod HOLDOUT_BUCKETS is under `holdout_buckets` are held out of training, for the ensemble's
  accuracy and the memorisation check (never trained on, in any shard).

Checkpoints: `{checkpoint_dir}/sisa/shard-{k:03d}/slice-{j:04d}.pt` (atomic), and `sisa/manifest.json`: K, R and,
per shard and slice, a sha256 of the slice's rows (every column of every row, in key order, as Arrow IPC). The folder is
registered as one checkpoint (run.register_checkpoint) at `finish()`, so the server's lineage records it, and a
continued job (an erasure's retraining: treino.server.governance) starts with it seeded in its own folder. Then
`SisaPlan.open` compares each slice's rows with the manifest: a shard whose slices are all unchanged is reused as is;
a shard whose slice j changed (the erased subject's rows left it) restarts from its slice j-1 checkpoint, trained on
slices 0..j-1 only, whose rows are all still in the data (checked by their digests); the checkpoints of slices j..R-1
are deleted first. So an erasure retrains only the shards that held the subject, from the slice before its first
row: about 1/K of a full retrain, less when the subject sits in a late slice.

What it does not do: the job decides what it reuses, by the digests above; the server trusts the SDK here (it does
not load models). A script that trains shards on anything but `rows_through(j)` breaks the guarantee.
"""

from __future__ import annotations

import hashlib
import io
import json
import math
import os
import re
import shutil
import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treino.errors import JobError
from treino.job import _write_atomic

if TYPE_CHECKING:
    import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker
    import torch

    from treino.job import Run

ENV_SISA = "TREINO_SISA"  # "K:R", set by the server from the spec's `sisa`
SISA_DIR = "sisa"  # in the checkpoint folder
MANIFEST_NAME = "manifest.json"
HOLDOUT_BUCKETS = 20  # rows are split in this many buckets by a hash of their key; ...
DEFAULT_HOLDOUT_BUCKETS = 2  # ... this many are held out of training (10 %)
ERASED_ROWS_NAME = "erased-rows-{dataset}.parquet"  # in the job's folder: the erased subject's rows, for the check
MEMORISATION_NAME = "memorisation.json"  # in the checkpoint folder: the check's figures, read by the server
SHARDS_MAX = 64
_NOT_ALNUM = re.compile(r"[\W_]+")  # what subject_key drops: anything but letters and digits
_NOT_ALNUM_ASCII = re.compile(r"[^A-Za-z0-9]")  # the same on ASCII
_LITERAL_STRIPS_MAX = 8  # kinds of punctuation a key column's values are stripped of by literal replaces
_CPF_DIGITS = 11  # an all-digit key of at most this many digits is zero-padded to it (a CPF without its zeros)
_DIGEST_PREFIX = b"treino-sisa:"
_THREE_U64 = struct.Struct(">3Q")  # a digest's bytes 0-24 as three big-endian integers: shard, slice, holdout bucket
SLICES_MAX = 1000


def subject_key(value: Any) -> str:
    """One canonical form of a subject identifier: letters and digits, lower case; all digits and at most 11 of
    them (a CPF, typed with or without punctuation and its leading zeros) zero-padded to 11."""
    text = _NOT_ALNUM.sub("", str(value)).lower()
    if text.isdigit() and len(text) <= _CPF_DIGITS:
        return text.zfill(_CPF_DIGITS)
    return text


def subject_keys(column: pa.ChunkedArray | pa.Array) -> list[str]:
    """`subject_key` of every value of an Arrow column, in order: the same keys as `[subject_key(v) for v in
    column.to_pylist()]` (as Python strings; `subject_key_array` keeps them in Arrow)."""
    keys: list[str] = subject_key_array(column).to_pylist()
    return keys


def subject_key_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """`subject_key` of every value of an Arrow column, as one Arrow string array. A column of ASCII strings or of
    integers, without nulls (CPFs, customer ids), is keyed by Arrow's compute functions, where Python's per-value
    loop costs ~2 µs a row on every retraining; on ASCII, `[\\W_]`, lower() and isdigit() mean what the functions
    below do. Any other column is keyed value by value."""
    import pyarrow as pa
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    kind = column.type
    if column.null_count == 0 and (
        pa.types.is_integer(kind) or pa.types.is_string(kind) or pa.types.is_large_string(kind)
    ):
        text = column.cast(pa.string()) if pa.types.is_integer(kind) else column
        if isinstance(text, pa.ChunkedArray):
            text = text.combine_chunks()
        if pc.all(pc.string_is_ascii(text)).as_py() is not False:
            text = pc.ascii_lower(_strip_non_alnum(text))
            digits = pc.and_(pc.ascii_is_decimal(text), pc.less_equal(pc.binary_length(text), _CPF_DIGITS))
            return pc.if_else(digits, pc.utf8_lpad(text, width=_CPF_DIGITS, padding="0"), text)
    return pa.array([subject_key(v) for v in column.to_pylist()], pa.string())


def _strip_non_alnum(text: pa.Array) -> pa.Array:
    """An ASCII string array without its characters other than letters and digits. Identifiers carry a few kinds of
    punctuation (a CPF: '.' and '-'), so each kind found is removed by a literal replace, ~5 times faster than one
    regex replace; past _LITERAL_STRIPS_MAX kinds, the regex replace does the rest."""
    import pyarrow.compute as pc

    for _ in range(_LITERAL_STRIPS_MAX):
        dirty = pc.and_(pc.invert(pc.ascii_is_alnum(text)), pc.greater(pc.binary_length(text), 0))
        first = pc.index(dirty, True).as_py()  # ascii_is_alnum is false for "": not dirty
        if first < 0:
            return text
        found = _NOT_ALNUM_ASCII.search(text[first].as_py())
        assert found is not None  # a non-empty ASCII value that is not all letters and digits
        text = pc.replace_substring(text, pattern=found.group(), replacement="")
    return pc.replace_substring_regex(text, pattern="[^A-Za-z0-9]+", replacement="")


def _digest(key: str) -> bytes:
    return hashlib.sha256(_DIGEST_PREFIX + key.encode()).digest()


def _bucket(digest: bytes, part: int, n: int) -> int:
    """Bytes 8*part..8*part+8 of the key's digest, mod n: the shard (part 0), the slice (1), the holdout bucket (2)."""
    return int.from_bytes(digest[8 * part : 8 * part + 8], "big") % n


def shard_of(key: str, shards: int) -> int:
    return _bucket(_digest(key), 0, shards)


def slice_of(key: str, slices: int) -> int:
    return _bucket(_digest(key), 1, slices)


def held_out(key: str, holdout_buckets: int = DEFAULT_HOLDOUT_BUCKETS) -> bool:
    return _bucket(_digest(key), 2, HOLDOUT_BUCKETS) < holdout_buckets


@dataclass
class Assignment:
    """Row indices by shard and slice (each list in key order, then row order), and the held-out rows."""

    shards: int
    slices: int
    rows: list[list[list[int]]]  # [shard][slice] -> row indices
    holdout: list[int]


def assign(
    keys: Sequence[str] | pa.Array | pa.ChunkedArray,
    shards: int,
    slices: int,
    holdout_buckets: int = DEFAULT_HOLDOUT_BUCKETS,
) -> Assignment:
    """Each row (by its canonical subject key) to one shard and one slice, or to the held-out rows. Every retraining
    runs it over every row, so only the digests are a Python loop (one SHA-256 a distinct key, ~0.4 µs): the keys
    are sorted by Arrow (a stable sort: ties in row order), the buckets read from the digests by numpy, and the
    rows grouped by shard and slice by a stable numpy sort, which keeps them in key order, then row order."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    _check_sizes(shards, slices)
    array = keys if isinstance(keys, pa.Array | pa.ChunkedArray) else pa.array(keys, pa.string())
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n, parts = len(array), shards * slices  # part k * slices + j: shard k's slice j; part `parts`: held out
    order = pc.sort_indices(array).to_numpy()
    if n:
        ordered = array.take(order)
        new_key = np.ones(n, dtype=bool)
        new_key[1:] = pc.not_equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False)
        starts = np.flatnonzero(new_key)  # the first row of each distinct key, in key order
        prefix, empty = (pa.scalar(v, array.type) for v in (_DIGEST_PREFIX.decode(), ""))  # string or large_string
        prefixed = pc.binary_join_element_wise(prefix, ordered.take(starts), empty)
        sha256 = hashlib.sha256
        digests = b"".join([sha256(m).digest() for m in prefixed.cast(pa.large_binary()).to_pylist()])
        d = np.frombuffer(digests, dtype=">u8").reshape(-1, 4).astype(np.uint64)  # (distinct keys, 4) u64 each
        held = d[:, 2] % np.uint64(HOLDOUT_BUCKETS) < np.uint64(holdout_buckets)
        part = (d[:, 0] % np.uint64(shards)) * np.uint64(slices) + d[:, 1] % np.uint64(slices)
        part = np.where(held, np.uint64(parts), part).astype(np.int64)
        row_part = np.repeat(part, np.diff(np.append(starts, n)))  # (rows,) in key order
        order = order[np.argsort(row_part, kind="stable")]
        bounds = np.concatenate([[0], np.cumsum(np.bincount(row_part, minlength=parts + 1))]).tolist()
    else:
        bounds = [0] * (parts + 2)
    rows = [
        [order[bounds[p] : bounds[p + 1]].tolist() for p in range(k * slices, (k + 1) * slices)] for k in range(shards)
    ]
    return Assignment(shards, slices, rows, order[bounds[parts] :].tolist())


def _check_sizes(shards: int, slices: int) -> None:
    if not (1 <= shards <= SHARDS_MAX and 1 <= slices <= SLICES_MAX):
        raise JobError(
            f"sisa shards={shards}, slices={slices}: out of range. To fix: 1 <= shards <= {SHARDS_MAX}, "
            f"1 <= slices <= {SLICES_MAX}."
        )


def aggregate(probabilities: Sequence[torch.Tensor], how: str = "mean") -> torch.Tensor:
    """The ensemble's prediction from each shard model's class probabilities (same shape: (n,) for a binary
    model's P(y=1), or (n, classes)). "mean": their average; "vote": the share of shards predicting the class
    (binary: P > 0.5; multi-class: argmax), ties broken towards the mean probability."""
    import torch

    if not probabilities:
        raise JobError("aggregate() got no predictions. To fix: pass one tensor per shard model.")
    stacked = torch.stack([p.float() for p in probabilities])
    mean = stacked.mean(0)
    if how == "mean":
        return mean
    if how == "vote":
        if stacked.dim() == 2:  # binary: (shards, n)
            votes = (stacked > 0.5).float().mean(0)
            return torch.where(votes == 0.5, mean, votes)
        classes = stacked.shape[-1]
        onehot = torch.nn.functional.one_hot(stacked.argmax(-1), classes).float().mean(0)
        return onehot + 1e-6 * mean  # ties: the higher mean probability wins an argmax
    raise JobError(f"aggregate(how={how!r}): unknown. To fix: how='mean' or how='vote'.")


def _row_digest(table: pa.Table, rows: list[int]) -> str:
    """sha256 of the rows `rows` of `table`, every column, as one Arrow IPC stream (schema metadata dropped, one
    chunk): the same rows give the same digest whichever version of the dataset they were read from."""
    import pyarrow as pa

    part = table.take(rows).replace_schema_metadata(None).combine_chunks()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, part.schema) as writer:
        writer.write_table(part)
    return hashlib.sha256(sink.getvalue()).hexdigest()


def slice_digests(table: pa.Table, assignment: Assignment) -> list[list[str]]:
    """`_row_digest` of every shard's every slice. The table is made one chunk first, once: Arrow's take on a
    column of many chunks (a dataset read in row groups) concatenates them on every call, ~4 times the cost of
    the take itself for R * K calls."""
    whole = table.combine_chunks()
    return [[_row_digest(whole, part) for part in shard] for shard in assignment.rows]


@dataclass
class Shard:
    index: int
    slice_rows: list[list[int]]
    start_slice: int = 0  # the first slice this run trains (0: from scratch; R: reused whole)
    changed_from: int | None = None  # the first slice whose rows differ from the seeded manifest's

    def rows_through(self, j: int) -> list[int]:
        """The shard's rows of slices 0..j (SISA trains each slice on the rows of all slices up to it)."""
        return [i for part in self.slice_rows[: j + 1] for i in part]

    @property
    def rows(self) -> list[int]:
        return self.rows_through(len(self.slice_rows) - 1)


@dataclass
class SisaPlan:
    run: Run
    folder: Path
    assignment: Assignment
    digests: list[list[str]]
    shards: list[Shard]
    previous_step: int = 0  # the step of the seeded (or earlier attempt's) SISA checkpoint
    trained_slices: int = 0
    reused_from: dict[str, Any] = field(default_factory=dict)
    before: list[Any] | None = None  # each shard's final state as the seeded run left it (the model before)

    @property
    def slices(self) -> int:
        return self.assignment.slices

    @property
    def holdout(self) -> list[int]:
        return self.assignment.holdout

    @classmethod
    def open(
        cls,
        run: Run,
        table: pa.Table,
        subject_column: str,
        shards: int | None = None,
        slices: int | None = None,
        holdout_buckets: int = DEFAULT_HOLDOUT_BUCKETS,
    ) -> SisaPlan | None:
        """The plan for `table`, or None when the job is no SISA job (no TREINO_SISA, no shards= given). Reuses
        what an earlier run left in `{checkpoint_dir}/sisa` (seeded by an erasure's retraining, or an earlier
        attempt) wherever the slices' rows are unchanged."""
        if shards is None or slices is None:
            raw = os.environ.get(ENV_SISA, "")
            if not raw:
                return None
            try:
                env_shards, env_slices = (int(p) for p in raw.split(":"))
            except ValueError as e:
                raise JobError(f"{ENV_SISA}={raw!r} is not K:R. To fix: set it as shards:slices, e.g. 3:4.") from e
            shards = env_shards if shards is None else shards
            slices = env_slices if slices is None else slices
        assignment = assign(subject_key_array(table.column(subject_column)), shards, slices, holdout_buckets)
        digests = slice_digests(table, assignment)
        folder = run.checkpoint_dir / SISA_DIR
        plan = cls(run, folder, assignment, digests, [Shard(k, assignment.rows[k]) for k in range(shards)])
        plan._reuse()
        return plan

    def _reuse(self) -> None:
        manifest = self._manifest()
        if manifest is None:
            return
        if manifest.get("shards") != self.assignment.shards or manifest.get("slices") != self.slices:
            shutil.rmtree(self.folder)  # another layout: nothing in it is reusable
            return
        self.previous_step = int(manifest.get("step", 0))
        old: list[list[str]] = manifest["digests"]
        finals = [self.slice_path(s, self.slices - 1) for s in self.shards]
        if all(p.is_file() for p in finals):
            import torch

            self.before = [torch.load(p, map_location="cpu", weights_only=True) for p in finals]
        for shard in self.shards:
            same = 0
            while same < self.slices and old[shard.index][same] == self.digests[shard.index][same]:
                same += 1
            done = same
            while done > 0 and not self.slice_path(shard, done - 1).is_file():  # a slice never saved (cut short)
                done -= 1
            shard.start_slice = done
            shard.changed_from = same if same < self.slices else None
            for j in range(done, self.slices):  # trained on rows that changed (or never written): never reused
                self.slice_path(shard, j).unlink(missing_ok=True)
        self.reused_from = {
            "step": self.previous_step,
            "retrained_shards": [s.index for s in self.shards if s.start_slice < self.slices],
            "start_slices": [s.start_slice for s in self.shards],
        }

    def _manifest(self) -> dict[str, Any] | None:
        path = self.folder / MANIFEST_NAME
        if not path.is_file():
            return None
        try:
            manifest = json.loads(path.read_text())
        except ValueError:
            return None
        return manifest if isinstance(manifest, dict) else None

    def slice_path(self, shard: Shard, j: int) -> Path:
        return self.folder / f"shard-{shard.index:03d}" / f"slice-{j:04d}.pt"

    def restore(self, shard: Shard) -> Any:
        """The state saved after slice start_slice - 1 of `shard`, or None (train from scratch)."""
        import torch

        if shard.start_slice == 0:
            return None
        return torch.load(self.slice_path(shard, shard.start_slice - 1), map_location="cpu", weights_only=True)

    def final_state(self, shard: Shard) -> Any:
        import torch

        return torch.load(self.slice_path(shard, self.slices - 1), map_location="cpu", weights_only=True)

    def save(self, shard: Shard, j: int, state: Any) -> Path:
        """The checkpoint of `shard` after slice `j` (atomic), and the manifest saying so."""
        import torch

        if self.run.rank != 0:
            return self.slice_path(shard, j)
        buf = io.BytesIO()
        torch.save(state, buf)
        path = self.slice_path(shard, j)
        path.parent.mkdir(parents=True, exist_ok=True)
        _write_atomic(path, buf.getvalue())
        self.trained_slices += 1
        self._write_manifest()
        return path

    def _write_manifest(self) -> None:
        manifest = {
            "shards": self.assignment.shards,
            "slices": self.slices,
            "step": self.previous_step + self.trained_slices,
            "digests": self.digests,
            "holdout_rows": len(self.holdout),
            "reused": self.reused_from,
        }
        self.folder.mkdir(parents=True, exist_ok=True)
        _write_atomic(self.folder / MANIFEST_NAME, json.dumps(manifest).encode())

    def finish(self) -> Path:
        """Register the folder (every shard's slice checkpoints: the ensemble) as the job's checkpoint."""
        missing = [s.index for s in self.shards if not self.slice_path(s, self.slices - 1).is_file()]
        if missing:
            raise JobError(
                f"shards {missing} have no checkpoint of their last slice. To fix: train every shard through "
                f"slice {self.slices - 1} before plan.finish()."
            )
        self._write_manifest()
        return self.run.register_checkpoint(self.folder, self.previous_step + max(self.trained_slices, 1))


def erased_rows(run: Run, dataset: str) -> pa.Table | None:
    """The erased subject's rows of `dataset`, which the server leaves in an erasure's retraining job's folder for
    the memorisation check (and deletes once the job ends), or None."""
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    path = run.checkpoint_dir.parent / ERASED_ROWS_NAME.format(dataset=dataset)
    if not path.is_file():
        return None
    return pq.read_table(path)


def memorisation_check(
    run: Run,
    loss_before: Callable[[pa.Table], float] | None,
    loss_after: Callable[[pa.Table], float],
    erased: pa.Table,
    holdout: pa.Table,
) -> dict[str, Any]:
    """The mean loss of the model before the erasure's retraining (when it is still at hand) and after it, on the
    erased rows and on held-out rows; written to `{checkpoint_dir}/memorisation.json`, which the server adds to the
    erasure's record when the job ends. A gap (erased - held-out) near 0 after retraining is consistent with the
    model having forgotten the rows; a clearly negative gap (lower loss on the erased rows) suggests it still
    fits them. It proves neither: a loss is one weak membership signal."""

    def figures(loss: Callable[[pa.Table], float]) -> dict[str, float | None]:
        e, h = loss(erased), loss(holdout)
        gap = e - h if math.isfinite(e) and math.isfinite(h) else None
        return {"erased_loss": e, "holdout_loss": h, "gap": gap}

    result: dict[str, Any] = {
        "metric": "mean loss",
        "erased_rows": erased.num_rows,
        "holdout_rows": holdout.num_rows,
        "before": figures(loss_before) if loss_before is not None else None,
        "after": figures(loss_after),
    }
    if run.rank == 0:
        _write_atomic(run.checkpoint_dir / MEMORISATION_NAME, json.dumps(result).encode())
    return result
