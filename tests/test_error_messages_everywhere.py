"""Every error treino raises reaches a pt-BR user in pt-BR: each TreinoError built anywhere in src/treino carries a
Msg with a pt-BR entry (the CLI words it with `Locale.error`), never a message built from a plain f-string or str
literal, except in the files of ALLOWED. tests/server/test_error_messages.py checks src/treino/server (whose
messages also travel to clients as data); this test, the rest of the package, with the same walk."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.server.test_error_messages import ERRORS, MESSAGE_AT, _problems, error_classes, raised_messages

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "treino"

# Files whose errors stay plain English, each with why (paths relative to src/treino). A new file that raises a
# TreinoError from plain text fails the test until its messages are Msgs with pt-BR entries, or it is added here.
ALLOWED = {
    # being rewritten by another change: their messages become Msgs with it
    # the Job SDK and what it loads: raised inside the user's own training script, in Python, where the message is
    # read beside a Python traceback in the job's log, as the errors of torch and transformers are
    "job.py": "the Job SDK (Python API, raised in a training script)",
    "sharded.py": "the Job SDK's sharded checkpoints (Python API)",
    "sisa.py": "SISA training for the Job SDK (Python API)",
    "trackers.py": "the Job SDK's tracker bridges (Python API)",
    "integrations/hf.py": "the Hugging Face Trainer callback (Python API)",
    "integrations/lightning.py": "the Lightning callback (Python API)",
    # multi-process ZeRO measurements that tests and benchmarks call from Python; no CLI option reaches them
    "trace/sharded.py": "called from Python (tests, benchmarks), not from the CLI",
}


def raised() -> dict[str, list[str]]:
    return raised_messages(PACKAGE, ALLOWED, skip={"server"}, names=error_classes())  # src/treino/server: its own test


def test_every_error_treino_raises_is_a_msg_with_a_pt_br_entry() -> None:
    assert "AnchorFileError" in error_classes()  # a TreinoError subclass defined outside treino.errors is walked too
    found = raised()
    assert len(found) > 150  # the walk sees the raises (plan, catalog, bench, govern, cli, trace, ...)
    assert {where for where in found if where.startswith(("plan/", "cli/", "catalog/", "govern/", "bench/"))}
    assert {w: p for w, p in found.items() if p} == {}
    assert all((PACKAGE / name).exists() for name in ALLOWED)  # an allowance for a file that is gone goes too


def test_an_allowed_file_still_has_plain_messages() -> None:
    """An allowance that is no longer needed goes: each allowed file raises at least one plain-text error."""
    found = raised_messages(PACKAGE, {}, skip={"server"}, names=error_classes())
    needless = []
    for name in ALLOWED:
        if not any(where.startswith(f"{name}:") and problems for where, problems in found.items()):
            needless.append(name)
    assert needless == []


def test_the_walk_catches_plain_text_outside_the_server() -> None:
    """The check can fail here too: a plan error from an f-string, a usage error from a literal, a catalog error
    wrapping str(exc); a Msg lacking its pt-BR entry; not a Msg that has one."""
    source = """
def f(tp, gpus, exc):
    raise PlanError(f"--tp {tp} does not divide --gpus {gpus}.")
    raise UsageError("--csv and --json are two formats.")
    raise CatalogError(str(exc))
    raise PlanError(Msg("--tp {tp} divides nothing at all, zz.", tp=tp))
    raise PlanError(Msg("{split} does not divide --gpus {gpus}. To fix: use divisors of the GPU count.", split=tp,
                        gpus=gpus))
"""
    scope = ast.parse(source).body[0]
    calls = [n for n in ast.walk(scope) if isinstance(n, ast.Call) and getattr(n.func, "id", "") in ERRORS]
    problems = [_problems(c.args[MESSAGE_AT.get(c.func.id, 0)], scope, set()) for c in calls]  # type: ignore[attr-defined]
    assert [bool(p) for p in problems] == [True, True, True, True, False]
