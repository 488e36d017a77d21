"""Mutation testing of the modules whose numbers users trust: each small change mutmut makes to one of them must make
one of its tests fail. `make mutate` runs it; `make mutate TARGETS=cpf` one target; `MUTANTS=` mutmut's names.

    python scripts/mutate.py [--targets memory,cpf] [--mutants 'treino.govern.cpf.x__valid*'] [--max-children 1]
                             [--table-only]

Each target is a module and the tests that should catch its mutants (the fast ones: every mutant runs them). mutmut
reads its settings from the pyproject.toml of the folder it runs in, so each target gets a folder of its own under
.mutate/ (a copy of src/, tests/, scripts/ and examples/, and a pyproject.toml with the target's [tool.mutmut]).
The folders are kept: mutmut records each mutant's result there and, run again, tests only the mutants of functions
that changed since, and the survivors (against the tests as they are now). The table at the end gives each target's
score against TARGET_SCORE; the survivors are listed by `.venv/bin/mutmut results` in the target's folder
(`mutmut show NAME` shows one).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORK = ROOT / ".mutate"
COPIED = ("src", "tests", "scripts", "examples")
TARGET_SCORE = 0.90  # issue 17: at least 90 % of mutants killed in each target module


@dataclass(frozen=True)
class Target:
    module: str  # the file mutated, from the repository's root
    tests: tuple[str, ...]  # pytest's arguments: the tests that must kill its mutants


TARGETS = {
    "memory": Target("src/treino/plan/memory.py", ("tests/plan", "-m", "not slow")),
    "performance": Target("src/treino/plan/performance.py", ("tests/plan", "-m", "not slow")),
    # SQLite only: the PostgreSQL variants check the same code, against a server each mutant would have to start
    "audit": Target("src/treino/govern/audit.py", ("tests/govern/test_audit.py", "-k", "not postgresql")),
    "cpf": Target(
        "src/treino/govern/cpf.py",
        ("tests/govern/test_cpf.py", "tests/govern/test_identity.py", "-k", "not postgresql"),
    ),
    "scheduler": Target("src/treino/server/scheduler.py", ("tests/server/test_scheduler.py",)),
}


# Survivors that behave exactly as the original (no test can kill them), by target, with the reason. mutmut's names
# stay the same while the function is unchanged; `mutmut show NAME` in the target's folder shows the change.
# A reason that starts "SQLite:" is a mutant that behaves as the original on SQLite, the database of a target whose
# tests leave their [postgresql] variants out (TARGETS), and "PostgreSQL only:" one in a branch only PostgreSQL takes:
# the [postgresql] variants of the same tests (`make test`) are what would tell those apart.
EQUIVALENT: dict[str, dict[str, str]] = {
    "cpf": {
        "treino.govern.cpf.x__check_digit__mutmut_7": "zip(strict=None): digits and weights always have one length",
        "treino.govern.cpf.x__check_digit__mutmut_10": "zip() without strict: digits and weights have one length",
        "treino.govern.cpf.x__check_digit__mutmut_20": "zip(strict=False): digits and weights have one length",
        "treino.govern.cpf.x_is_valid_cpf__mutmut_14": "d[1] * 11 == d only where d[0] * 11 == d",
        "treino.govern.cpf.x__sample__mutmut_2": "n >= sample_rows: at n == sample_rows the take is every row",
        "treino.govern.cpf.x__sample__mutmut_11": "pa.array(ints, None) infers int64 anyway",
        "treino.govern.cpf.x__sample__mutmut_13": "pa.array(ints) infers int64 anyway",
    },
    "memory": {
        "treino.plan.memory.x__fsdp_rank_elements__mutmut_8": "numel / shape[0]: numel is a multiple of shape[0], "
        "so the float quotient is exact, and every caller computes in floats",
        "treino.plan.memory.x_fsdp_shard_fraction__mutmut_1": "at dp == 1 the computed share is every tensor's "
        "elements over model.params, their sum: exactly 1.0",
        "treino.plan.memory.x__optimizer_temporary_bytes__mutmut_8": "1 B of step temporaries where there are "
        "none: below MemTracker's 512-B granularity, no measurement can tell (not strictly equivalent)",
        "treino.plan.memory.x__encoder_head_terms__mutmut_22": "BERT's head gradient 1 B instead of 0 (it is counted "
        "in BERT's logit terms): 1 B more in the recompute phase, below MemTracker's 512-B granularity; the decoders' "
        "head moment it turns on equals the second moment BERT's terms already take, or is smaller (not strictly "
        "equivalent)",
        "treino.plan.memory.x__post_core_params__mutmut_14": "max(..., 1): 1 parameter where a block has none after "
        "its core, which no block has",
        "treino.plan.memory.x__selective_recompute_phase__mutmut_19": "kernel=None: block_activation_bytes then "
        "plans the same kernel the caller passed (planned_attention_kernel)",
        "treino.plan.memory.x__selective_recompute_phase__mutmut_23": "kernel left out: as mutmut_19",
        "treino.plan.memory.x__selective_recompute_phase__mutmut_24": "core < 0: a recomputed core is never 0 B "
        "(at least the fused kernel's log-sum-exp), so == 0 never occurs",
        "treino.plan.memory.x__selective_recompute_phase__mutmut_25": "core <= 1: a recomputed core is thousands of "
        "bytes at least",
        "treino.plan.memory.x__selective_recompute_phase__mutmut_93": "1 B of gradients where there are none: below "
        "MemTracker's 512-B granularity (not strictly equivalent)",
        "treino.plan.memory.x__core_backward_bytes__mutmut_10": "1 B of a fused kernel's core backward where there "
        "is none: below MemTracker's 512-B granularity (not strictly equivalent)",
        "treino.plan.memory.x_estimate_training_memory__mutmut_12": "adapters counted without LoRA too: they are read "
        "only under LoRA (trainable, weights)",
        "treino.plan.memory.x_estimate_training_memory__mutmut_17": "1 adapter parameter without LoRA: read only under "
        "LoRA",
        "treino.plan.memory.x_estimate_training_memory__mutmut_167": "cpu = optimizer: cpu is still 0.0 there, so it "
        "is the same as cpu += optimizer",
        "treino.plan.memory.x_estimate_training_memory__mutmut_207": "kernel=None: as _selective_recompute_phase's "
        "mutmut_19",
        "treino.plan.memory.x_estimate_training_memory__mutmut_212": "kernel left out: as mutmut_207",
    },
    "performance": {
        "treino.plan.performance.x_scale__mutmut_43": "max(gpus_per_server, 1): a server holds at least one GPU",
        "treino.plan.performance.x_allreduce_time__mutmut_27": "one GPU to a domain: no traffic inside it; its busbw "
        "can only slow the ring to the hierarchical sum's pace, which then wins with the same seconds (only "
        "AllReduceTime.algorithm changes)",
        "treino.plan.performance.x_allreduce_time__mutmut_68": "one GPU to a domain: its busbw, now finite, changes "
        "no seconds (as mutmut_27)",
        "treino.plan.performance.x_allreduce_time__mutmut_75": "one GPU to a domain: its busbw, now finite, changes "
        "no seconds (as mutmut_27)",
        "treino.plan.performance.x_allreduce_time__mutmut_34": "the PCIe busbw is read only where a domain is smaller "
        "than the server (fabric.hierarchical_allreduce: one domain to a unit otherwise)",
        "treino.plan.performance.x_allreduce_time__mutmut_48": "domain == server: one domain to a server, the PCIe "
        "busbw unread (as mutmut_34)",
        "treino.plan.performance.x_allreduce_time__mutmut_36": "link_busbw_gb_s takes any interconnect but nvlink as "
        "PCIe",
        "treino.plan.performance.x_allreduce_time__mutmut_41": "link_busbw_gb_s takes any interconnect but nvlink as "
        "PCIe",
        "treino.plan.performance.x_allreduce_time__mutmut_42": "link_busbw_gb_s takes any interconnect but nvlink as "
        "PCIe",
        "treino.plan.performance.x_tensor_parallel_seconds__mutmut_11": "max(gpus_per_server, 1): a server holds at "
        "least one GPU",
        "treino.plan.performance.x_tensor_parallel_seconds__mutmut_32": "link_busbw_gb_s takes any interconnect but "
        "nvlink as PCIe",
        "treino.plan.performance.x_tensor_parallel_seconds__mutmut_33": "link_busbw_gb_s takes any interconnect but "
        "nvlink as PCIe",
        "treino.plan.performance.x_tensor_parallel_seconds__mutmut_34": "link_busbw_gb_s takes any interconnect but "
        "nvlink as PCIe",
        "treino.plan.performance.x__with_gpus__mutmut_6": "ZeRO kept on one replica: estimate_time reads zero only "
        "for the gradient all-reduce, which one replica does not run",
        "treino.plan.performance.x__with_gpus__mutmut_9": "ZeRO kept on one replica (as mutmut_6)",
        "treino.plan.performance.x__with_gpus__mutmut_10": "ZeRO kept on one replica (as mutmut_6)",
        "treino.plan.performance.x__with_gpus__mutmut_12": "ZeRO 1 on one replica (as mutmut_6)",
        "treino.plan.performance.x__fp8_peak__mutmut_15": "x (1e12 + 1): the peak moves by 1e-12 of itself, below any "
        "figure's precision",
        "treino.plan.performance.x_estimate_time__mutmut_45": "calibrated_mfu of no measured steps is None, as "
        "skipping it",
        "treino.plan.performance.x_estimate_time__mutmut_131": "HBM GB/s x (1e9 + 1): 1e-9 of the memory time, below "
        "any figure's precision",
        "treino.plan.performance.x_mfu_size_factor__mutmut_15": "log2(h / 769): moves the factor by 3e-4 (0.03 pp of "
        "MFU), nothing at the floor or the cap; no published MFU resolves it",
        "treino.plan.performance.x_estimate_time__mutmut_137": "memory_time == compute: only the label would differ, "
        "at a tie of two float sums no plan meets",
        "treino.plan.performance.x_estimate_time__mutmut_224": "no all-reduce (comm 0): max(-0.8 backward, min(0, "
        "last bucket)) is 0 as well",
        "treino.plan.performance.x_estimate_time__mutmut_257": "no tokens: ceil(0 / tokens_per_step) is 0 steps as "
        "well",
        "treino.plan.performance.x_link_busbw_gb_s__mutmut_28": "min()'s default is never taken: 8 is a key, and "
        "min(gpus, 8) <= 8",
        "treino.plan.performance.x_link_busbw_gb_s__mutmut_30": "min()'s default is never taken: 8 is a key, and "
        "min(gpus, 8) <= 8",
        "treino.plan.performance.x_link_busbw_gb_s__mutmut_37": "min()'s default is never taken: 8 is a key, and "
        "min(gpus, 8) <= 8",
        "treino.plan.performance.x_link_busbw_gb_s__mutmut_36": "min(gpus, 9): 9 GPUs or more find no key >= 9 and "
        "take the default, 8, as before",
        "treino.plan.performance.x_estimate_time__mutmut_304": "step > 0 always (compute is): the else is never taken",
    },
    "scheduler": {
        "treino.server.scheduler.x_schedule__mutmut_14": "reservation = None: read once a head set it",
        "treino.server.scheduler.x_schedule__mutmut_15": "spare_at_reservation = None: read once a head set it",
        "treino.server.scheduler.x_schedule__mutmut_16": "spare_at_reservation = 1: read once a head set it",
        "treino.server.scheduler.x_schedule__mutmut_19": "head_may_use = None: read once a head set it",
        "treino.server.scheduler.x__victims__mutmut_4": "free - stopping: where it is short of free + stopping, the "
        "loop starts at free + stopping, already enough, and returns []",
        "treino.server.scheduler.x__victims__mutmut_5": "free + stopping > need: at equality the loop returns [] too",
    },
    "audit": {
        "treino.govern.audit.x__cpf_is_valid__mutmut_18": "zip() without strict: n digits, n weights",
        "treino.govern.audit.x__cpf_is_valid__mutmut_3": "digits[1] * 11 == digits only where digits[0] * 11 == digits",
        "treino.govern.audit.x__cpf_is_valid__mutmut_15": "zip(strict=None): n digits, n weights",
        "treino.govern.audit.x__cpf_is_valid__mutmut_30": "zip(strict=False): n digits, n weights",
        "treino.govern.audit.x__fast_hash__mutmut_2": "SQLite: a detail that is not text was tampered with; its fast "
        "hash, if built, differs, and the slow path finds the same",
        "treino.govern.audit.x__fast_hash__mutmut_3": "SQLite: a REAL column gives time back as a float; any other "
        "value was tampered with, and its fast hash, if built, differs",
        "treino.govern.audit.x__chain_rows__mutmut_2": "SQLite: the Core path reads the same rows (slower)",
        "treino.govern.audit.x__chain_rows__mutmut_3": "SQLite: the Core path reads the same rows (slower)",
        "treino.govern.audit.x__chain_rows__mutmut_4": "SQLite: the Core path reads the same rows (slower)",
        "treino.govern.audit.x__chain_rows__mutmut_5": "PostgreSQL only: the Core path",
        "treino.govern.audit.x__chain_rows__mutmut_6": "PostgreSQL only: the Core path",
        "treino.govern.audit.x__chain_rows__mutmut_7": "PostgreSQL only: the Core path",
        "treino.govern.audit.x__chain_rows__mutmut_8": "PostgreSQL only: the Core path",
        "treino.govern.audit.x__chain_rows__mutmut_11": "compile(dialect=None): the default dialect writes the same "
        "SELECT for SQLite",
        "treino.govern.audit.x__chain_rows__mutmut_12": "SQLite: seq is the rowid, so a scan is in seq order",
        "treino.govern.audit.x__chain_rows__mutmut_15": 'SQLite: the quoted "SEQ" still names the seq column',
        "treino.govern.audit.x__verify__mutmut_3": "checkpoints ordered by id alone: those of one seq still come in id "
        "order, and they are looked up by seq",
        "treino.govern.audit.x__verify__mutmut_4": "SQLite: the checkpoints of one seq come in id (rowid) order anyway",
        "treino.govern.audit.x__verify__mutmut_5": "checkpoints ordered by id alone: as mutmut_3",
        "treino.govern.audit.x__verify__mutmut_6": "SQLite: checkpoints ordered by seq alone: as mutmut_4",
        "treino.govern.audit.xǁAuditLogǁ_cached_head__mutmut_1": "no cached head: the same head is read from the table",
        "treino.govern.audit.xǁAuditLogǁ_cached_head__mutmut_2": "no cached head: the same head is read from the table",
        "treino.govern.audit.xǁAuditLogǁ_cached_head__mutmut_3": "no cached head: read from the table",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_9": "SQL keywords are case-insensitive",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_10": "SQL keywords and unquoted names are case-insensitive",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_11": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_12": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_13": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_14": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_15": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_16": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_17": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_18": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_19": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_20": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_21": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_22": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_23": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_24": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_25": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_26": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁhold_chain__mutmut_27": "PostgreSQL only: its advisory lock",
        "treino.govern.audit.xǁAuditLogǁ_insert__mutmut_40": "no cached head: the same head is read from the table",
        "treino.govern.audit.xǁAuditLogǁ_insert__mutmut_14": "PostgreSQL only: the ORM insert",
        "treino.govern.audit.xǁAuditLogǁ_insert__mutmut_15": "PostgreSQL only: the ORM insert",
        "treino.govern.audit.xǁAuditLogǁ_insert__mutmut_16": "PostgreSQL only: the ORM insert",
        "treino.govern.audit.xǁAuditLogǁ_insert__mutmut_17": "PostgreSQL only: the ORM insert",
        "treino.govern.audit.x__fields__mutmut_8": "get_close_matches without n: the best match still comes first",
        "treino.govern.audit.x__fields__mutmut_10": "get_close_matches(n=2): the best match still comes first",
        "treino.govern.audit.x__fields__mutmut_36": "json.dumps(ensure_ascii=None): falsy, as False",
        "treino.govern.audit.x__fields__mutmut_38": "json.dumps() escapes parse back to the same detail",
        "treino.govern.audit.x__fields__mutmut_41": "ensure_ascii=True: escapes parse back to the same detail",
        "treino.govern.audit.x__slow_hash__mutmut_5": "zip(strict=None): a row has the 9 FIELDS and its hash",
        "treino.govern.audit.x__slow_hash__mutmut_8": "zip() without strict: a row has the 9 FIELDS and its hash",
        "treino.govern.audit.x__slow_hash__mutmut_11": "zip(strict=False): a row has the 9 FIELDS and its hash",
        "treino.govern.audit.x__slow_hash__mutmut_16": "SQLite: detail is text, or a tampered value that fails both "
        "ways (json.loads raises, or the canonical JSON differs)",
        "treino.govern.audit.x__rows__mutmut_2": "yield_per=None: the same rows, fetched at once instead of in batches",
        "treino.govern.audit.x__rows__mutmut_6": 'SQLite: the quoted "SEQ" still names the seq column',
        "treino.govern.audit.x_export__mutmut_96": "json.dumps(ensure_ascii=None): falsy, as False",
        "treino.govern.audit.x_render_processing_records__mutmut_178": "json.dumps(ensure_ascii=None): falsy, as False",
        "treino.govern.audit.x_processing_records__mutmut_8": "reads of no dataset: a None key, never looked up",
        "treino.govern.audit.x_processing_records__mutmut_33": "join(DatasetVersion) without ON: inferred from the one "
        "foreign key, job_datasets.version_id",
        "treino.govern.audit.x_processing_records__mutmut_35": "join(DatasetVersion, None): the same inferred ON",
        "treino.govern.audit.x_processing_records__mutmut_53": "no jobs: count over an empty IN is 0 as well",
        "treino.govern.audit.x_processing_records__mutmut_63": "join(User, None): inferred from grants.user_id's key",
        "treino.govern.audit.x_processing_records__mutmut_65": "join(User) without ON: inferred from grants.user_id",
        "treino.govern.audit.x_processing_records__mutmut_26": "SQLite: its plan reads the jobs in id order already",
        "treino.govern.audit.x_processing_records__mutmut_74": "SQLite: a scan of erasures is in id (rowid) order",
        "treino.govern.audit.x_processing_records__mutmut_195": "SQLite: a scan of transfers is in id (rowid) order",
    },
}


def survivors(folder: Path, *, timeouts: bool = False) -> list[str]:
    """The names of the mutants in `folder` that survived (or that no test ran; with `timeouts`, or whose tests ran
    past mutmut's time limit, as a loaded machine makes them)."""
    mutmut = Path(sys.executable).with_name("mutmut")
    out = subprocess.run([str(mutmut), "results"], cwd=folder, capture_output=True, text=True, check=False).stdout
    ends = ("survived", "no tests", "timeout") if timeouts else ("survived", "no tests")
    return [line.split(":")[0].strip() for line in out.splitlines() if line.rstrip().endswith(ends)]


def settings(target: Target, tests: list[str] | None = None) -> str:
    """The [tool.mutmut] table of `target`'s folder (its tests, or `tests` for one run)."""
    selection = [*(tests or target.tests), "-p", "no:xdist", "-p", "no:randomly"]
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["src"]\n'
        f"only_mutate = {json.dumps([target.module])}\n"
        f"pytest_add_cli_args_test_selection = {json.dumps(selection)}\n"
        'process_isolation = "forkserver"  # torch is not fork-safe\n'
        'also_copy = ["scripts", "examples"]\n'
    )


def prepare(name: str, target: Target, tests: list[str] | None = None) -> Path:
    """`target`'s folder, its copies of the sources and tests refreshed (mutmut's own records kept)."""
    folder = WORK / name
    folder.mkdir(parents=True, exist_ok=True)
    for part in COPIED:
        shutil.rmtree(folder / part, ignore_errors=True)
        shutil.copytree(ROOT / part, folder / part, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    pyproject = (ROOT / "pyproject.toml").read_text()
    head, _, tail = pyproject.partition("\n[tool.mutmut]\n")
    rest = tail.split("\n[", 1)  # the tables after [tool.mutmut], if any
    kept = head + ("\n[" + rest[1] if len(rest) == 2 else "")
    (folder / "pyproject.toml").write_text(kept + settings(target, tests))
    # Which tests reach which function is collected afresh (one run of the tests): mutmut adds only new tests' to
    # what it recorded, so the mutants of a function added since would not be run against the tests that reach it.
    (folder / "mutants" / "mutmut-stats.json").unlink(missing_ok=True)
    # mutmut copies the sources' data files (the catalog's CSVs) into mutants/ once, and refreshes only the Python
    # files it mutates: a catalog row changed since would be read stale there.
    copied = folder / "mutants" / "src"
    # A run stopped while mutmut writes the mutated module leaves it empty, and mutmut, seeing it newer than the
    # source, would keep it: every test then fails to import it. Removed, it is written again (the results in its
    # .meta file are kept for the functions that did not change).
    mutated = folder / "mutants" / target.module
    if mutated.is_file() and mutated.stat().st_size == 0:
        mutated.unlink()
    if copied.is_dir():
        for path in (ROOT / "src").rglob("*"):
            if path.is_file() and path.suffix not in (".py", ".pyc"):
                dest = copied / path.relative_to(ROOT / "src")
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(path, dest)
    return folder


def run(folder: Path, mutants: str | None, children: int | None = None) -> None:
    mutmut = Path(sys.executable).with_name("mutmut")
    env = {**os.environ, "PYTHONPATH": ""}  # the folder's own copy of src is what mutmut mutates
    limit = ["--max-children", str(children)] if children else []
    names = mutants.split() if mutants else []  # several globs, space-separated
    subprocess.run([str(mutmut), "run", *limit, *names], cwd=folder, env=env, check=False)
    # mutmut keeps a mutant's verdict until its function changes: the survivors and timeouts are tried again,
    # against the tests as they are now (a test added since may kill them).
    equivalent = {name for names in EQUIVALENT.values() for name in names}
    left = [] if mutants else [m for m in survivors(folder, timeouts=True) if m not in equivalent]
    if left:
        subprocess.run([str(mutmut), "run", *limit, *left], cwd=folder, env=env, check=False)


def score(folder: Path) -> dict[str, int] | None:
    """mutmut's counts for `folder` (killed, survived, ...), or None before its first run."""
    mutmut = Path(sys.executable).with_name("mutmut")
    if not (folder / "mutants").is_dir():
        return None
    subprocess.run([str(mutmut), "export-cicd-stats"], cwd=folder, capture_output=True, check=False)
    stats = folder / "mutants" / "mutmut-cicd-stats.json"
    return json.loads(stats.read_text()) if stats.is_file() else None


def table(names: list[str]) -> int:
    """The score table; 1 if a target that ran is below TARGET_SCORE."""
    print(f"{'target':<12} {'module':<26} {'killed':>7} {'survived':>9} {'equivalent':>11} {'timeout':>8} {'score':>6}")
    below = 0
    for name in names:
        stats = score(WORK / name)
        module = TARGETS[name].module.removeprefix("src/treino/")
        if stats is None:
            print(f"{name:<12} {module:<26} {'(not run)':>7}")
            continue
        # a mutant no test runs survives as surely as one the tests miss; an equivalent one is no mutant at all
        left = survivors(WORK / name)
        equivalent = [m for m in left if m in EQUIVALENT.get(name, {})]
        tried = sum(stats.get(k, 0) for k in ("killed", "survived", "no_tests", "timeout", "suspicious", "segfault"))
        tried -= len(equivalent)
        rate = stats["killed"] / tried if tried else 0.0
        below += tried > 0 and rate < TARGET_SCORE
        print(
            f"{name:<12} {module:<26} {stats['killed']:>7} {len(left) - len(equivalent):>9} {len(equivalent):>11} "
            f"{stats['timeout']:>8} {rate:>6.0%}"
        )
    print(f"target: {TARGET_SCORE:.0%} killed of the mutants run, equivalent ones aside (scripts/mutate.py EQUIVALENT)")
    return 1 if below else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--targets", default=",".join(TARGETS), help=f"comma-separated, of: {', '.join(TARGETS)}")
    parser.add_argument(
        "--mutants", default=None, help="mutmut's mutant names (globs, space-separated), e.g. 'treino.govern.cpf.x__*'"
    )
    parser.add_argument("--max-children", type=int, default=None, help="mutants tested at once (default: one per core)")
    parser.add_argument(
        "--tests",
        default=None,
        help="pytest's arguments for this run instead of the target's (as a shell splits them): a fast first pass over "
        "many mutants; what survives it is run again with the target's own tests before it counts as a survivor",
    )
    parser.add_argument("--table-only", action="store_true", help="print the scores of earlier runs, run nothing")
    args = parser.parse_args()
    names = [n.strip() for n in args.targets.split(",") if n.strip()]
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        print(f"Unknown target(s) {', '.join(unknown)}. To fix: use some of {', '.join(TARGETS)}.", file=sys.stderr)
        return 2
    if not args.table_only:
        for name in names:
            print(f"== {name}: mutants of {TARGETS[name].module}", flush=True)
            tests = shlex.split(args.tests) if args.tests else None
            run(prepare(name, TARGETS[name], tests), args.mutants, args.max_children)
            if tests:  # the first pass's survivors against all of the target's tests
                left = [m for m in survivors(WORK / name, timeouts=True) if m not in EQUIVALENT.get(name, {})]
                if left:
                    print(f"== {name}: {len(left)} survivor(s) of the first pass, with the target's tests", flush=True)
                    run(prepare(name, TARGETS[name]), " ".join(left), args.max_children)
    return table(names)


if __name__ == "__main__":
    sys.exit(main())
