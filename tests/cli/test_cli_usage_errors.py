"""Click's, Typer's and pydantic's usage errors in pt-BR (treino.cli.i18n.USAGE_ERRORS): in real `treino` processes
(exit code 2, no English word left), and against the installed sources, whose every usage-error message must have a
template with a pt-BR entry, so that a Typer or Click upgrade that words a new one fails here, naming it."""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli_i18n import SRC, treino, untranslated
from treino.cli.i18n import USAGE_ERRORS, click_exceptions, usage_error
from treino.i18n import PT_BR
from treino.pt_br import PT


@pytest.mark.parametrize(
    ("args", "english", "portuguese"),
    [
        (["plan", "train"], "Missing option '--model' / '-m'.", "Falta a opção '--model' / '-m'."),
        (["show"], "Missing argument 'job_id'.", "Falta o argumento 'job_id'."),
        (
            ["plan", "train", "-m", "x", "-g", "y", "--gpus", "a"],
            "Invalid value for '--gpus': Input should be a valid integer",
            "Valor inválido para '--gpus': Deveria ser um número inteiro",
        ),
        (["plan", "train", "--bogus"], "No such option: --bogus", "Opção inexistente: --bogus"),
        (["bogus"], "No such command 'bogus'. Did you mean", "Comando inexistente: 'bogus'. Você quis dizer"),
        (["show", "1", "2"], "Got unexpected extra argument(s) (2)", "Argumento(s) inesperado(s) a mais: 2"),
        (["plan", "train", "--precision"], "Option '--precision' requires an argument.", "A opção '--precision'"),
        (["gpus", "--help=x"], "Option '--help' does not take a value.", "A opção '--help' não aceita valor."),
        (
            ["completion", "zsx"],
            "Invalid value for 'shell': Value error, 'zsx' is not one of 'bash', 'zsh', 'fish'.",
            "Valor inválido para 'shell': 'zsx' não está entre 'bash', 'zsh', 'fish'.",
        ),
        (["completion"], "Missing argument 'shell'. Choose from:", "Falta o argumento 'shell'. Escolha entre:"),
    ],
)
def test_a_usage_error_in_pt_br_by_lang_keeps_exit_code_2(args: list[str], english: str, portuguese: str) -> None:
    pt = treino(*args, lang="pt_BR.UTF-8")
    en = treino(*args)
    flat = " ".join(pt.stderr.replace("│", " ").split())
    assert pt.returncode == en.returncode == 2, pt.stderr
    assert portuguese in flat and "Erro" in flat, flat  # (a parser's error has no "Tente ..." line)
    assert untranslated(flat.replace("python -m treino", "")) == [], flat
    assert english in " ".join(en.stderr.replace("│", " ").split())  # English as Click words it


def test_a_usage_error_without_rich_in_pt_br() -> None:
    """Click's plain output (TYPER_USE_RICH=0): its "Error:" and "Try ... for help." lines too."""
    import subprocess
    import sys

    env = {"PATH": "/usr/bin:/bin", "LANG": "pt_BR.UTF-8", "TYPER_USE_RICH": "0", "PYTHONPATH": str(SRC)}
    out = subprocess.run([sys.executable, "-m", "treino", "show"], capture_output=True, text=True, env=env)
    assert out.returncode == 2
    assert out.stderr.splitlines()[1:] == [
        "Tente 'python -m treino show --help' para ver a ajuda.",
        "Erro: Falta o argumento 'job_id'.",
    ]


def _source_dir(module: str) -> Path:
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


# Exceptions and calls whose message argument a user reads (positional index of the message, and its keyword)
RAISERS = {
    "UsageError": 0,
    "BadParameter": 0,
    "MissingParameter": 0,
    "BadArgumentUsage": 0,
    "ClickException": 0,
    "fail": 0,
    "NoSuchOption": 1,
    "BadOptionUsage": 1,
    "FileError": 1,
}
# Methods whose returned or assigned texts are the message (format_message, show) or a part of it
WORDING = {"format_message", "show", "__init__", "get_missing_message", "resolve_command"}
# ValueErrors a user reads: raised inside a pydantic validator, shown as "Value error, ..." (the others are Typer's
# own programming errors: "Expected one list item type")
VISIBLE_VALUE_ERRORS = {"coerce_cli_choice"}
# Developer errors of Typer's callback checks, raised as ClickException when treino's code is wrong, not its user's
DEVELOPER = {"Too many CLI parameter callback function parameters", "Invalid autocompletion callback parameters: {}"}


def _shape(node: ast.AST) -> str | None:
    """A message's text with each value as {}: a str literal, an f-string, or gettext's _("...").format(...)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(
            v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else "{}" for v in node.values
        )
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        inner = node.func.value
        if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id == "_" and inner.args:
            text = _shape(inner.args[0])
            return re.sub(r"\{[^{}]*\}", "{}", text) if text is not None else None
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "_" and node.args:
        return _shape(node.args[0])
    return None


def _name(func: ast.AST) -> str:
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _message_nodes(func: ast.FunctionDef) -> Iterator[ast.AST]:
    """The expressions of a function that are a message a user reads: a raiser's message argument, Click's plain
    "Error: ..." line, and the texts a wording method returns or assigns to its message."""
    for node in ast.walk(func):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            where = RAISERS.get(name)
            if (name == "ValueError" and func.name in VISIBLE_VALUE_ERRORS) or (name == "echo" and func.name == "show"):
                where = 0
            if where is not None:
                yield from node.args[where : where + 1]
                yield from (kw.value for kw in node.keywords if kw.arg in ("message", "hint"))
        if func.name in WORDING and isinstance(node, ast.Return | ast.Assign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else []
            if isinstance(node, ast.Return) or any(_name(t) in ("message", "msg", "hint", "suggest") for t in targets):
                yield from (v for v in ast.walk(node.value) if isinstance(v, ast.JoinedStr | ast.Constant | ast.Call))


def click_messages() -> dict[str, str]:
    """Every message of a usage error in the installed Click that Typer runs and in Typer: {shape: file:line}."""
    typer_dir = _source_dir("typer")
    click_dir = Path(click_exceptions().__file__).parent
    files = [click_dir / n for n in ("exceptions.py", "parser.py", "core.py")]
    files += [typer_dir / n for n in ("core.py", "_param_types.py", "_coercion.py", "main.py")]
    found: dict[str, str] = {}
    for path in files:
        tree = ast.parse(path.read_text(), str(path))
        # an f-string's own pieces are not messages of their own
        parts = {id(c) for f in ast.walk(tree) if isinstance(f, ast.JoinedStr) for c in ast.walk(f) if c is not f}
        for func in ast.walk(tree):
            if not isinstance(func, ast.FunctionDef):
                continue
            for node in _message_nodes(func):
                text = _shape(node)
                if text is None or id(node) in parts:
                    continue
                text = text.strip()  # "Try '{} {}' for help.\n"
                if re.search("[A-Za-z]", text.replace("{}", "")) and text not in DEVELOPER:
                    found.setdefault(text, f"{path.parent.name}/{path.name}:{getattr(node, 'lineno', '?')}")
    return found


def _covered(shape: str) -> bool:
    """A template of USAGE_ERRORS holds the message: its text, each {} any value (MissingParameter's {param_type}
    is one of argument, option, parameter: a template for each)."""
    regex = re.compile(".*".join(re.escape(part) for part in shape.split("{}")), re.S)
    return any(regex.search(template) for template in USAGE_ERRORS)


def test_every_usage_error_of_click_and_typer_has_a_template_with_a_pt_br_entry() -> None:
    messages = click_messages()
    assert len(messages) > 25 and "Missing command." in messages  # the walk finds them
    assert "{} is not one of {}." in messages and "No such option: {}" in messages and "Error: {}" in messages
    assert sorted(f"{where}: {text!r}" for text, where in messages.items() if not _covered(text)) == []
    assert [t for t in USAGE_ERRORS if t not in PT] == []


# pydantic's error types for the values Typer converts for treino's options (int, float, bool, an Enum, a Literal)
PYDANTIC_TYPES = (
    "int_parsing",
    "int_from_float",
    "int_type",
    "float_parsing",
    "float_type",
    "finite_number",
    "bool_parsing",
    "bool_type",
    "string_type",
    "enum",
    "literal_error",
    "value_error",
)


def test_pydantics_messages_have_templates() -> None:
    from pydantic_core._pydantic_core import list_all_errors

    templates: dict[str, str] = {str(e["type"]): e["message_template_python"] for e in list_all_errors()}
    assert [t for t in PYDANTIC_TYPES if templates[t] not in USAGE_ERRORS] == []


def test_every_option_of_every_command_words_a_bad_value_in_pt_br() -> None:
    """Each option and argument of the whole CLI converts bad values through Typer itself; its error reads in
    Portuguese, with no English word."""
    import typer

    from treino.cli.app import app

    errors = click_exceptions()
    seen: dict[str, str] = {}

    def walk(command: Any, path: str) -> None:
        for param in command.params:
            if not hasattr(param, "get_runtime_param"):
                continue
            for value in ("zz", "1.5", ""):
                with typer.Context(command, info_name=path) as ctx:
                    try:
                        param.get_runtime_param().coerce(value, param=param, ctx=ctx)
                    except errors.BadParameter as exc:
                        seen.setdefault(exc.format_message(), f"{path} {param.name}")
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, f"{path} {name}")

    walk(typer.main.get_command(app), "treino")
    assert len(seen) > 20
    worded = {english: usage_error(english, PT_BR) for english in seen}
    assert [f"{seen[e]}: {e}" for e, pt in worded.items() if pt == e or untranslated(pt)] == []
