"""Sharded checkpoints for the Job SDK: torch.distributed.checkpoint (DCP) folders that every rank writes its own
shard of, and that load back with any number of ranks (saved by 2, restored by 1 or 4). Used through `Run`:

    from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict

    model_sd, optim_sd = get_state_dict(model, optimizer)     # DTensors under fully_shard: this rank's shards
    state = {"model": model_sd, "optim": optim_sd}
    step = run.restore_sharded(state)                        # every rank; loads in place; None when none
    if step is not None:
        set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])
    ...
    run.save_sharded(state, step=step, async_save=True)      # every rank; see docs/sdk.md

A sharded checkpoint is the folder `{checkpoint_dir}/step-{step:09d}/`: DCP's files (`__{rank}_0.distcp`, one per
rank, and `.metadata`). It is written whole or not at all:

1. rank 0 removes the hidden folder `.step-{step:09d}.tmp-{attempt}` a killed writer may have left; every rank
   creates it (DCP's FileSystemWriter, while planning) and writes into it only once DCP's coordinator, rank 0, has
   sent out the plan, so after that removal: no barrier is needed;
2. every rank writes its shard into it (DCP's FileSystemWriter fsyncs each file); DCP's coordinator (rank 0) writes
   `.metadata` last, after every rank's shard is written;
3. rank 0 fsyncs the folder, renames it to `step-{step:09d}` and fsyncs the checkpoint folder, keeps the newest
   `keep` sharded checkpoints (older folders and hidden leftovers are removed), then reports it to the server.

A step saved again (a resumed loop saving the step it restored from) keeps the complete folder already there and
discards the new one: the same step is taken to hold the same state (save a changed state under a new step).
Replacing it would take two renames, with no `step-N` between them for a kill to leave. A complete folder set aside
as `.step-N.old-A` by an earlier version's writer killed between those renames is put back (at the next save or
restore), never pruned.

So a folder named `step-NNNNNNNNN` exists only once complete, and only complete ones (with `.metadata`) are ever
restored or found by the server. With `async_save=True` the call returns once the state is copied to CPU memory
(DCP's staging, into a copy made by the first async save and reused by the next ones); DCP's planning and step 2 and 3
(the writes, fsyncs, rename, pruning and the report to the server) run in DCP's background thread, on a gloo process
group of their own (created once, by the first async save on every rank) so that they never interleave with the
training loop's collectives. A save killed before step 3 is neither in place nor reported. The next `save_sharded`,
`restore_sharded` or `finish()` waits for it. A failed async save raises JobError at that wait (in `finish()`:
logged). `ShardedCheckpoints.blocked_s` holds where the last save's time in the calling thread went
(benchmarks/sharded_bench.py prints it).

A framework's own checkpoint folder (the Trainer's `checkpoint-500/`) is not written here: `Run.register_checkpoint`
marks and reports it.
"""

from __future__ import annotations

import itertools
import logging
import re
import shutil
import time
from concurrent.futures import Future
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from treino.errors import JobError
from treino.job import _fsync_dir, _size_bytes

if TYPE_CHECKING:
    from treino.job import Run

log = logging.getLogger("treino.job")

# --- the layout; the server reads the same names (treino.server.lineage) ---------------------------------
COMPLETE_MARKER = ".metadata"  # DCP's metadata file, written last: a step folder without it is no checkpoint
ASYNC_BACKEND = "gloo"  # the process group of async saves: DCP's async save needs a CPU backend

# At most 19 digits: a step is a 64-bit integer (the server's columns), and a longer name is no checkpoint of ours.
SHARDED_FOLDER_RE = re.compile(r"^step-(\d{9,19})$")
_LEFTOVER_RE = re.compile(r"^\.step-(\d{9,19})\.(tmp|old)-\d+$")  # a killed writer's; `old`: set aside (_recover)


def _last_line(error: BaseException) -> str:
    """The last line of an error's message: DCP's CheckpointException holds each rank's whole traceback."""
    lines = str(error).strip().splitlines()
    return lines[-1] if lines else type(error).__name__


def _no_dist() -> bool:
    """True without an initialised process group: DCP then reads and writes as a single process (and says nothing)."""
    import torch.distributed as dist

    return not (dist.is_available() and dist.is_initialized())


def _parts(marks: list[float], names: tuple[str, ...]) -> dict[str, float]:
    """The time between consecutive marks, by name."""
    return {name: b - a for name, (a, b) in zip(names, itertools.pairwise(marks), strict=True)}


def _barrier() -> None:
    from treino.job import _dist_world

    if _dist_world() is not None:
        import torch.distributed as dist

        dist.barrier()


def _layout(tree: Any) -> Any:
    """What a state dict's CPU copy depends on: its keys, and each tensor's shape (a DTensor's: also its shard's)
    and dtype."""
    import torch
    from torch.distributed.tensor import DTensor

    if isinstance(tree, dict):
        return tuple((key, _layout(value)) for key, value in tree.items())
    if isinstance(tree, (list, tuple)):
        return tuple(_layout(value) for value in tree)
    if isinstance(tree, DTensor):
        return (tuple(tree.shape), tuple(tree.to_local().shape), tree.dtype)
    if isinstance(tree, torch.Tensor):
        return (tuple(tree.shape), tree.dtype)
    return None


def _empty_cpu_copy(tree: Any, pin_memory: bool) -> Any:
    """A state dict's CPU copy, uninitialised, for DCP's `_copy_state_dict`: DCP's `_create_cpu_state_dict`, except
    for a DTensor already on CPU, which it deep-copies (its shard allocated and copied once more, then dropped for an
    empty one). Measured on CPU by benchmarks/sharded_bench.py (1 GiB, 2 ranks), the first async save blocked for
    2.3-5.6 s with DCP's and 1.1-1.6 s with this one; most of what is left is the copy faulting in the new pages."""
    from torch.distributed._state_dict_utils import _create_cpu_state_dict
    from torch.distributed.tensor import DTensor

    if isinstance(tree, dict):
        return {key: _empty_cpu_copy(value, pin_memory) for key, value in tree.items()}
    if isinstance(tree, list):
        return [_empty_cpu_copy(value, pin_memory) for value in tree]
    if isinstance(tree, tuple):
        return tuple(_empty_cpu_copy(value, pin_memory) for value in tree)
    if isinstance(tree, DTensor) and tree.device.type == "cpu" and tree.dim() > 0:
        import torch

        local = tree.to_local()
        empty = torch.empty(tuple(local.shape), dtype=local.dtype, pin_memory=pin_memory)
        return DTensor.from_local(
            empty, tree.device_mesh, tree.placements, run_check=False, shape=tree.shape, stride=tree.stride()
        )
    return _create_cpu_state_dict({"": tree}, pin_memory=pin_memory)[""]


def _reused_cpu_copy() -> Any:
    """DCP's blocking stager, but its CPU copy of the state is made once (pinned only where CUDA is) and reused by
    the later async saves: copying into pages already mapped costs several times less than into fresh ones
    (benchmarks/sharded_bench.py). A state with other keys, shapes or dtypes gets a new copy. Reusing it is safe:
    a save waits for the previous one's write before it stages."""
    import torch
    from torch.distributed._state_dict_utils import _copy_state_dict
    from torch.distributed.checkpoint.staging import BlockingAsyncStager

    class ReusedCpuCopy(BlockingAsyncStager):
        layout: Any = None
        stage_s = 0.0  # the last stage's duration (the copy, and making the CPU copy when it is new)

        def stage(self, state_dict: dict[str, Any]) -> dict[str, Any]:
            began = time.perf_counter()
            layout = _layout(state_dict)
            if self.state_dict_cache is None or layout != self.layout:
                self.state_dict_cache = _empty_cpu_copy(state_dict, pin_memory=torch.cuda.is_available())
                self.layout = layout
            staged = _copy_state_dict(state_dict, self.state_dict_cache)
            self.stage_s = time.perf_counter() - began
            return staged

    return ReusedCpuCopy()


class ShardedCheckpoints:
    """The sharded checkpoints of one Run: listing, save (sync or async), restore. Every method is called on every
    rank, in the same order."""

    def __init__(self, run: Run) -> None:
        self.run = run
        self._pending: tuple[int, Future[None]] | None = None  # the async save in flight: its step, its completion
        self._async_group: Any = None  # the gloo process group of async saves
        self._stager: Any = None  # the CPU copy of the state async saves write from (kept between saves)
        # Where the last save_sharded's time in the calling thread went, in seconds, by part: "wait" (for the previous
        # async save), "folder" (rank 0 removing a leftover), then for a sync save "write" (DCP's save) and "complete"
        # (rename, prune, report, barrier); for an async one "group" (its process group, made once), "stage" (the
        # copy to CPU memory) and "dcp" (the rest of DCP's async_save: starting its thread).
        self.blocked_s: dict[str, float] = {}

    @property
    def folder(self) -> Path:
        return self.run.checkpoint_dir

    def list(self) -> list[tuple[int, Path]]:
        """(step, path) of every complete sharded checkpoint (a `step-*` folder with `.metadata`), oldest first."""
        if not self.folder.is_dir():
            return []
        found = [
            (int(m.group(1)), p)
            for p in self.folder.iterdir()
            if (m := SHARDED_FOLDER_RE.match(p.name)) and (p / COMPLETE_MARKER).is_file()
        ]
        return sorted(found)

    # -- save
    def save(self, state_dict: dict[str, Any], step: int, async_save: bool = False) -> Path:
        from torch.distributed.checkpoint.filesystem import FileSystemWriter
        from torch.distributed.checkpoint.state_dict_saver import async_save as dcp_async_save
        from torch.distributed.checkpoint.state_dict_saver import save as dcp_save

        if step < 0:
            raise JobError(f"step={step}: checkpoint steps are >= 0. To fix: pass the step just completed.")
        marks = [time.perf_counter()]
        self.wait()
        rank = self.run.rank
        final = self.folder / f"step-{step:09d}"
        temp = self.folder / f".step-{step:09d}.tmp-{self.run.attempt}"
        marks.append(time.perf_counter())
        if rank == 0:  # before DCP's plan, so before any rank writes (module docstring, step 1)
            shutil.rmtree(temp, ignore_errors=True)  # a killed writer's, of the same step and attempt
        marks.append(time.perf_counter())
        writer = FileSystemWriter(temp, sync_files=True)  # every rank creates `temp` while planning
        if not async_save:
            dcp_save(state_dict, storage_writer=writer, no_dist=_no_dist())
            marks.append(time.perf_counter())
            if rank == 0:
                self._complete(step, temp, final)
            _barrier()  # every rank returns once the checkpoint is in place
            marks.append(time.perf_counter())
            self.blocked_s = _parts(marks, ("wait", "folder", "write", "complete"))
            return final
        if self._stager is None:
            self._stager = _reused_cpu_copy()
        group = self._group()
        marks.append(time.perf_counter())
        future = dcp_async_save(
            state_dict, storage_writer=writer, process_group=group, async_stager=self._stager, no_dist=_no_dist()
        )
        assert isinstance(future, Future)  # a blocking stager: the upload's future itself
        done: Future[None] = Future()
        self._pending = (step, done)
        # Run by DCP's thread once every shard and .metadata are written (at once, here, if that is already so).
        future.add_done_callback(partial(self._finish_async, done=done, step=step, temp=temp, final=final, rank=rank))
        marks.append(time.perf_counter())
        self.blocked_s = _parts(marks, ("wait", "folder", "group", "dcp"))
        self.blocked_s["stage"] = self._stager.stage_s
        self.blocked_s["dcp"] -= self._stager.stage_s
        return final

    def _group(self) -> Any:
        """The gloo group of async saves (None without a process group). Created collectively, once."""
        from treino.job import _dist_world

        if _dist_world() is None:
            return None
        if self._async_group is None:
            import torch.distributed as dist

            self._async_group = dist.new_group(backend=ASYNC_BACKEND)
        return self._async_group

    def _finish_async(
        self, future: Future[Any], done: Future[None], step: int, temp: Path, final: Path, rank: int
    ) -> None:
        """DCP's thread, once the save's future is done: put the folder in place (rank 0), then mark `done`."""
        try:
            future.result()  # on rank 0: every rank's shard and .metadata are written
            if rank == 0:
                self._complete(step, temp, final)
        except BaseException as e:  # handed to the thread that waits: wait() raises it
            done.set_exception(e)
        else:
            done.set_result(None)

    def _complete(self, step: int, temp: Path, final: Path) -> None:
        """Rank 0, once every shard and `.metadata` are in `temp`: rename it into place, prune, report."""
        if not (temp / COMPLETE_MARKER).is_file():
            raise JobError(
                f"The sharded checkpoint of step {step} in {temp} has no {COMPLETE_MARKER} after the save. To fix: "
                "check that every rank called save_sharded with the same step and that the folder is shared."
            )
        if (final / COMPLETE_MARKER).is_file():
            # Saved again (a resumed attempt saving the step it restored from): the same step is the same state, so
            # the complete folder stands. Replacing it takes two renames, and a kill between them left no step-N.
            shutil.rmtree(temp)
        else:
            _fsync_dir(temp)
            if final.exists():  # a step folder without its marker is no checkpoint (a disk that lied)
                shutil.rmtree(final)
            temp.rename(final)
            _fsync_dir(self.folder)
        self._prune(step)
        reporter = self.run._reporter
        if reporter is not None:  # journaled now, sent by the reporter's thread
            reporter.checkpoint(step, final, _size_bytes(final))

    def _prune(self, saved_step: int) -> None:
        """Keep the newest `keep` sharded checkpoints up to the one just saved (later ones never count as kept);
        remove older ones and folders left by killed writers, but never a step's only complete copy."""
        self._recover()
        listed = self.list()
        for _, old in [c for c in listed if c[0] <= saved_step][: -self.run.keep]:
            shutil.rmtree(old, ignore_errors=True)
        complete = {step for step, _ in listed}
        for p in self.folder.iterdir():
            if (m := _LEFTOVER_RE.match(p.name)) is None:
                continue
            if m.group(2) == "old" and int(m.group(1)) not in complete and (p / COMPLETE_MARKER).is_file():
                continue  # could not be put back (_recover said why): the step's only copy
            shutil.rmtree(p, ignore_errors=True)

    def _recover(self) -> None:
        """Rank 0: put back as `step-N` a complete folder set aside as `.step-N.old-A` when no complete `step-N`
        exists: a writer of an earlier version killed between replacing renames left the step's only copy so."""
        for p in sorted(self.folder.iterdir()):
            m = _LEFTOVER_RE.match(p.name)
            if m is None or m.group(2) != "old" or not (p / COMPLETE_MARKER).is_file():
                continue
            final = self.folder / f"step-{m.group(1)}"
            if (final / COMPLETE_MARKER).is_file():
                continue  # replaced after all: a leftover
            try:
                if final.exists():  # no checkpoint without its marker
                    shutil.rmtree(final)
                p.rename(final)
                _fsync_dir(self.folder)
            except OSError as e:
                log.warning("treino: could not put %s back as %s (%s); it is kept.", p, final.name, e)
                continue
            log.warning("treino: %s put back as %s: a writer killed while replacing it left it aside.", p, final.name)

    def wait(self) -> None:
        """Wait for the async save in flight, if any; JobError if it failed."""
        pending, self._pending = self._pending, None
        if pending is None:
            return
        step, done = pending
        error = done.exception()  # waits
        if error is not None:
            raise JobError(
                f"The asynchronous sharded save (step {step}) failed: {_last_line(error)}. To fix: see the cause "
                "above; the checkpoints saved before it are intact."
            ) from error

    def close(self) -> None:
        """`finish()`: wait for the async save in flight; a failure is logged, not raised (it may run at exit)."""
        try:
            self.wait()
        except JobError as e:
            log.error("treino: %s", e)

    # -- restore
    def restore(self, state_dict: dict[str, Any]) -> int | None:
        """Load the newest complete sharded checkpoint into `state_dict` in place; its step, or None when none.

        Every rank loads the folder rank 0 chose (listed once, broadcast). One that fails to load (a shard missing
        or cut: a disk that lied) is skipped with a warning for the one before it; when none loads, JobError."""
        from torch.distributed.checkpoint.api import CheckpointException
        from torch.distributed.checkpoint.filesystem import FileSystemReader
        from torch.distributed.checkpoint.state_dict_loader import load

        from treino.job import _dist_world

        self.wait()
        if self.run.rank == 0 and self.folder.is_dir():
            self._recover()
        candidates = self.list()
        if _dist_world() is not None:  # every rank must load the same folder, whatever it lists
            import torch.distributed as dist

            box: list[Any] = [candidates]
            dist.broadcast_object_list(box, src=0)
            candidates = box[0]
        self.run.checkpoint_step = None
        first_error: BaseException | None = None
        for step, path in reversed(candidates):
            try:
                load(state_dict, storage_reader=FileSystemReader(path), no_dist=_no_dist())
            except (CheckpointException, OSError, RuntimeError, ValueError, EOFError) as e:
                log.warning("treino: skipping sharded checkpoint %s: it does not load (%s).", path, _last_line(e))
                if first_error is None:
                    first_error = e
                continue
            self.run.checkpoint_step = step
            return step
        if first_error is not None:
            raise JobError(
                f"No sharded checkpoint in {self.folder} loads ({type(first_error).__name__}, the cause above). "
                "To fix: check that the state_dict passed has the keys and shapes it was saved with."
            ) from first_error
        return None
