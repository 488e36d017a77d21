"""The `treino` command in pt-BR, as users run it (a real subprocess): by --lang, or by LANG when --lang is not given;
no English word of tests/test_i18n.py's ENGLISH_WORDS in the output, numbers as 1.234,5 and money as R$ 1.234,56."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from tests.test_i18n import ENGLISH_WORDS

SRC = Path(__file__).resolve().parents[2] / "src"
BIG = ["--model", "llama-3-70b", "--gpu", "h200-sxm", "--tokens", "2e9"]
T = TypeVar("T")


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


def test_plan_infer_and_plan_shared_in_pt_br() -> None:
    infer = treino("--lang", "pt-BR", "plan", "infer", "--model", "llama-3-8b", "--gpu", "l4")
    assert infer.returncode == 0, infer.stderr
    assert "cache KV (1 × 4.096 tokens" in infer.stdout and "Decodificação ≤ 18 tokens/s" in infer.stdout
    assert "memória da NVIDIA L4" in infer.stdout and "CABE" in infer.stdout and english_in(infer.stdout) == []
    shared = treino(
        "--lang", "pt-BR", "plan", "shared", "--model", "llama-3-8b", "--gpu", "h200-sxm", "--tokens", "5e8",
        "--mig", "3g",
    )  # fmt: skip
    assert shared.returncode == 0, shared.stderr
    assert "instâncias MIG não têm" in shared.stdout and english_in(shared.stdout) == [], english_in(shared.stdout)


def test_offers_sites_and_a_waited_jobs_outcome_in_pt_br() -> None:
    offers = treino("--lang", "pt-BR", "offers", "--kind", "dedicated")
    assert offers.returncode == 0, offers.stderr
    shown = offers.stdout.split("Câmbio:")[0]  # then fx.csv's source: data
    assert "oferta(s)" in shown and "/mês" in shown and english_in(shown) == []
    sites = treino("--lang", "pt-BR", "sites", "--country", "BR")
    head = "\n".join(sites.stdout.splitlines()[:2])  # the rows are catalog data (a city is "São Paulo State")
    assert sites.returncode == 0 and "Locais: " in head and "fornecedor" in head and english_in(head) == []
    # The catalogs' tables: their titles and headers (the rows are catalog data: names, families, link kinds)
    gpus = treino("--lang", "pt-BR", "gpus").stdout.split("────")[0]
    assert "Catálogo de GPUs" in gpus and "memória" in gpus and "conexão GPU-GPU" in gpus and english_in(gpus) == []
    models = treino("--lang", "pt-BR", "models").stdout.split("────")[0]
    assert "Modelos pré-definidos" in models and "camadas" in models and english_in(models) == []
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


# Words of the outputs below that have no place in a pt-BR reader's view, beside ENGLISH_WORDS (kept here: the
# dashboard's checks read that list as it is)
_MORE = """
    added disabled enabled revoked created expires expiry grant granted transfer registered rows removed marked
    pseudonym due answer wrote kept current waits goes first higher earlier unknown reached seat sustained burst
    latency samples meets below feeds cores measured figure datasheet pass fail note skipped visible listening
    priced control checked site sites usage shown again until
"""
MORE_WORDS = set(_MORE.split())


def untranslated(text: str) -> list[str]:
    """english_in with MORE_WORDS too."""
    text = re.sub(r"--[a-z0-9-]+( [^\s│]+)?|\b[a-z0-9]+(-[a-z0-9.]+)+\b|'[^']*'", " ", text)
    return sorted({w for w in re.findall(r"[A-Za-zÀ-ÿ]+", text) if w.lower() in ENGLISH_WORDS | MORE_WORDS})


def test_every_option_help_of_the_main_commands_shows_in_pt_br() -> None:
    """The English help of each option is nowhere on the pt-BR page (each one has an entry: tests/test_i18n.py), nor
    Click's and Typer's own words; the same page in English has them all."""
    import typer

    from treino.cli.app import app
    from treino.pt_br import PT

    root = typer.main.get_command(app)
    for path in (["plan", "train"], ["server"], ["data", "add"]):
        command = root
        for name in path:
            command = command.commands[name]
        helps = [p.help for p in command.params if getattr(p, "help", None) and PT.get(p.help, p.help) != p.help]
        page = " ".join(treino("--lang", "pt-BR", *path, "--help").stdout.replace("│", " ").split())
        left = [h for h in helps if " ".join(h.split()) in page]
        assert left == [] and len(helps) >= 4, path
        assert "Uso:" in page and "Mostra esta mensagem e sai." in page and "Opções" in page, path
        assert "Show this message" not in page and "[default:" not in page and "Usage:" not in page, path
    english = " ".join(treino("--lang", "en", "plan", "train", "--help").stdout.replace("│", " ").split())
    assert "Tokens per sequence." in english and "[default: 2048]" in english and "Usage:" in english


def _in_pt_br(render: Callable[[], T]) -> T:
    from treino.i18n import PT_BR, current, use

    was = current()
    use(PT_BR)
    try:
        return render()
    finally:
        use(was)


def test_a_waits_sentence_is_the_servers_in_english_and_portuguese_in_pt_br() -> None:
    """treino show words why a job waits from the wait's fields (as the API sends them): in English exactly the
    server's `detail`, in pt-BR without English; a quota's note comes as data and reads in Portuguese too."""
    from treino.cli.job_status import wait_detail
    from treino.i18n import EN, Msg, current, use
    from treino.server.schemas import WaitOut
    from treino.server.waits import Wait, WaitReason

    quota = Msg(
        "quota: {owner}'s jobs hold {held} of the {limit} GPU(s) their quota allows at once ({whose}); this job needs "
        "{need}. It starts when enough of them end.",
        owner="ana",
        held=2,
        limit=2,
        whose=Msg("{kind} {name}", kind=Msg("user"), name="ana"),
        need=1,
    )
    until = 1_796_000_000.0
    waits = [
        Wait(WaitReason.QUOTA, 1, gpus_needed=1, note=quota),
        Wait(WaitReason.RESOURCES, 1, (3, 4, 5, 6), 2, 0, until, preempting=True),
        Wait(WaitReason.RESOURCES, 2, gpus_needed=8),
        Wait(WaitReason.RESOURCES, 1, (3,), 2, 1, until),
        Wait(WaitReason.RESOURCES, 1, (3, 4), 2, 1, None),
        Wait(WaitReason.RESOURCES, 1, (), 2, 1),
        Wait(WaitReason.BACKFILL, 3, (7,), 1, None, until),
        Wait(WaitReason.BACKFILL, 3, (7,), 1, None, None),
        Wait(WaitReason.PRIORITY, 2, (7,), 4, 2),
        Wait(WaitReason.QUEUE, 2, (7,), 4, 2),
        Wait(WaitReason.SLURM, None, note="Priority"),
        Wait(WaitReason.SLURM, None),
        Wait(WaitReason.BACKEND, 1, note="slurmctld: Connection refused"),
        Wait(WaitReason.BACKEND, None),
    ]
    was = current()
    use(EN)
    try:
        sent = [json.loads(json.dumps(WaitOut.fields(w))) for w in waits]  # as a client reads them
        assert [wait_detail(s) for s in sent] == [s["detail"] for s in sent]
    finally:
        use(was)
    worded = _in_pt_br(lambda: [wait_detail(s) for s in sent])
    assert worded[0].startswith("retido por uma cota: cota: os jobs de ana ocupam 2 das 2 GPU(s)"), worded[0]
    assert "(usuário ana)" in worded[0]
    assert worded[1] == "precisa de 2 dispositivo(s), 0 livre(s); preemptando jobs 3, 4, 5 e mais 1 para liberá-los"
    data = ("slurmctld: Connection refused", "Priority")  # Slurm's own words, as it gave them
    assert [untranslated(re.sub("|".join(data), "", w)) for w in worded] == [[]] * len(worded)
    assert "Priority" in worded[10]  # Slurm's own reason, as Slurm gave it


def test_progress_steps_and_bench_report_in_pt_br() -> None:
    from rich.console import Console

    from treino.bench.report import table, verdict_lines, verdicts
    from treino.cli.progress import steps
    from treino.i18n import Msg

    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)

    def run_steps() -> None:
        with steps("train step", 2, console=console) as on_step:
            on_step("model")
            on_step(Msg("step {n}/{total}", n=1, total=2))

    _in_pt_br(run_steps)
    assert "passo de treino: modelo" in buffer.getvalue() and "passo de treino: passo 1/2" in buffer.getvalue()

    result: dict[str, Any] = {
        "gpus": [],
        "collectives": [
            {"op": "all_reduce", "bytes": 2**20, "backend": "gloo", "ranks": 2, "latency_us": 85.0, "busbw_gb_s": 1.5}
        ],
        "host": {"cpu": "AMD EPYC", "cores": 2, "ram_bytes": 25.3e9, "memory_bandwidth_gb_s": 6.4},
        "storage": {"path": "/tmp", "read_gb_s": 0.63, "method": "O_DIRECT"},
        "dataloader": {"samples_per_s": 8279.0, "workers": 0},
    }
    result["verdicts"] = verdicts(
        result, gpu_count=0, collective_check=(True, 1e-7, "gloo", 2), feed_samples_per_s=100.0
    )
    assert "meets" not in json.dumps(result) and "below the 7 GB/s" in json.dumps(result)  # --json stays English
    out = io.StringIO()

    def render() -> None:
        shown = Console(file=out, width=160)
        shown.print(table(result))
        for line in verdict_lines(result):
            shown.print(line)

    _in_pt_br(render)
    text = out.getvalue().replace("AMD EPYC", "")
    assert "Leitura sequencial do armazenamento" in text and "8.279 amostras/s" in text and "FALHA" in text
    assert untranslated(text) == [], text


def test_a_failure_detail_treino_worded_shows_in_pt_br_and_the_jobs_own_output_as_it_is() -> None:
    """treino show / submit --wait: the details the server words (treino.server.service.classify, a timeout) read in
    Portuguese, rebuilt from the job's fields; in English they are the server's text word for word; a line of the
    job's own output stays as the job wrote it."""
    from treino.cli.job_status import failure_detail
    from treino.i18n import EN, current, use
    from treino.server.backend import ExitInfo
    from treino.server.failures import HIDDEN_DETAIL, timed_out
    from treino.server.service import classify

    def job(detail: str, exit_code: int | None) -> dict[str, Any]:
        sent = {"failure_detail": detail, "exit_code": exit_code, "spec": {"timeout_minutes": 90}}
        return json.loads(json.dumps(sent))  # as the API sends it

    jobs = [
        job(classify(ExitInfo(-9, "step 3\n"))[1], -9),
        job(classify(ExitInfo(3, ""))[1], 3),
        job(classify(ExitInfo(None, ""))[1], None),
        job(timed_out(90), None),
        job(HIDDEN_DETAIL, 1),
        job(classify(ExitInfo(1, "Traceback ...\nValueError: the loss is nan\n"))[1], 1),
    ]
    was = current()
    use(EN)
    try:
        assert [failure_detail(j) for j in jobs] == [j["failure_detail"] for j in jobs]
    finally:
        use(was)
    assert _in_pt_br(lambda: [failure_detail(j) for j in jobs]) == [
        "morto pelo sinal 9",
        "código de saída 3",
        "o supervisor da tentativa sumiu sem código de saída (queda ou reinício)",
        "passou de timeout_minutes=90",
        "(oculto: cita o log do job, que seu papel não pode ler)",
        "ValueError: the loss is nan",  # the job's own words
    ]
