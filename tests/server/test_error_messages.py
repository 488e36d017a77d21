"""The server's errors reach a client in its language: every TreinoError raised in src/treino/server carries a Msg
with a pt-BR entry (the body sends it as data beside the English text: treino.server.api.errors), never a message
built from a plain f-string or str literal, except those of ALLOWED, and the CLI words what the server sent."""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Collection, Mapping
from pathlib import Path

import httpx

from treino import errors
from treino.i18n import PT_BR, Msg, current, use
from treino.pt_br import PT

SERVER = Path(__file__).resolve().parents[2] / "src" / "treino" / "server"
# Every class of treino.errors: TreinoError and its subclasses
ERRORS = {name for name, cls in vars(errors).items() if isinstance(cls, type) and issubclass(cls, errors.TreinoError)}
MESSAGE_AT = {"PolicyViolation": 1, "SpecError": 1}  # (rule, detail), (field, message); the others: the first

# Files whose errors are left as plain English, each with why. Their messages are checked when `treino server`
# starts (its options, the machine, the database, the cluster): printed once on the operator's console, never an
# answer to a client, so they are not sent as data.
ALLOWED = {
    "anchors.py": "--audit-anchor's folder, checked at start",
    "claims.py": "the data dir's lock and the listening port, taken at start",
    "db.py": "the database's checks at start (quick_check, can it be opened)",
    "inventory.py": "--devices and NVML, read at start",
    "isolation.py": "--job-user, checked and created at start",
    "settings.py": "the server key's length, checked at start",
    "slurm.py": "slurm.conf, the partitions and the shared folder, checked at start",
    "webhooks.py": "--webhook and --webhook-secret-file, checked at start",
}


def _plain(node: ast.AST) -> bool:
    """A message built from text alone: an f-string, a str literal, or a concatenation of them."""
    if isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        return True
    if isinstance(node, ast.BinOp):
        return _plain(node.left) or _plain(node.right)
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str"


def _problems(node: ast.AST, scope: ast.AST, returns_msg: set[str]) -> list[str]:
    """Why the message expression `node` (in function `scope`) is not a Msg with a catalog entry; [] when it is."""
    if isinstance(node, ast.IfExp):
        return _problems(node.body, scope, returns_msg) + _problems(node.orelse, scope, returns_msg)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "Msg":
        template = node.args[0] if node.args else None
        if not (isinstance(template, ast.Constant) and isinstance(template.value, str)):
            return ["a Msg whose template is not a literal"]
        text = template.value
        has_words = re.search("[A-Za-z]", re.sub(r"\{[^}]*\}", "", text))
        return [f"no pt-BR entry for {text!r}"] if has_words and text not in PT else []
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in returns_msg | {"message_of"}:
        return []  # a function of the module that returns a Msg, or an exception's own message
    if isinstance(node, ast.Name):  # a variable: plain if any assignment to it in the function is plain text
        values = [
            a.value
            for a in ast.walk(scope)
            if (isinstance(a, ast.Assign) and any(isinstance(t, ast.Name) and t.id == node.id for t in a.targets))
            or (isinstance(a, ast.AnnAssign) and isinstance(a.target, ast.Name) and a.target.id == node.id)
        ]
        return [f"{node.id} is plain text"] if any(v is not None and _plain(v) for v in values) else []
    if _plain(node):
        return ["plain text"]
    return []  # computed elsewhere (a parameter, an attribute)


def error_classes() -> set[str]:
    """treino.errors' classes and every class of the package derived from one (govern.anchors.AnchorFileError)."""
    classes = [
        node
        for path in SERVER.parent.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ClassDef)
    ]
    names = set(ERRORS)
    while more := {
        c.name for c in classes if c.name not in names and any(getattr(b, "id", "") in names for b in c.bases)
    }:
        names |= more
    return names


def raised_messages(
    root: Path = SERVER,
    allowed: Mapping[str, str] = ALLOWED,
    skip: Collection[str] = (),
    names: Collection[str] = ERRORS,
) -> dict[str, list[str]]:
    """{file:line: problems} for every error of the classes `names` (treino.errors' by default) built in the files
    under `root` (src/treino/server by default), but those of `allowed` (paths relative to `root`) and of the folders
    `skip`."""
    found: dict[str, list[str]] = {}
    for path in sorted(root.rglob("*.py")):
        relative = path.relative_to(root)
        if relative.as_posix() in allowed or (relative.parts[0] in skip and len(relative.parts) > 1):
            continue
        tree = ast.parse(path.read_text(), str(path))
        returns_msg = {
            f.name
            for f in ast.walk(tree)
            if isinstance(f, ast.FunctionDef)
            and isinstance(f.returns, ast.Name | ast.Constant)
            and (getattr(f.returns, "id", None) == "Msg" or getattr(f.returns, "value", None) == "Msg")
        }
        for scope in ast.walk(tree):
            if not isinstance(scope, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            for node in ast.walk(scope):
                if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names):
                    continue
                at = MESSAGE_AT.get(node.func.id, 0)
                message = node.args[at] if len(node.args) > at else None
                if message is None:
                    message = next((k.value for k in node.keywords if k.arg in ("message", "detail")), None)
                if message is not None:
                    where = f"{relative.as_posix()}:{node.lineno}"
                    found[where] = _problems(message, scope, returns_msg)
    return found


def test_every_error_the_server_raises_is_a_msg_with_a_pt_br_entry() -> None:
    found = raised_messages(names=error_classes())
    assert len(found) > 80  # the walk sees the raises (jobs, datasets, users, quotas, erasures, ...)
    assert {w: p for w, p in found.items() if p} == {}
    assert all((SERVER / name).exists() for name in ALLOWED)  # an allowance for a file that is gone goes too


def test_the_walk_catches_an_f_string() -> None:
    """The check itself can fail: an f-string, a str literal, str(exc) and a variable holding text are caught."""
    source = """
def f(job_id, exc):
    text = f"No job {job_id}."
    raise NotFound(f"No job {job_id}.")
    raise Conflict("Job is running.")
    raise SpecError("gpus", str(exc))
    raise Forbidden(text)
    raise NotFound(Msg("No job {job_id} here at all, zz.", job_id=job_id))
    raise NotFound(Msg("No job {job_id}. To fix: list jobs with 'treino jobs'.", job_id=job_id))
"""
    scope = ast.parse(source).body[0]
    calls = [n for n in ast.walk(scope) if isinstance(n, ast.Call) and getattr(n.func, "id", "") in ERRORS]
    problems = [_problems(c.args[MESSAGE_AT.get(c.func.id, 0)], scope, set()) for c in calls]  # type: ignore[attr-defined]
    assert [bool(p) for p in problems] == [True, True, True, True, True, False]


def _answer(status: int, body: object) -> httpx.Response:
    return httpx.Response(status, content=json.dumps(body).encode(), headers={"content-type": "application/json"})


def test_an_error_body_carries_its_msg_and_the_cli_words_it() -> None:
    """error_body -> JSON -> the CLI's _http_error: the English detail as it was, the pt-BR one from the data; an
    older server's answer (no *_msg) stays English."""
    from treino.cli.client import _http_error
    from treino.server.api.errors import error_body

    not_found = errors.NotFound(Msg("No job {job_id}. To fix: list jobs with 'treino jobs'.", job_id=1234))
    refused = errors.PolicyViolation(
        "purpose",
        Msg(
            "dataset {name} allows {allowed}, not {asked} (LGPD Art. 6 I). To fix: grant one of the dataset's "
            "purposes.",
            name="faces",
            allowed="research",
            asked="ads",
        ),
    )
    invalid = errors.SpecError(
        "since", Msg("{text!r} is before 1970 or in the future. To fix: a past date, or e.g. 30d.", text="1900-01-01")
    )
    bodies = [error_body(e) for e in (not_found, refused, invalid)]
    assert bodies[0]["detail"] == "No job 1234. To fix: list jobs with 'treino jobs'."  # English, as before
    assert bodies[1]["detail"]["message"] == str(refused) and bodies[1]["detail"]["message"].startswith("purpose: ")
    assert (
        bodies[2]["detail"][0]["message"]
        == "'1900-01-01' is before 1970 or in the future. To fix: a past date, or e.g. 30d."
    )
    statuses = (404, 403, 422)
    was = current()
    use(PT_BR)
    try:
        shown = [
            current().error(_http_error(_answer(c, b), "the request")) for c, b in zip(statuses, bodies, strict=True)
        ]
        older = current().error(_http_error(_answer(404, {"detail": bodies[0]["detail"]}), "the request"))
    finally:
        use(was)
    assert shown[0] == "Não existe o job 1234. Como corrigir: liste os jobs com 'treino jobs'."
    assert shown[1] == (
        "recusado (finalidade): o dataset faces permite research, não ads (LGPD Art. 6 I). Como corrigir: conceda uma "
        "das finalidades do dataset."
    )
    assert shown[2] == (
        "O servidor recusou o pedido (422):\n  since: '1900-01-01' é anterior a 1970 ou está no futuro. Como "
        "corrigir: uma data passada, ou p. ex. 30d."
    )
    assert older == "No job 1234. Como corrigir: list jobs with 'treino jobs'."  # no data: English, its fix marked
