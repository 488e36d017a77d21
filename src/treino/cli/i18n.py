"""The CLI's help in its language: each command's description, each option's help, Click's --help line and usage
prefix, and Typer's panel titles and [default: ...] marks, from treino.pt_br's catalog (keyed by the English text, as
every other string; a text it lacks shows English).

Typer reads help texts when the command tree is built, before --lang is parsed; `help_language` reads --lang from
argv itself (else LC_ALL, LC_MESSAGES, LANG), and `localize` rewrites the built tree before it runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from treino.i18n import Locale, from_env, language

# typer.rich_utils' texts of a help page and of a usage error's panel
PANEL_TITLES = (
    "OPTIONS_PANEL_TITLE",
    "COMMANDS_PANEL_TITLE",
    "ARGUMENTS_PANEL_TITLE",
    "DEFAULT_STRING",
    "REQUIRED_LONG_STRING",
    "ENVVAR_STRING",
    "DEPRECATED_STRING",
    "ERRORS_PANEL_TITLE",
    "ABORTED_TEXT",
    "RICH_HELP",
)


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
    _localize_help_option(command, loc)
    _localize_usage(command, loc)
    for sub in getattr(command, "commands", {}).values():
        _localize(sub, loc)


def _localize_help_option(command: Any, loc: Locale) -> None:
    """Click makes each command's --help option when a help page is asked for ("Show this message and exit.")."""
    made = command.get_help_option

    def get_help_option(ctx: Any) -> Any:
        option = made(ctx)
        if option is not None and option.help:
            option.help = loc.t(option.help)
        return option

    command.get_help_option = get_help_option


def _localize_usage(command: Any, loc: Locale) -> None:
    """The usage line's "Usage:" (Click writes it; the command's own pieces, [OPTIONS] COMMAND, stay as they are)."""

    def format_usage(ctx: Any, formatter: Any) -> None:
        pieces = command.collect_usage_pieces(ctx)
        formatter.write_usage(ctx.command_path, " ".join(pieces), prefix=f"{loc.t('Usage')}: ")

    command.format_usage = format_usage


def help_texts(command: Any) -> dict[str, str]:
    """Every help text of the tree: each command's description and epilog, each option's and argument's help, and
    the --help option's: {text: where}, for the catalog's test."""
    import typer

    texts: dict[str, str] = {}

    def walk(cmd: Any, path: str) -> None:
        if cmd.help:
            texts.setdefault(cmd.help, path)
        if getattr(cmd, "epilog", None):
            texts.setdefault(cmd.epilog, f"{path} (epilog)")
        with typer.Context(cmd, info_name=path) as ctx:
            params = [*cmd.params, cmd.get_help_option(ctx)]
        for param in params:
            if getattr(param, "help", None):
                texts.setdefault(param.help, f"{path} {'/'.join(param.opts)}")
        for name, sub in getattr(cmd, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(command, "treino")
    return texts
