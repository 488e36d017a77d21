"""The CLI's help and usage errors in its language: each command's description, each option's help, Click's --help
line and usage prefix, Typer's panel titles and [default: ...] marks, and every message Click and Typer give for a
usage error ("Missing option '--model' / '-m'.", "No such option: --x", "Invalid value for '--gpus': ..."), from
treino.pt_br's catalog (keyed by the English text, as every other string; a text it lacks shows English).

Typer reads help texts when the command tree is built, before --lang is parsed; `help_language` reads --lang from
argv itself (else LC_ALL, LC_MESSAGES, LANG), and `localize` rewrites the built tree before it runs.

Typer's Click (typer/_click, since Typer 0.22) composes its usage errors with f-strings, not gettext, and Typer converts
values with pydantic, whose messages are English too: there is no hook to give them a catalog. So a usage error is
worded again where it is shown (its `format_message`): its English text is matched against USAGE_ERRORS, Click's,
Typer's and pydantic's own templates with their fields named, and rendered from the template's pt-BR entry; the inner
message of "Invalid value for {param_hint}: {message}" is worded the same way. A text no template matches stays as
Click gave it. tests/cli/test_cli_usage_errors.py reads the installed Click, Typer and pydantic and fails on a message
no template covers.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from functools import cache
from typing import Any

from treino.i18n import N_, Locale, from_env, language

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


# Click's, Typer's and pydantic's usage errors, as they word them (typer/_click/exceptions.py, parser.py, core.py;
# typer/core.py, _param_types.py, _coercion.py; pydantic_core's error types int_parsing, float_parsing, ...), with
# their fields named. A field named message or error is itself one of these, worded in turn; label is a catalog text.
USAGE_ERRORS = (
    N_("Error: {message}"),
    N_("Try '{command} {option}' for help."),
    N_("Invalid value for {param_hint}: {message}"),
    N_("Invalid value: {message}"),
    # MissingParameter: param_type is argument, option or parameter; a choice adds its list
    N_("Missing argument {param_hint}. {message}"),
    N_("Missing option {param_hint}. {message}"),
    N_("Missing parameter {param_hint}. {message}"),
    N_("Missing argument {param_hint}."),
    N_("Missing option {param_hint}."),
    N_("Missing parameter {param_hint}."),
    N_("Missing argument."),
    N_("Missing option."),
    N_("Missing parameter."),
    N_("Choose from:\n\t{choices}"),
    N_("No such option: {name} (Possible options: {possibilities})"),
    N_("No such option: {name}"),
    N_("Option {name} does not take a value."),
    N_("Option {name} requires an argument."),
    N_("Option {name} requires {nargs} arguments."),
    N_("Argument {name} takes {nargs} values."),
    N_("Got unexpected extra argument(s) ({args})"),
    N_("Missing command."),
    N_("No such command {name}."),
    N_("No such command {name}. Did you mean {suggestions}?"),
    N_("{message}. Did you mean {suggestions}?"),
    N_("Could not open file {filename}: {message}"),
    N_("unknown error"),
    N_("Value must be an iterable."),
    N_("Value {value} is not a valid {type_name}."),
    N_("{value} is not one of {choices}."),
    N_("{label} {filename} does not exist."),
    N_("{label} {filename} is a file."),
    N_("{label} {filename} is a directory."),
    N_("{label} {filename} is not readable."),
    N_("{label} {filename} is not writable."),
    # pydantic (Typer's conversion of int, float, bool, Enum and Literal values)
    N_("Input should be a valid integer, unable to parse string as an integer"),
    N_("Input should be a valid integer, got a number with a fractional part"),
    N_("Input should be a valid integer"),
    N_("Input should be a valid number, unable to parse string as a number"),
    N_("Input should be a valid number"),
    N_("Input should be a finite number"),
    N_("Input should be a valid boolean, unable to interpret input"),
    N_("Input should be a valid boolean"),
    N_("Input should be a valid string"),
    N_("Input should be {expected}"),
    N_("Value error, {error}"),
)
_NESTED = ("message", "error")  # fields that are themselves usage errors
_LABELS = {"file": N_("file"), "dir": N_("directory"), "path": N_("path")}  # typer's path_type_name


@cache
def _patterns() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """Each template as a regex of its text with its fields as groups, the most specific first: the longest fixed
    start ("Value error, {error}" before "{value} is not one of {choices}."), then the most fixed text."""
    field = re.compile(r"\{(\w+)\}")

    def literal(template: str) -> tuple[int, int]:
        return len(template.split("{")[0]), len(field.sub("", template))

    def pattern(template: str) -> re.Pattern[str]:
        parts = field.split(template)  # text, field, text, field, ...
        regex = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        return re.compile(regex, re.S)

    return tuple((t, pattern(t)) for t in sorted(USAGE_ERRORS, key=literal, reverse=True))


def usage_error(text: str, loc: Locale) -> str:
    """A usage error Click or Typer worded in English, in `loc`'s language (as it is when no template matches)."""
    if not loc.pt:
        return text
    for template, pattern in _patterns():
        found = pattern.fullmatch(text)
        if found:
            fields = found.groupdict()
            for name in _NESTED:
                if name in fields:
                    fields[name] = usage_error(fields[name], loc)
            if "label" in fields:
                fields["label"] = loc.t(_LABELS.get(fields["label"], fields["label"]))
            return loc.t(template).format(**fields)
    return text


def click_exceptions() -> Any:
    """The exceptions module of the Click that Typer runs: its own (typer._click) or, before Typer 0.22, click's."""
    try:
        return importlib.import_module("typer._click.exceptions")
    except ImportError:
        return importlib.import_module("click.exceptions")


def _localize_errors(loc: Locale) -> None:
    """Every usage error's message in `loc`'s language, as Typer's panel shows it (format_message) and as Click's
    plain `show` does (without Rich: "Error: ...", "Try '...' for help.")."""
    from typer import echo

    errors = click_exceptions()
    # each class of the hierarchy that words a message (TyperException or ClickException, BadParameter, ...)
    wording: set[Any] = {
        base
        for cls in vars(errors).values()
        if isinstance(cls, type) and issubclass(cls, errors.ClickException)
        for base in cls.__mro__
        if "format_message" in base.__dict__ and base is not object
    }
    for cls in wording:
        english = getattr(cls.__dict__["format_message"], "english", cls.__dict__["format_message"])

        def format_message(self: Any, english: Any = english) -> str:
            if type(self).__name__ == "NoArgsIsHelpError":  # its message is the help page, translated already
                return str(english(self))
            return usage_error(english(self), loc)

        format_message.english = english  # type: ignore[attr-defined]  # Click's own, when localize runs again
        cls.format_message = format_message

    def show_usage_error(self: Any, file: Any = None) -> None:
        err = file is None
        if self.ctx is not None:
            hint = ""
            if self.ctx.command.get_help_option(self.ctx) is not None:
                hint = loc.t("Try '{command} {option}' for help.").format(
                    command=self.ctx.command_path, option=self.ctx.help_option_names[0]
                )
            echo(f"{self.ctx.get_usage()}\n{hint}", file=file, err=err)
        echo(loc.t("Error: {message}").format(message=self.format_message()), file=file, err=err)

    def show(self: Any, file: Any = None) -> None:
        echo(loc.t("Error: {message}").format(message=self.format_message()), file=file, err=file is None)

    errors.ClickException.show = show
    errors.UsageError.show = show_usage_error


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
    """Every help text of a click command tree (Typer's), in `loc`'s language; Typer's panel titles and Click's
    usage errors too."""
    _localize_errors(loc)  # in English too: Click's own words again, after a pt-BR run in the same process
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
