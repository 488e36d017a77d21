"""The extras of `pip install treino`, seen from the code: which extra brings each third-party package treino imports.

`pip install treino` installs the planner only (`treino plan`, `recommend`, `gpus`, `models`): typer, rich, pydantic
and pyyaml, about 30 MB. Everything else comes with an extra of pyproject.toml:

    client      httpx: the commands that talk to a treino server (submit, jobs, logs, data, audit, ...)
    server      `treino server`: FastAPI, uvicorn, SQLAlchemy, Alembic, pyarrow, Jinja2, ... (and the client)
    postgres    psycopg, for `treino server --db postgresql+psycopg://...` (and the server)
    torch       torch, transformers, numpy: `treino plan train --method trace`, `treino bench`
    report      matplotlib: `treino recommend --html`
    hf, lightning, trackers     the integrations and trackers a training script uses
    all         every extra above

So that the planner runs without the rest, a CLI module imports only the standard library, typer, rich, pydantic,
yaml and treino's own light modules at its top, and any other package inside the function that needs it. When that
import fails, `treino.cli.app.main` turns the ModuleNotFoundError into a MissingExtra naming the extra from
EXTRA_OF_MODULE: one line, "treino server needs the server extra (...). To fix: pip install 'treino[server]'".
tests/cli/test_extras.py checks this table against pyproject.toml.
"""

from __future__ import annotations

from treino.errors import MissingExtra

# top-level module -> the extra whose requirements bring it (directly; `server` also brings `client`'s)
EXTRA_OF_MODULE: dict[str, str] = {
    "httpx": "client",
    "fastapi": "server",
    "starlette": "server",
    "anyio": "server",
    "uvicorn": "server",
    "sqlalchemy": "server",
    "alembic": "server",
    "pyarrow": "server",
    "jinja2": "server",
    "prometheus_client": "server",
    "pynvml": "server",
    "psycopg": "postgres",
    "torch": "torch",
    "transformers": "torch",
    "numpy": "torch",
    "matplotlib": "report",
    "accelerate": "hf",
    "lightning": "lightning",
}


def missing_extra(exc: ModuleNotFoundError, command: str) -> MissingExtra | None:
    """The MissingExtra that `exc` means for `command` ("treino server"), or None when the missing module is not a
    package of an extra (a bug, or a submodule missing from an installed package: the import error stands).

    Importing `a.b` where `a` is not installed fails with `exc.name == "a"`, so only a top-level name matches."""
    extra = EXTRA_OF_MODULE.get(exc.name or "")
    if extra is None:
        return None
    return MissingExtra(command, extra, exc.name or "")
