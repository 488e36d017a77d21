"""`pip install treino` is the planner alone: its commands run where only the core dependencies can be imported, and
a command that needs an extra says which one in a line. The extras the code names are pyproject.toml's.

The planner-only install is played by a real `treino` process in which every package that the core dependencies do
not bring is made unimportable (a meta-path finder raising ModuleNotFoundError, as a missing package does): fastapi,
sqlalchemy, pyarrow, httpx, matplotlib, torch, numpy and everything else this environment holds beyond the core.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
from functools import cache
from importlib.metadata import packages_distributions as _packages_distributions
from pathlib import Path
from types import ModuleType

import pytest
from packaging.utils import canonicalize_name

from treino.cli.app import app
from treino.cli.extras import command_name
from treino.extras import EXTRA_OF_MODULE

REPO = Path(__file__).resolve().parents[2]
SRC = REPO / "src" / "treino"
TIMEOUT_S = 120
# rows of EXTRA_OF_MODULE that another package imports when treino asks for what needs them
IMPORTED_FOR_TREINO = {
    "psycopg": "SQLAlchemy, for `treino server --db postgresql+psycopg://...`",
    "accelerate": "transformers' Trainer (treino.integrations.hf)",
}

# Runs `treino ARGS...` (argv[2:]) with the top-level modules in argv[1] (a JSON list) made unimportable.
_PLANNER_ONLY = """
import importlib.abc, json, sys
BLOCKED = frozenset(json.loads(sys.argv[1]))
preloaded = BLOCKED & {name.partition(".")[0] for name in sys.modules}
assert not preloaded, f"imported before the blocker: {sorted(preloaded)}"

class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NotInstalled())
sys.argv = ["treino", *sys.argv[2:]]
from treino.cli.app import main
main()
"""


@cache
def install_size() -> ModuleType:
    """benchmarks/install_size.py: pyproject.toml's requirements and their closure in this environment."""
    spec = importlib.util.spec_from_file_location("install_size", REPO / "benchmarks" / "install_size.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@cache
def packages_distributions() -> dict[str, list[str]]:
    """top-level module -> the distributions providing it, in this environment (a walk of every RECORD: once)."""
    return dict(_packages_distributions())


@cache
def dists_of(extras: tuple[str, ...]) -> frozenset[str]:
    """Canonical names of the distributions `pip install 'treino[extras]'` brings."""
    return frozenset(install_size().closure(extras).distributions)


@cache
def beyond_the_core() -> list[str]:
    """Every top-level module this environment's distributions provide that the core dependencies do not bring
    (nor a venv itself: pip and setuptools, whose _distutils_hack is imported at start)."""
    core = dists_of(()) | {"treino", "pip", "setuptools"}
    return sorted(
        module
        for module, dists in packages_distributions().items()
        if module not in sys.stdlib_module_names and not any(canonicalize_name(d) in core for d in dists)
    )


def planner_only(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", _PLANNER_ONLY, json.dumps(beyond_the_core()), *args],
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(REPO / "src"), "COLUMNS": "200"},
    )


def test_the_planner_only_install_lacks_the_server_stack() -> None:
    # the check below is only worth something if these really are unimportable there
    assert {"fastapi", "sqlalchemy", "pyarrow", "httpx", "matplotlib", "torch", "numpy"} <= set(beyond_the_core())
    assert {"typer", "rich", "pydantic", "yaml"}.isdisjoint(beyond_the_core())


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (
            [
                "plan",
                "train",
                "--model",
                "llama-3-8b",
                "--gpu",
                "h200-sxm",
                "--micro-batch",
                "1",
                "--precision",
                "bf16-true",
            ],
            "FITS:",
        ),
        (["plan", "infer", "--model", "llama-3-8b", "--gpu", "l4"], "llama-3-8b"),
        (["recommend", "--model", "llama-3-8b", "--tokens", "2e9", "--deadline", "3d", "--json"], '"choices"'),
        (["gpus"], "h200-sxm"),
        (["--version"], "treino "),
    ],
    ids=["plan-train", "plan-infer", "recommend", "gpus", "version"],
)
def test_planner_commands_run_with_the_core_dependencies_only(args: list[str], expect: str) -> None:
    out = planner_only(*args)
    assert out.returncode == 0, out.stderr
    assert expect in out.stdout


@pytest.mark.parametrize(
    ("args", "command", "extra"),
    [
        (["server", "--data-dir", "{tmp}/data", "--devices", "cpu:1"], "treino server", "server"),
        (["jobs", "--url", "http://127.0.0.1:9", "--token", "t"], "treino jobs", "client"),
        (
            ["recommend", "--model", "llama-3-8b", "--tokens", "2e9", "--deadline", "3d", "--html", "{tmp}/r.html"],
            "treino recommend",
            "report",
        ),
    ],
    ids=["server", "client", "report"],
)
def test_a_command_that_needs_an_extra_says_which_in_one_line(
    args: list[str], command: str, extra: str, tmp_path: Path
) -> None:
    out = planner_only(*(a.format(tmp=tmp_path) for a in args), cwd=tmp_path)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr
    assert re.fullmatch(
        rf"error: {command} needs the {extra} extra \(this Python has no module named '\w+'\)\. "
        rf"To fix: pip install 'treino\[{extra}\]'\n",
        out.stderr,
    ), out.stderr
    assert not (tmp_path / "data").exists()  # `treino server` stopped before it wrote anything


def test_command_name_follows_the_command_tree() -> None:
    assert command_name(app, ["--debug", "plan", "train", "--model", "server"]) == "treino plan train"
    assert command_name(app, ["grants", "list", "--json"]) == "treino grants list"
    assert command_name(app, ["--debug"]) == "treino"


def test_every_extra_the_code_names_is_an_extra_of_pyproject() -> None:
    _, optional = install_size().project_requirements()
    named = set(EXTRA_OF_MODULE.values())
    for path in [*SRC.rglob("*.py"), REPO / "README.md", *(REPO / "docs").glob("*.md"), REPO / "Makefile"]:
        for group in re.findall(r"treino\[([a-z,-]+)\]", path.read_text()):
            named |= set(group.split(","))
    assert named - set(optional) == set()


@pytest.mark.parametrize("module", sorted(EXTRA_OF_MODULE))
def test_the_extra_named_for_a_module_brings_it(module: str) -> None:
    """The message's extra installs the package that was missing, and the planner alone does not."""
    dists = {canonicalize_name(d) for d in packages_distributions()[module]}  # pynvml: nvidia-ml-py (or pynvml)
    assert dists & dists_of((EXTRA_OF_MODULE[module],))
    assert not dists & dists_of(())


@cache
def third_party_imports() -> dict[str, list[str]]:
    """top-level module -> the files of src/treino that import it (standard library and treino left out)."""
    found: dict[str, list[str]] = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                names = [node.module]
            else:
                continue
            for name in names:
                top = name.partition(".")[0]
                if top != "treino" and top not in sys.stdlib_module_names:
                    found.setdefault(top, []).append(str(path.relative_to(SRC)))
    return found


def test_every_package_treino_imports_is_a_core_dependency_or_an_extras() -> None:
    """A new import of a package that `pip install treino` does not bring needs a row in EXTRA_OF_MODULE (and a lazy
    import), or the planner-only install breaks with a traceback."""
    beyond = set(beyond_the_core())
    unnamed = {
        module: files
        for module, files in third_party_imports().items()
        if module in beyond and module not in EXTRA_OF_MODULE
    }
    assert unnamed == {}
    assert set(EXTRA_OF_MODULE) - set(third_party_imports()) == set(IMPORTED_FOR_TREINO)  # no stale rows
