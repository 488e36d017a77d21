"""The CLI's refusals in pt-BR, as users meet them (a real `python -m treino` under LANG=pt_BR.UTF-8): errors raised
by the planner, the catalog, the offers file reader, --residency, a model's config.json and the audit anchor reader
are worded from their Msg (tests/test_error_messages_everywhere.py checks every raise has one), with no English
sentence left, and the same exit codes as in English (2 a usage error, 1 a failure: treino.errors)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.test_cli_i18n import treino, untranslated

PT = "pt_BR.UTF-8"
OFFER_FIELDS = "name,kind,provider,gpu,gpus,price,currency,period,source,as_of"


def _refusals(tmp: Path) -> list[tuple[list[str], int, str, str]]:
    """(argv, exit code, the pt-BR line, the English line) of each refusal."""
    config = tmp / "config.json"
    config.write_text('{"model_type": "llama", "hidden_size": 0}')
    offers = tmp / "offers.csv"
    offers.write_text(f"{OFFER_FIELDS}\nmine,cloud,Acme,h100-sxm,8,-5,USD,hour,our quote,2026-11-01\n")
    anchors = tmp / "anchors.jsonl"
    anchors.write_text('{"v": 1, "seq": "x", "hash": "a", "time": 1, "reason": "x", "hmac": "b"}\n')
    plan = ["plan", "train", "--model", "llama-3-8b", "--gpu", "h100-sxm"]
    return [
        (
            [*plan, "--tp", "3", "--gpus", "4"],
            2,
            "erro: --tp 3 não divide --gpus 4. Como corrigir: use divisores do número de GPUs.",
            "error: --tp 3 does not divide --gpus 4. To fix: use divisors of the GPU count.",
        ),
        (
            [*plan, "--seq-len", "0"],
            2,
            "erro: --seq-len deve ser pelo menos 1, não 0.",
            "error: --seq-len must be at least 1, got 0.",
        ),
        (
            [*plan, "--offer", "nope-h100"],
            2,
            "erro: oferta desconhecido(a): 'nope-h100'. Como corrigir: rode 'treino offers' para ver a lista.",
            "error: Unknown offer 'nope-h100'. To fix: run 'treino offers' for the list.",
        ),
        (
            ["recommend", "--model", "llama-3-8b", "--tokens", "1e9", "--residency", "Brasill"],
            2,
            "erro: --residency 'Brasill' não é um código de país ISO 3166-1 alfa-2 nem um local. Você quis dizer 'BR'? "
            "Como corrigir: indique um código de país de duas letras (os locais do catálogo ficam em BR, NL, US) ou o "
            "nome de um local de 'treino sites'.",
            "error: --residency 'Brasill' is neither an ISO 3166-1 alpha-2 country code nor a site. Did you mean 'BR'? "
            "To fix: give a two-letter country code (the catalog's sites are in BR, NL, US) or a site name from "
            "'treino sites'.",
        ),
        (
            ["plan", "train", "--model", str(config), "--gpu", "h100-sxm"],
            2,
            f"erro: {config}: o campo 'hidden_size' do config.json deve ser positivo, não 0.",
            f"error: {config}: config.json field 'hidden_size' must be positive, got 0.",
        ),
        (
            ["offers", "--offers", str(offers)],
            1,
            f"erro: {offers} linha 2: campo 'price': O valor deve ser maior que 0",
            f"error: {offers} line 2: field 'price': Input should be greater than 0",
        ),
        (
            ["audit", "verify", "--anchors", str(anchors)],  # read before any server is asked
            1,
            f"erro: {anchors} linha 1 não é uma âncora de auditoria (seq 'x' não é um número de registro): "
            """'{"v": 1, "seq": "x", "hash": "a", "time": 1, "reason": "x", "hmac": "b"}'. Como corrigir: restaure o """
            "arquivo de âncoras de sua cópia gravada uma só vez; cada linha é um objeto JSON escrito por 'treino "
            "server --audit-anchor'.",
            f"error: {anchors} line 1 is not an audit anchor (seq 'x' is not a record number): "
            """'{"v": 1, "seq": "x", "hash": "a", "time": 1, "reason": "x", "hmac": "b"}'. To fix: restore the """
            "anchor file from its write-once copy; each line is one JSON object written by 'treino server "
            "--audit-anchor'.",
        ),
    ]


@pytest.mark.parametrize("case", range(7))
def test_a_refusal_reads_in_pt_br_with_its_exit_code(case: int, tmp_path: Path) -> None:
    argv, code, portuguese, english = _refusals(tmp_path)[case]
    pt = treino(*argv, lang=PT)
    assert (pt.returncode, pt.stdout) == (code, "")
    assert " ".join(pt.stderr.split()) == portuguese
    assert untranslated(pt.stderr.replace(str(tmp_path), "FILE")) == []  # the folder's name is pytest's
    assert ("To fix" not in pt.stderr and "Como corrigir:" in pt.stderr) or "Como corrigir" not in english
    en = treino(*argv)  # English (LANG=C.UTF-8): the same refusal, word for word as before, the same exit code
    assert (en.returncode, " ".join(en.stderr.split())) == (code, english)
