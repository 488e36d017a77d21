"""The `treino` command in pt-BR, as users run it (a real subprocess): by --lang, or by LANG when --lang is not given;
no English word of tests/test_i18n.py's ENGLISH_WORDS in the output, numbers as 1.234,5 and money as R$ 1.234,56."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.test_i18n import ENGLISH_WORDS

SRC = Path(__file__).resolve().parents[2] / "src"
BIG = ["--model", "llama-3-70b", "--gpu", "h200-sxm", "--tokens", "2e9"]


def treino(*args: str, lang: str = "C.UTF-8") -> subprocess.CompletedProcess[str]:
    env = {"COLUMNS": "200", "PATH": "/usr/bin:/bin", "LANG": lang, "PYTHONPATH": str(SRC)}
    env |= {k: os.environ[k] for k in ("HOME", "TREINO_CONFIG") if k in os.environ}
    return subprocess.run([sys.executable, "-m", "treino", *args], capture_output=True, text=True, timeout=120, env=env)


def english_in(text: str) -> list[str]:
    """English words outside the things users typed or named (flags, offer and GPU names, model names)."""
    text = re.sub(r"--[a-z0-9-]+( [^\s│]+)?|\b[a-z0-9]+(-[a-z0-9.]+)+\b|'[^']*'", " ", text)
    return sorted({w for w in re.findall(r"[A-Za-zÀ-ÿ]+", text) if w.lower() in ENGLISH_WORDS})


def test_plan_train_and_its_errors_in_pt_br_by_lang_or_by_option() -> None:
    offer = "example-eveo-ce1-2x-h200"
    by_env = treino("plan", "train", *BIG, "--offer", offer, lang="pt_BR.UTF-8")
    by_option = treino("--lang", "pt-BR", "plan", "train", *BIG, "--offer", offer)
    assert by_env.returncode == by_option.returncode == 3  # does not fit (EXIT_NO_FIT)
    assert by_env.stdout == by_option.stdout
    out = by_env.stdout
    assert "NÃO CABE" in out and "checkpointing completo" in out and re.search(r"R\$ \d{1,3}(\.\d{3})*,\d\d", out)
    assert re.search(r"\d\.\d{3},\d\d GiB", out)  # 1.446,56 GiB
    assert english_in(out) == []
    english = treino("--lang", "en", "plan", "train", *BIG, lang="pt_BR.UTF-8")
    assert "DOES NOT FIT" in english.stdout
    error = treino("plan", "train", "--model", "llama-3-70b", "--gpu", "h100", lang="pt_BR.UTF-8")
    assert error.returncode == 2 and error.stderr.startswith("erro: GPU desconhecido(a): 'h100'. Você quis dizer")
    bad = treino("--lang", "de", "gpus")
    assert bad.returncode == 2 and "Unknown language 'de'" in bad.stderr


def test_recommend_and_plan_cost_in_pt_br() -> None:
    rec = treino(
        "--lang", "pt-BR", "recommend", "-m", "llama-3-70b", "--tokens", "2e9", "--deadline", "1h", "--residency", "BR"
    )
    assert rec.returncode == 3, rec.stderr  # nothing meets every limit (EXIT_NO_FIT)
    assert "Nada cumpre todos os limites" in rec.stdout and "Rejeitadas" in rec.stdout
    assert "Câmbio:" in rec.stdout and english_in(rec.stdout.split("Câmbio:")[0]) == []  # then fx.csv's source: data
    cost = treino(
        "--lang",
        "pt-BR",
        "plan",
        "cost",
        "-m",
        "llama-3-8b",
        "--tokens",
        "2e9",
        "--dedicated",
        "example-eveo-ce1-2x-h200",
        "--cloud",
        "aws-p5-48xlarge",
    )
    assert cost.returncode == 0, cost.stderr
    shown = cost.stdout.split("Câmbio:")[0]  # then the catalog's own price sources: data, not treino's text
    assert "Mais barato" in shown and "Câmbio:" in cost.stdout and english_in(shown) == []


def test_help_in_pt_br() -> None:
    top = treino("--help", lang="pt_BR.UTF-8")
    assert top.returncode == 0 and "Comandos" in top.stdout and "Planeje, meça, rode" in top.stdout
    plan = treino("--lang=pt-BR", "plan", "--help")
    assert "Vai caber, e com quais configurações?" in plan.stdout
    assert "Will it fit" in treino("--lang", "en", "plan", "--help", lang="pt_BR.UTF-8").stdout


def test_offers_sites_and_a_waited_jobs_outcome_in_pt_br() -> None:
    offers = treino("--lang", "pt-BR", "offers", "--kind", "dedicated")
    assert offers.returncode == 0, offers.stderr
    shown = offers.stdout.split("Câmbio:")[0]  # then fx.csv's source: data
    assert "oferta(s)" in shown and "/mês" in shown and english_in(shown) == []
    sites = treino("--lang", "pt-BR", "sites", "--country", "BR")
    head = "\n".join(sites.stdout.splitlines()[:2])  # the rows are catalog data (a city is "São Paulo State")
    assert sites.returncode == 0 and "Locais: " in head and "fornecedor" in head and english_in(head) == []
    from treino.cli.wait import outcome
    from treino.i18n import current, language, use

    was = current()
    use(language("pt-BR"))
    try:
        job = {"id": 7, "name": "ft", "state": "failed", "failure_reason": "oom", "exit_code": 137}
        line, code = outcome(job)
    finally:
        use(was)
    assert code == 1 and line.startswith("Job 7 (ft) falhou") and "(código de saída 137)" in line, line
