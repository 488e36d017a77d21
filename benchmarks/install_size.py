"""What `pip install treino` and each of its extras put on disk, as a table with the planner's target (≤ 60 MB).

    python benchmarks/install_size.py                (make bench: offline, from this environment)
    python benchmarks/install_size.py --fresh-venv   (also pip-installs the wheel into fresh venvs: needs the index)

Offline, an install is measured from this environment, the way pip would lay it out: the dependency closure of
pyproject.toml's requirements for the extras named (environment markers evaluated for this machine, `treino[x]`
followed), and for each distribution in it the bytes on disk of every file its RECORD lists (pip lists the .pyc files
it compiles; their sizes are read from disk). treino itself is counted as its wheel would install: src/treino's files
and the bytecode compiled from its modules. The venv's own pip and setuptools are not counted: every venv has them.

The figures are those of the versions installed here (`make venv`): torch is the CPU build (a CUDA build is a few GB
more, with its nvidia-* libraries). --fresh-venv cross-checks the offline figure: it builds the wheel, installs it with
`pip install 'treino-*.whl[EXTRAS]'` into a new venv per row, and measures site-packages with the same file walk,
less what a bare venv holds.
"""

from __future__ import annotations

import argparse
import marshal
import os
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
from dataclasses import dataclass, field
from importlib.metadata import Distribution, PackageNotFoundError, distribution
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from rich.console import Console
from rich.markup import escape
from rich.table import Table

REPO = Path(__file__).resolve().parents[1]
PYPROJECT = REPO / "pyproject.toml"
SOURCE = REPO / "src" / "treino"
MB = 1e6
TARGET_PLANNER_MB = 60.0  # the issue's: a planner-only install
PIP_TIMEOUT_S = 900
BIGGEST_SHOWN = 3  # distributions named in each row's detail
# (what it is for, extras): `pip install 'treino[extras]'`
ROWS: list[tuple[str, tuple[str, ...]]] = [
    ("the planner", ()),
    ("client of a server", ("client",)),
    ("treino server", ("server",)),
    ("server, PostgreSQL", ("postgres",)),
    ("trace, bench", ("torch",)),
    ("recommend --html", ("report",)),
    ("everything", ("all",)),
]
FRESH_ROWS = ("the planner", "client of a server", "treino server")  # small enough to download for the cross-check

WIDTH_WHEN_PIPED = 150
console = Console() if Console().is_terminal else Console(width=WIDTH_WHEN_PIPED)


# the closure --------------------------------------------------------------------------------------------------------
def project_requirements(pyproject: Path = PYPROJECT) -> tuple[list[Requirement], dict[str, list[Requirement]]]:
    """(core requirements, {extra: its requirements}) as pyproject.toml declares them."""
    project = tomllib.loads(pyproject.read_text())["project"]
    extras = project.get("optional-dependencies", {})
    return (
        [Requirement(r) for r in project["dependencies"]],
        {name: [Requirement(r) for r in reqs] for name, reqs in extras.items()},
    )


@dataclass
class Closure:
    """The distributions an install needs: canonical name -> the installed one (None where it is not installed here)."""

    distributions: dict[str, Distribution | None] = field(default_factory=dict)

    @property
    def missing(self) -> list[str]:
        return sorted(name for name, d in self.distributions.items() if d is None)


def _applies(req: Requirement, extras: set[str]) -> bool:
    """Whether `req` applies on this machine when its distribution was asked for with `extras`."""
    if req.marker is None:
        return True
    return any(req.marker.evaluate({"extra": extra}) for extra in extras | {""})


def closure(extras: tuple[str, ...], pyproject: Path = PYPROJECT) -> Closure:
    """Every distribution `pip install 'treino[extras]'` brings, treino excluded."""
    core, optional = project_requirements(pyproject)
    result = Closure()
    own_extras: set[str] = set()
    pending: list[tuple[Requirement, set[str]]] = [(r, set()) for r in core]

    def add_own(names: set[str]) -> None:
        for name in sorted(names - own_extras):
            if name not in optional:
                raise KeyError(f"pyproject.toml has no extra {name!r}")
            own_extras.add(name)
            pending.extend((r, {name}) for r in optional[name])

    add_own(set(extras))
    seen: set[tuple[str, frozenset[str]]] = set()
    while pending:
        req, asked_with = pending.pop()
        if not _applies(req, asked_with):
            continue
        name = canonicalize_name(req.name)
        if name == "treino":  # `treino[client]` in an extra: that extra's requirements too
            add_own(set(req.extras))
            continue
        key = (name, frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        try:
            dist: Distribution | None = distribution(name)
        except PackageNotFoundError:
            dist = None
        if name not in result.distributions or result.distributions[name] is None:
            result.distributions[name] = dist
        if dist is not None:
            pending.extend((Requirement(r), set(req.extras)) for r in dist.requires or [])
    return result


# sizes --------------------------------------------------------------------------------------------------------------
def installed_bytes(dist: Distribution) -> int:
    """Bytes on disk of the files `dist`'s RECORD lists (its compiled .pyc included), console scripts included."""
    total = 0
    for path in dist.files or []:
        try:
            total += os.stat(str(dist.locate_file(path))).st_size
        except OSError:  # a file RECORD lists that is gone (rare): not on disk, not counted
            continue
    return total


def treino_bytes(source: Path = SOURCE) -> int:
    """treino as its wheel installs it: the package's files, and the .pyc pip compiles for each module (16-byte
    header + the marshalled code object, as py_compile writes it)."""
    total = 0
    for path in source.rglob("*"):
        if "__pycache__" in path.parts or not path.is_file():
            continue
        total += path.stat().st_size
        if path.suffix == ".py":
            code = compile(path.read_bytes(), str(path), "exec", dont_inherit=True)
            total += 16 + len(marshal.dumps(code))
    return total


@dataclass
class Measured:
    row: str
    install: str  # what follows `pip install`
    total_bytes: int
    count: int  # distributions, treino included
    biggest: list[tuple[str, int]]
    missing: list[str]


def _install(extras: tuple[str, ...]) -> str:
    return f"treino[{','.join(extras)}]" if extras else "treino"


def measure(row: str, extras: tuple[str, ...]) -> Measured:
    found = closure(extras)
    sizes = {name: installed_bytes(d) for name, d in found.distributions.items() if d is not None}
    sizes["treino"] = treino_bytes()
    biggest = sorted(sizes.items(), key=lambda item: -item[1])[:BIGGEST_SHOWN]
    return Measured(row, _install(extras), sum(sizes.values()), len(sizes), biggest, found.missing)


# the cross-check: real installs -------------------------------------------------------------------------------------
def _site_bytes(venv: Path) -> int:
    purelib = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    return sum(p.stat().st_size for p in Path(purelib).rglob("*") if p.is_file() and not p.is_symlink())


def _pip(*args: str) -> None:
    result = subprocess.run(args, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(args[:4])} ... exited {result.returncode}: {result.stderr.strip()[-400:]}")


def fresh_installs(rows: list[tuple[str, tuple[str, ...]]]) -> dict[str, int]:
    """row -> bytes a fresh venv's site-packages gains from `pip install 'treino-*.whl[extras]'`."""
    measured: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="treino-install-size-") as tmp:
        dist_dir = Path(tmp) / "dist"
        _pip(sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dist_dir), str(REPO))
        wheel = next(dist_dir.glob("treino-*.whl"))
        python = sysconfig.get_config_var("BINDIR") + "/python3"  # the base interpreter, not this venv's
        bare = Path(tmp) / "bare"
        _pip(python, "-m", "venv", str(bare))
        baseline = _site_bytes(bare)
        for row, extras in rows:
            venv = Path(tmp) / f"venv-{len(measured)}"
            _pip(python, "-m", "venv", str(venv))
            target = f"{wheel}[{','.join(extras)}]" if extras else str(wheel)
            _pip(str(venv / "bin" / "pip"), "install", "--quiet", target)
            measured[row] = _site_bytes(venv) - baseline
    return measured


# the table ----------------------------------------------------------------------------------------------------------
def table(rows: list[Measured], fresh: dict[str, int]) -> Table:
    out = Table(
        title="Install size: what `pip install ...` adds to site-packages (MB = 10^6 bytes)", title_justify="left"
    )
    for column in ("pip install", "for", "dists", "size", "fresh venv", "target", "ratio", "verdict", "largest (MB)"):
        right = column in ("dists", "size", "fresh venv", "target", "ratio")
        out.add_column(column, justify="right" if right else "left", no_wrap=column != "for")
    for m in rows:
        mb = m.total_bytes / MB
        target = TARGET_PLANNER_MB if m.row == "the planner" else None
        ratio = f"{mb / target:.2f}" if target else "-"
        verdict = ("[green]ok[/]" if mb <= target else "[bold red]over[/]") if target else ""
        largest = ", ".join(f"{name} {size / MB:.0f}" for name, size in m.biggest)
        if m.missing:
            largest += f"; not installed here, not counted: {', '.join(m.missing)}"
        out.add_row(
            escape(m.install),  # 'treino[server]' is not Rich markup
            m.row,
            str(m.count),
            f"{mb:,.1f} MB",
            f"{fresh[m.row] / MB:,.1f} MB" if m.row in fresh else "-",
            f"≤ {target:g} MB" if target else "-",
            ratio,
            verdict,
            largest,
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--fresh-venv", action="store_true", help="Also install into fresh venvs (needs the index).")
    args = parser.parse_args()
    rows = [measure(row, extras) for row, extras in ROWS]
    fresh = fresh_installs([r for r in ROWS if r[0] in FRESH_ROWS]) if args.fresh_venv else {}
    console.print(table(rows, fresh))
    console.print(
        "size: this environment's installed distributions in each install's dependency closure (offline); "
        "torch here is the CPU build. fresh venv: `--fresh-venv`, a real pip install from the index, less a bare "
        "venv's pip and setuptools."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
