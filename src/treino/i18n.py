"""treino's two languages, English and Brazilian Portuguese, for the dashboard and the CLI alike.

Text is keyed by its English form: `Locale("pt-BR").t("Queue")` is the entry of treino.pt_br.PT, the one catalog
(one place to add a translation); a key it lacks shows English, never a key name. tests/test_i18n.py fails on any
key the code translates that the catalog lacks, and on English words left on a pt-BR page or CLI output.

A message with values in it is a `Msg`: a stable English template with named fields, e.g.
`Msg("Job {job_id} belongs to {owner}.", job_id=3, owner="ana")`. A Msg *is* the English string (a str subclass),
so an error raised with one reads the same in logs, JSON and English views; the view layer renders it in its
language with `Locale.msg`, from the template's catalog entry, never by matching words in a finished sentence.
A field that is itself a Msg (or a `Joined` list of them) is translated too; numbers follow the locale.
A Msg the server composes travels to a client as data (`to_data`: its template and fields) beside its English text,
and the client renders it in its own language (`from_data`, then `Locale.msg`).

Numbers, dates and money follow the locale (pt-BR: 1.234,5 · 29/11/2026 14:05 · R$ 1.234,56 via
treino.plan.cost.format_brl). English views: the dashboard writes BRL 1,234.56, the CLI R$ 1.234,56 (its one money
format since it began); docs/i18n.md says why.

The CLI's language: `--lang en|pt-BR`, else LC_ALL, LC_MESSAGES, LANG (pt* -> pt-BR), else English
(`from_env`); the dashboard's: the browser's Accept-Language (`negotiate`).
"""

from __future__ import annotations

import json
import os
import string
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from treino.pt_br import PT

LOCALES = ("en", "pt-BR")
FIX_EN, FIX_PT = "To fix: ", "Como corrigir: "


class Msg(str):
    """An English message built from a template and named fields; it equals its English text."""

    template: str
    params: dict[str, Any]

    def __new__(cls, template: str, /, **params: Any) -> Msg:
        self = super().__new__(cls, template.format(**params))
        self.template = template
        self.params = params
        return self

    def __reduce__(self) -> tuple[Any, ...]:  # pickles (multiprocessing, copy) as the plain English text
        return (str, (str(self),))


class Joined(str):
    """Parts (each a Msg or catalog text) joined by `sep`; equals the English join."""

    sep: str
    parts: tuple[str, ...]

    def __new__(cls, sep: str, parts: Iterable[str]) -> Joined:
        items = tuple(parts)
        self = super().__new__(cls, sep.join(items))
        self.sep = sep
        self.parts = items
        return self

    def __reduce__(self) -> tuple[Any, ...]:
        return (str, (str(self),))


def to_data(text: Any) -> Any:
    """A Msg as JSON data a client renders in its own language (`from_data`): {"template", "params"}, a field that is
    itself a Msg or Joined nested the same way; a Joined as {"sep", "parts"}; any other value as it is."""
    if isinstance(text, Msg):
        return {"template": text.template, "params": {k: _param(v) for k, v in text.params.items()}}
    if isinstance(text, Joined):
        return {"sep": text.sep, "parts": [to_data(p) for p in text.parts]}
    return text


def _param(value: Any) -> Any:
    """A Msg's field as JSON: a Msg or Joined as data, a number or text as it is, anything else (a Path, an
    exception) as its text."""
    if isinstance(value, Msg | Joined):
        return to_data(value)
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return str(value)


def from_data(data: Any) -> Any:
    """`to_data`'s inverse: the Msg (or Joined) again, equal to its English text. ValueError when the data is not
    one (a template whose fields the params lack), for the caller to fall back on the English text."""
    if isinstance(data, dict) and isinstance(data.get("template"), str):
        params = data.get("params") or {}
        if not isinstance(params, dict):
            raise ValueError(f"a message's params must be a mapping, not {type(params).__name__}")
        try:
            return Msg(data["template"], **{str(k): from_data(v) for k, v in params.items()})
        except (KeyError, IndexError, AttributeError, TypeError) as exc:
            raise ValueError(f"the message {data['template']!r} does not match its params: {exc}") from exc
    if isinstance(data, dict) and isinstance(data.get("sep"), str) and isinstance(data.get("parts"), list):
        parts = [from_data(p) for p in data["parts"]]
        return Joined(data["sep"], [p if isinstance(p, str) else str(p) for p in parts])  # a Msg part stays one
    return data


def from_server(text: str, data: Any) -> str:
    """A text a server sent (English), in the CLI's language when it also sent it as data (`to_data`); as sent when
    it did not (an older server, or text that is not treino's), or when the data is not a message."""
    if data:
        try:
            return current().msg(from_data(data))
        except ValueError:  # data this client cannot word (another version's template): the English text
            pass
    return text


def either(parts: Sequence[str]) -> str:
    """'a', 'b' and 'c' as "a or b or c", a Msg whose "or" follows the locale ("a ou b ou c")."""
    if len(parts) < 2:
        return "".join(parts)
    return Msg("{first} or {rest}", first=parts[0], rest=either(parts[1:]))


def json_problem(exc: json.JSONDecodeError) -> Msg:
    """What Python's json module says is wrong (`exc.msg`, e.g. "Expecting value"), as a Msg: pt-BR from the
    catalog, which holds its messages."""
    return Msg(exc.msg.replace("{", "{{").replace("}", "}}"))


def message_of(exc: BaseException) -> str:
    """The message an exception was raised with: its Msg when it was one (str(exc) would be plain English)."""
    first = exc.args[0] if len(exc.args) == 1 else None
    return first if isinstance(first, str) else str(exc)


def _pt_number(text: str) -> str:
    return text.translate(str.maketrans(",.", ".,"))


class _Formatter(string.Formatter):
    """str.format with the locale's numbers, and Msg/Joined fields rendered in the locale."""

    def __init__(self, loc: Locale) -> None:
        self.loc = loc

    def format_field(self, value: Any, format_spec: str) -> str:
        if isinstance(value, Msg | Joined):
            return format(self.loc.msg(value), format_spec)
        text = format(value, format_spec)
        if self.loc.pt and isinstance(value, int | float) and not isinstance(value, bool):
            return _pt_number(text)
        return text


@dataclass(frozen=True)
class Locale:
    code: str  # "en" or "pt-BR"

    @property
    def pt(self) -> bool:
        return self.code == "pt-BR"

    def t(self, text: str) -> str:
        """A fixed text (a label, a header, a state) in this language."""
        return PT.get(text, text) if self.pt else text

    def msg(self, text: str) -> str:
        """A message in this language: a Msg from its template, a Joined part by part, a plain string from the
        catalog; a plain string the catalog lacks keeps its English, with its "To fix:" translated."""
        if isinstance(text, Msg):
            template = self.t(text.template)
            return _Formatter(self).vformat(template, (), text.params) if self.pt else str(text)
        if isinstance(text, Joined):
            return text.sep.join(self.msg(p) for p in text.parts) if self.pt else str(text)
        if not self.pt or text in PT:
            return self.t(text)
        problem, fix, how = text.partition(FIX_EN)
        return f"{self.t(problem.strip())} {FIX_PT}{self.t(how)}" if fix else text

    def error(self, exc: BaseException) -> str:
        """An exception's message in this language (from the Msg it was raised with, when it was)."""
        return self.msg(message_of(exc))

    def num(self, value: float | None, digits: int = 0) -> str:
        """1234.5 -> '1,234.5' (en) or '1.234,5' (pt-BR); None -> an en dash."""
        if value is None:
            return "–"
        text = f"{value:,.{digits}f}"
        return _pt_number(text) if self.pt else text

    def money(self, brl: float) -> str:
        """Reais as Brazilians write them, in either language (the CLI's plans and costs show them so too): the
        amount a Brazilian user reads on an invoice, never mistaken for dollars."""
        from treino.plan.cost import format_brl  # plan/ imports nothing of this module's users: no cycle

        return format_brl(brl)

    def when(self, unix_s: float | None) -> str:
        if unix_s is None:
            return "–"
        fmt = "%d/%m/%Y %H:%M:%S" if self.pt else "%Y-%m-%d %H:%M:%S"
        return time.strftime(fmt, time.localtime(unix_s))

    def duration(self, seconds: float | None) -> str:
        if seconds is None or seconds != seconds or seconds < 0:
            return "–"
        if seconds < 120:
            return f"{self.num(seconds, 0)} s"
        if seconds < 2 * 3600:
            return f"{self.num(seconds / 60, 1)} min"
        if seconds < 3 * 86400:
            return f"{self.num(seconds / 3600, 1)} h"
        return f"{self.num(seconds / 86400, 1)} {self.t('days')}"

    def gib(self, nbytes: float | None) -> str:
        """Bytes as GiB; '–' when unknown (a Slurm node's GPU memory is not reported to the server)."""
        return "–" if nbytes is None else f"{self.num(nbytes / 2**30, 2)} GiB"

    def filters(self) -> dict[str, Callable[..., str]]:
        return {
            "num": self.num,
            "money": self.money,
            "when": self.when,
            "duration": self.duration,
            "gib": self.gib,
            "tr": self.msg,  # a message (Msg, Joined or catalog text) in this language
        }


EN, PT_BR = Locale("en"), Locale("pt-BR")


def parse(code: str) -> Locale:
    """'pt-BR', 'pt_BR.UTF-8', 'pt' -> pt-BR; anything else ('en_US.UTF-8', 'C', 'POSIX', 'de') -> en."""
    lang = code.strip().split(".")[0].replace("_", "-").lower()
    if lang.startswith("pt"):
        return PT_BR
    return EN


def language(code: str) -> Locale:
    """--lang's value: en or pt-BR (any case; pt_BR and pt too). ValueError for any other."""
    normal = code.strip().replace("_", "-").lower()
    if normal in ("en", "en-us", "en-gb"):
        return EN
    if normal in ("pt", "pt-br"):
        return PT_BR
    raise ValueError(Msg("Unknown language {code!r}. To fix: use en or pt-BR.", code=code))


def from_env(environ: Mapping[str, str] | None = None) -> Locale:
    """The CLI's default language, as gettext reads it: the first set of LC_ALL, LC_MESSAGES, LANG."""
    env = os.environ if environ is None else environ
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        if env.get(name):
            return parse(env[name])
    return EN


def negotiate(accept_language: str | None) -> Locale:
    """The first of the browser's languages (by q) that is Portuguese or English; English otherwise."""
    ranked: list[tuple[float, int, str]] = []
    for i, part in enumerate((accept_language or "").split(",")):
        lang, _, params = part.strip().partition(";")
        q = 1.0
        if params.strip().startswith("q="):
            try:
                q = float(params.strip()[2:])
            except ValueError:
                q = 0.0
        ranked.append((-q, i, lang.strip().lower()))
    for _q, _i, lang in sorted(ranked):
        if lang.startswith("pt"):
            return PT_BR
        if lang.startswith("en"):
            return EN
    return EN


# The CLI's language for this process (set once by the root callback from --lang or the environment).
_current = [EN]


def current() -> Locale:
    return _current[0]


def use(loc: Locale) -> None:
    _current[0] = loc


def N_(text: str) -> str:
    """Marks a text for the catalog without translating it here (gettext's N_): a label translated later by value,
    e.g. a table column's name. tests/test_i18n.py reads the marks."""
    return text


def tr(text: str, /, **params: Any) -> str:
    """The CLI's shorthand: `tr("Queue")`, or `tr("{n} jobs", n=3)` (a Msg), in the process's language."""
    return current().msg(Msg(text, **params) if params else text)


# Pydantic's own words for the errors treino's inputs meet most (an offers file, a job spec, an API body), as Msg
# templates (pt-BR in treino.pt_br). The first template of an error's type that reproduces pydantic's English exactly
# is used ("1 character" and "2 characters" are two), so another pydantic version's wording stays as it says it.
PYDANTIC_MSGS: dict[str, tuple[str, ...]] = {
    "missing": (N_("Field required"),),
    "extra_forbidden": (N_("Extra inputs are not permitted"),),
    "greater_than": (N_("Input should be greater than {gt}"),),
    "greater_than_equal": (N_("Input should be greater than or equal to {ge}"),),
    "less_than": (N_("Input should be less than {lt}"),),
    "less_than_equal": (N_("Input should be less than or equal to {le}"),),
    "int_type": (N_("Input should be a valid integer"),),
    "int_parsing": (N_("Input should be a valid integer, unable to parse string as an integer"),),
    "int_from_float": (N_("Input should be a valid integer, got a number with a fractional part"),),
    "float_type": (N_("Input should be a valid number"),),
    "float_parsing": (N_("Input should be a valid number, unable to parse string as a number"),),
    "finite_number": (N_("Input should be a finite number"),),
    "bool_type": (N_("Input should be a valid boolean"),),
    "bool_parsing": (N_("Input should be a valid boolean, unable to interpret input"),),
    "string_type": (N_("Input should be a valid string"),),
    "list_type": (N_("Input should be a valid list"),),
    "dict_type": (N_("Input should be a valid dictionary"),),
    "model_type": (N_("Input should be a valid dictionary or instance of {class_name}"),),
    "model_attributes_type": (N_("Input should be a valid dictionary or object to extract fields from"),),
    "literal_error": (N_("Input should be {expected}"),),
    "string_pattern_mismatch": (N_("String should match pattern '{pattern}'"),),
    "string_too_short": (
        N_("String should have at least {min_length} character"),
        N_("String should have at least {min_length} characters"),
    ),
    "string_too_long": (
        N_("String should have at most {max_length} character"),
        N_("String should have at most {max_length} characters"),
    ),
    "too_short": (
        N_("List should have at least {min_length} item after validation, not {actual_length}"),
        N_("List should have at least {min_length} items after validation, not {actual_length}"),
    ),
    "too_long": (
        N_("List should have at most {max_length} item after validation, not {actual_length}"),
        N_("List should have at most {max_length} items after validation, not {actual_length}"),
        N_("Dictionary should have at most {max_length} items after validation, not more"),
    ),
}


def pydantic_msg(error: Mapping[str, Any], english: str) -> str:
    """A pydantic error's message (`english`: its "msg") as a Msg that a view words in its language (PYDANTIC_MSGS),
    or `english` itself when treino has no template that reproduces it."""
    ctx = {k: v for k, v in (error.get("ctx") or {}).items() if isinstance(v, str | int | float)}
    ctx = {k: int(v) if isinstance(v, float) and v.is_integer() else v for k, v in ctx.items()}  # pydantic: gt=0.0 -> 0
    expected = ctx.get("expected")
    if isinstance(expected, str):  # "'month' or 'hour'": its "or" in the locale's words
        ctx["expected"] = either(expected.split(" or "))
    for template in PYDANTIC_MSGS.get(str(error.get("type")), ()):
        try:
            words = Msg(template, **ctx)
        except (KeyError, IndexError, ValueError):
            continue
        if words == english:
            return words
    return english
