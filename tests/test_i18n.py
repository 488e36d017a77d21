"""Every text treino shows has a pt-BR entry (treino.pt_br.PT), read from the sources themselves, so that a new
string without one fails here, naming it:

- the dashboard's templates, parsed with Jinja2: every literal given to t() or fmt(), and no English words in the
  text outside {{ }} and tags (only the technical names of TEMPLATE_WORDS may stay as they are);
- the Python sources: every Msg("...") template and every literal given to tr(...) or a Locale's .t(...);
- the texts the views translate by value: job states, failure reasons and outcomes, the planner's memory parts,
  phases, bounds, advice labels and caveats, and its notes.

The rendered pages and CLI outputs are checked in tests/web/test_i18n_pages.py and tests/cli/test_cli_i18n.py
(no English word of ENGLISH_WORDS in what a pt-BR reader sees).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from jinja2 import Environment, nodes

from treino.i18n import EN, PT_BR, Joined, Locale, Msg, from_env, parse
from treino.pt_br import PT

SRC = Path(__file__).resolve().parents[1] / "src" / "treino"
TEMPLATES = SRC / "server" / "web" / "templates"
TRANSLATED_CALLS = {"t", "fmt", "tr"}  # t(text), fmt(template, **fields), tr(text or template, **fields)
# Names and units a pt-BR page shows as they are, outside {{ }} in the templates
TEMPLATE_WORDS = {"treino", "KiB", "GiB", "ZeRO-3", "sha256", "Slurm", "BRL", "USD", "v", "C"}

# English words that have no place in what a pt-BR reader sees (the checks of rendered pages and CLI output use it).
# Not here: the loanwords the catalog keeps (job, dataset, log, loss, token, tokens, checkpoint, flags, total, plan).
_WORDS = """
    the and of to with for from on in is are not yes this that per each has needs run runs step steps queue running
    queued succeeded failed cancelled stopping state owner name memory fits does fit cheaper month months offer
    search overview out submitted priority devices outcome history attempt started ended path size disk version
    purpose erased models kind cancel resubmit scratch continues compute peak headroom change speed same time
    scaling efficiency cost hours dedicated cloud pays above weights gradients optimizer activations temporaries
    overhead prior unverified bound sequence free node nodes address partitions utilisation temperature recent
    waiting metrics keys key points last smoothing raw compare remove records signed chain intact broken lineage
    requests subject requested deadline actor action detail forbidden found error logged tried refused role may ask
    them only fix share params trainable over link offloaded rate prices between pricing
"""
ENGLISH_WORDS = set(_WORDS.split())


def _constant(node: nodes.Node | ast.AST) -> str | None:
    """A template or Python string literal, "a" + "b" included; None when the text is computed."""
    if isinstance(node, nodes.Const | ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
        left, right = _constant(node.left), _constant(node.right)
        return left + right if left is not None and right is not None else None
    return None


def template_keys() -> dict[str, set[str]]:
    """Every literal given to t() or fmt() in the templates: {key: templates using it}."""
    env = Environment()
    used: dict[str, set[str]] = {}
    for path in sorted(TEMPLATES.glob("*.html")):
        tree = env.parse(path.read_text())
        for call in tree.find_all(nodes.Call):
            if isinstance(call.node, nodes.Name) and call.node.name in TRANSLATED_CALLS and call.args:
                text = _constant(call.args[0])
                if text is not None:
                    used.setdefault(text, set()).add(path.name)
    return used


def template_text() -> dict[str, list[str]]:
    """The words of each template's text outside {{ }}, {% %}, {# #} and HTML tags (Jinja2's lexer splits them)."""
    env = Environment()
    found: dict[str, list[str]] = {}
    for path in sorted(TEMPLATES.glob("*.html")):
        text = "".join(value if kind == "data" else " " for _line, kind, value in env.lex(path.read_text()))
        visible = re.sub(r"<[^>]*>", " ", re.sub(r"<(script|style)\b.*?</\1>", " ", text, flags=re.S))
        words = [w for w in re.findall(r"[A-Za-z][A-Za-z0-9-]*", visible) if w not in TEMPLATE_WORDS]
        if words:
            found[path.name] = words
    return found


def python_keys() -> dict[str, set[str]]:
    """Every Msg("...") template and every literal given to tr(...), N_(...) or .t(...) in treino's sources, and the
    progress bars' titles and step names (steps(...), on_step(...): treino.cli.progress shows them translated); a
    template of numbers alone, "{n:,.1f}", needs no entry."""
    used: dict[str, set[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        if path.name == "pt_br.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if not isinstance(node, ast.Call) or not node.args:
                continue
            f = node.func
            name = f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
            if name in {"Msg", "tr", "N_", "steps", "on_step"} or (name == "t" and isinstance(f, ast.Attribute)):
                text = _constant(node.args[0])
                if text is not None and re.search("[A-Za-z]", re.sub(r"\{[^}]*\}", "", text)):  # not "{n:,}"
                    used.setdefault(text, set()).add(str(path.relative_to(SRC)))
    return used


def value_keys() -> set[str]:
    """Texts the views translate by value (t(j.state), t(p.label), each(" + ") of advice...)."""
    from treino.bench.runner import STAGES
    from treino.plan.advice import CHANGES
    from treino.server.db import FailureReason, JobState, StopRequest
    from treino.server.web.plan_view import MEMORY_PARTS

    keys = {s.value for s in JobState} | {r.value for r in FailureReason} | {r.value for r in StopRequest}
    keys |= {label for label, _attr, _colour in MEMORY_PARTS}
    keys |= {c.change for c in CHANGES} | {c.caveat for c in CHANGES if c.caveat}
    keys |= {"loss", "backward", "optimizer step", "backward, recompute"}  # plan.memory's phases
    keys |= {"compute-bound", "memory-bound", "nvlink", "pcie", "dedicated", "cloud", "GPU", "CPU"}
    keys |= {"The optimizer step runs on the CPU (DeepSpeed ZeRO-Offload)."}  # plan.memory's note
    keys |= {"analytic", "trace", "tokens", "images", "none", "storage", "cpu"}  # plan methods, data units, bottlenecks
    keys |= set(STAGES)  # treino bench's stages, its progress bar's step names
    keys |= {"larger than RAM", "buffered (cached)"}  # treino.bench.storage's read methods (the bench report's)
    return keys


def _missing(keys: set[str] | dict[str, set[str]]) -> list[str]:
    return sorted(
        f"{k!r} ({', '.join(sorted(keys[k]))})" if isinstance(keys, dict) else repr(k) for k in keys if k not in PT
    )


def test_every_template_text_has_a_pt_br_entry() -> None:
    assert _missing(template_keys()) == []


def test_templates_hold_no_untranslated_text() -> None:
    assert template_text() == {}


def test_every_message_template_of_the_code_has_a_pt_br_entry() -> None:
    assert _missing(python_keys()) == []


def test_every_text_translated_by_value_has_a_pt_br_entry() -> None:
    assert _missing(value_keys()) == []


def test_entries_keep_their_fields_and_fix() -> None:
    """A translation names the same {fields} as its English key, and a "To fix:" becomes "Como corrigir:"."""
    field = re.compile(r"\{([a-z_]*)[!:}]")
    bad = [k for k, v in PT.items() if sorted(field.findall(k)) != sorted(field.findall(v))]
    bad += [k for k, v in PT.items() if ("To fix:" in k) != ("Como corrigir:" in v)]
    assert bad == []


def test_a_msg_is_its_english_text_and_renders_in_portuguese() -> None:
    """treino.server.admission's refusal: numbers, a nested Joined of advice labels and the fix, all translated."""
    advice = Joined(
        "; ",
        [
            Msg(
                "{change} ({peak:.1f} GiB with {keys})",
                change=Joined(" + ", ["ZeRO-3", "full checkpointing"]),
                peak=70.25,
                keys="plan: {zero: 3}",
            )
        ],
    )
    problem = "does not fit: the planner needs {need:.1f} GiB per GPU, the {gpu} has {have:.1f} GiB. "
    msg = Msg(problem + "To fix: {advice}.", need=1234.5, gpu="H200", have=141.0, advice=advice)
    assert (
        str(msg)
        == msg
        == (
            "does not fit: the planner needs 1234.5 GiB per GPU, the H200 has 141.0 GiB. "
            "To fix: ZeRO-3 + full checkpointing (70.2 GiB with plan: {zero: 3})."
        )
    )
    assert EN.msg(msg) == str(msg) and EN.error(ValueError(msg)) == str(msg)
    assert PT_BR.error(ValueError(msg)) == (
        "não cabe: o planejador precisa de 1234,5 GiB por GPU, a H200 tem 141,0 GiB. "
        "Como corrigir: ZeRO-3 + checkpointing completo (70,2 GiB com plan: {zero: 3})."
    )
    assert PT_BR.msg("Unknown text. To fix: do something.") == "Unknown text. Como corrigir: do something."


@pytest.mark.parametrize(
    ("env", "code"),
    [
        ({"LANG": "pt_BR.UTF-8"}, "pt-BR"),
        ({"LANG": "en_US.UTF-8", "LC_MESSAGES": "pt_BR"}, "pt-BR"),
        ({"LANG": "pt_BR.UTF-8", "LC_ALL": "C"}, "en"),
        ({}, "en"),
    ],
)
def test_the_cli_language_follows_lc_all_lc_messages_lang(env: dict[str, str], code: str) -> None:
    assert from_env(env) == Locale(code)
    assert parse(code) == Locale(code)


def test_pt_br_numbers_and_money() -> None:
    assert PT_BR.money(1234.56) == "R$ 1.234,56" and PT_BR.num(1234.5, 1) == "1.234,5"
    assert EN.money(1234.56) == "R$ 1.234,56" and EN.num(1234.5, 1) == "1,234.5"  # reais as on the invoice


@pytest.mark.parametrize("name", sorted(p.name for p in TEMPLATES.glob("*.html")))
def test_every_template_compiles_with_the_dashboards_environment(name: str) -> None:
    from treino.server.web.pages import templates

    templates().get_template(name)  # an unknown filter (|msg instead of msg()) fails here, not on a page


def test_every_command_description_and_option_help_of_the_cli_has_a_pt_br_entry() -> None:
    """`treino --help` and each command's --help (treino.cli.i18n rewrites them): every command's description, every
    option's and argument's help of every command, and Click's own --help line."""
    import typer

    from treino.cli.app import app
    from treino.cli.i18n import help_texts

    texts = help_texts(typer.main.get_command(app))
    assert len(texts) > 240 and "Show this message and exit." in texts
    assert "Tokens per sequence." in texts  # an option of a subcommand (plan train --seq-len)
    assert "Job id, from 'treino jobs'." in texts  # an argument (show JOB_ID)
    assert sorted(f"{where}: {text!r}" for text, where in texts.items() if text not in PT) == []


def test_a_msg_travels_as_data_and_renders_in_the_clients_language() -> None:
    """to_data/from_data, through JSON as the API sends it: nested Msgs and a Joined come back as such and read in
    Portuguese; data that is not a message (an unknown shape, a template its params do not fill) falls back on the
    English text."""
    import json

    from treino.i18n import current, from_data, from_server, to_data, use

    whose = Msg("{kind} {name}", kind=Msg("role"), name="engineer")
    msg = Joined("\n", [Msg("Usage priced at: {basis}", basis="x"), Msg("{n} quota(s)", n=3), whose])
    data = json.loads(json.dumps(to_data(msg)))
    back = from_data(data)
    assert back == str(msg) and isinstance(back, Joined)
    assert PT_BR.msg(back) == "Uso precificado a: x\n3 cota(s)\npapel engineer"
    was = current()
    use(PT_BR)
    try:
        assert from_server("english", data) == "Uso precificado a: x\n3 cota(s)\npapel engineer"
        assert from_server("english", {"template": "{missing} here", "params": {}}) == "english"
        assert from_server("english", {"template": "x {n}", "params": [1]}) == "english"
        assert from_server("english", None) == "english"
    finally:
        use(was)


def test_every_pydantic_template_reproduces_the_installed_pydantic() -> None:
    """Each error type of treino.i18n.PYDANTIC_MSGS, raised by the installed pydantic: one of its templates gives
    pydantic's English exactly (a pydantic upgrade that rewords one fails here, not silently in English) and reads in
    Portuguese; a message no template reproduces stays as pydantic wrote it."""
    from typing import Literal

    from pydantic import BaseModel, ConfigDict, Field, ValidationError

    from treino.i18n import PYDANTIC_MSGS, pydantic_msg

    class Inner(BaseModel):
        x: int = 0

    class Every(BaseModel):
        model_config = ConfigDict(extra="forbid")

        req: int
        gt: int = Field(1, gt=0)
        ge: int = Field(1, ge=1)
        lt: int = Field(0, lt=5)
        le: int = Field(0, le=5)
        i_type: int = Field(0, strict=True)
        i_parse: int = 0
        i_float: int = 0
        f_type: float = Field(0, strict=True)
        f_parse: float = 0
        finite: float = Field(0, allow_inf_nan=False)
        b_type: bool = Field(False, strict=True)
        b_parse: bool = False
        s_type: str = ""
        l_type: list[int] = []
        d_type: dict[str, int] = {}
        inner: Inner | None = None
        lit: Literal["a", "b"] = "a"
        pat: str = Field("a", pattern="^a$")
        s_min1: str = Field("a", min_length=1)
        s_min2: str = Field("aa", min_length=2)
        s_max1: str = Field("", max_length=1)
        s_max2: str = Field("", max_length=2)
        l_min1: list[int] = Field([0], min_length=1)
        l_min2: list[int] = Field([0, 0], min_length=2)
        l_max1: list[int] = Field([], max_length=1)
        l_max2: list[int] = Field([], max_length=2)
        d_max2: dict[str, int] = Field({}, max_length=2)

    bad = {
        "extra": 1, "gt": 0, "ge": 0, "lt": 5, "le": 6, "i_type": "1", "i_parse": "x", "i_float": 1.5, "f_type": "1",
        "f_parse": "x", "finite": float("inf"), "b_type": "yes", "b_parse": "maybe", "s_type": 1, "l_type": 1,
        "d_type": 1, "inner": "x", "lit": "c", "pat": "b", "s_min1": "", "s_min2": "a", "s_max1": "ab", "s_max2": "abc",
        "l_min1": [], "l_min2": [0], "l_max1": [0, 0], "l_max2": [0, 0, 0], "d_max2": {"a": 1, "b": 2, "c": 3},
    }  # fmt: skip
    errors = []
    for value, attributes in ((bad, False), (object(), True)):  # the second: model_attributes_type
        with pytest.raises(ValidationError) as caught:
            Every.model_validate(value, from_attributes=attributes)
        errors += caught.value.errors()
    assert {e["type"] for e in errors} == set(PYDANTIC_MSGS)
    worded = {e["msg"]: pydantic_msg(e, e["msg"]) for e in errors}
    assert [english for english, msg in worded.items() if not isinstance(msg, Msg) or msg != english] == []
    assert [english for english, msg in worded.items() if PT_BR.msg(msg) == english] == []
    assert PT_BR.msg(worded["Input should be 'a' or 'b'"]) == "Deveria ser 'a' ou 'b'"
    assert PT_BR.msg(worded["List should have at least 2 items after validation, not 1"]) == (
        "A lista deve ter pelo menos 2 itens, não 1"
    )
    reworded = {"type": "greater_than", "msg": "Value must exceed 0", "ctx": {"gt": 0}}
    assert pydantic_msg(reworded, "Value must exceed 0") == "Value must exceed 0"
    assert not isinstance(pydantic_msg(reworded, "Value must exceed 0"), Msg)
