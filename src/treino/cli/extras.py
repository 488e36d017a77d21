"""A command that needs a package of an extra this install lacks says which, in one line (treino.extras)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import typer
import typer.main

from treino.extras import missing_extra


def command_name(app: typer.Typer, args: Sequence[str]) -> str:
    """The command `args` invoke, as a user types it: "treino server", "treino data import". Options and their values
    are skipped; the walk stops at the first command that has no subcommands."""
    command = typer.main.get_command(app)
    words = ["treino"]
    for arg in args:
        subcommands = getattr(command, "commands", None)  # a group's; typer's vendored click, not imported here
        if not isinstance(subcommands, dict):
            break
        if arg in subcommands:
            words.append(arg)
            command = subcommands[arg]
    return " ".join(words)


@contextmanager
def naming_missing_extras(app: typer.Typer, args: Sequence[str]) -> Iterator[None]:
    """Inside: an import of a package that one of treino's extras brings, failing because this Python lacks it,
    becomes a MissingExtra (a TreinoError: one red line, no traceback). Any other import error stands."""
    try:
        yield
    except ModuleNotFoundError as exc:
        error = missing_extra(exc, command_name(app, args))
        if error is None:
            raise
        raise error from exc
