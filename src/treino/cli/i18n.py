"""The CLI's help in its language: each command's description, each option's help and Typer's panel titles, from
treino.pt_br's catalog (keyed by the English text, as every other string; a text it lacks shows English).

Typer reads help texts when the command tree is built, before --lang is parsed; `help_language` reads --lang from
argv itself (else LC_ALL, LC_MESSAGES, LANG), and `localize` rewrites the built tree before it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from treino.i18n import Locale, from_env, language

PANEL_TITLES = ("OPTIONS_PANEL_TITLE", "COMMANDS_PANEL_TITLE", "ARGUMENTS_PANEL_TITLE")  # typer.rich_utils


def help_language(argv: Sequence[str]) -> Locale:
    """--lang X or --lang=X anywhere in argv; the environment's language otherwise (or when X is no language)."""
    for i, arg in enumerate(argv):
        code = argv[i + 1] if arg == "--lang" and i + 1 < len(argv) else arg.removeprefix("--lang=")
        if code != arg or arg == "--lang":
            try:
                return language(code)
            except ValueError:  # --lang's own check says so, with the usage error's exit code
                break
    return from_env()


def localize(command: Any, loc: Locale) -> None:
    """Every help text of a click command tree (Typer's), in `loc`'s language; Typer's panel titles too."""
    if not loc.pt:
        return
    import typer.rich_utils

    for name in PANEL_TITLES:
        setattr(typer.rich_utils, name, loc.t(getattr(typer.rich_utils, name)))
    _localize(command, loc)


def _localize(command: Any, loc: Locale) -> None:
    if command.help:
        command.help = loc.t(command.help)
    if command.short_help:
        command.short_help = loc.t(command.short_help)
    if getattr(command, "epilog", None):  # the root's exit codes
        command.epilog = loc.t(command.epilog)
    for param in command.params:
        if getattr(param, "help", None):
            param.help = loc.t(param.help)
    for sub in getattr(command, "commands", {}).values():
        _localize(sub, loc)


def help_texts(command: Any) -> dict[str, str]:
    """Every command description of the tree, and the root's option helps: {text: where}, for the catalog's test."""
    texts = {p.help: f"{command.name} {p.name}" for p in command.params if getattr(p, "help", None)}

    def walk(cmd: Any, path: str) -> None:
        if cmd.help:
            texts.setdefault(cmd.help, path)
        if getattr(cmd, "epilog", None):
            texts.setdefault(cmd.epilog, f"{path} (epilog)")
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(command, "treino")
    return texts
