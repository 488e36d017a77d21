"""What each layer may import (docs/server-layout.md), read from the source's import statements: cli -> server ->
govern / plan / catalog -> orm / errors. A mutant that makes govern/ import server/ again (the cycle that
govern/models.py and server/db.py once had) fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "treino"
# package -> the treino packages it must never import (at module level or inside functions)
FORBIDDEN = {
    "plan": {"server", "cli", "govern", "bench", "report", "trace", "job"},
    "catalog": {"server", "cli", "govern"},
    "govern": {"server", "cli"},
    "server": {"cli"},
    "integrations": {"server", "cli", "govern", "plan", "catalog", "bench", "report", "trace"},  # the SDK only
    "orm.py": {"server", "cli", "govern", "plan"},
    "errors.py": {"server", "cli", "govern", "plan", "catalog"},
}
# inside server/: the engine and the lower modules never reach up into the HTTP layer
SERVER_LOWER = ["service.py", "scheduler.py", "backend.py", "supervisor.py", "submission.py", "lineage.py", "tasks.py"]


def treino_imports(path: Path) -> set[str]:
    """Every `treino.X...` module that `path` imports, as dotted names."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.startswith("treino.")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("treino.") and not node.level:
            names.add(node.module)
    return names


def files_of(part: str) -> list[Path]:
    target = SRC / part
    return [target] if target.is_file() else sorted(target.rglob("*.py"))


@pytest.mark.parametrize("part", sorted(FORBIDDEN))
def test_no_layer_imports_the_layers_above_it(part: str) -> None:
    offences = [
        f"{path.relative_to(SRC)} imports {name}"
        for path in files_of(part)
        for name in sorted(treino_imports(path))
        if name.split(".")[1] in FORBIDDEN[part]
    ]
    assert offences == []


def test_the_job_engine_does_not_import_the_http_layer_or_governance_routes() -> None:
    offences = [
        f"server/{name} imports {module}"
        for name in SERVER_LOWER
        for module in sorted(treino_imports(SRC / "server" / name))
        if module.startswith(("treino.server.api", "treino.server.web", "treino.server.governance"))
    ]
    assert offences == []


def test_the_layering_test_sees_imports() -> None:
    # the check above is only worth something if it finds imports where there are some
    assert "treino.orm" in treino_imports(SRC / "govern" / "models.py")
    assert "treino.server.context" in treino_imports(SRC / "server" / "api" / "deps.py")
