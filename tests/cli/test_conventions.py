"""CLI conventions, as users meet them: shell completion, exit codes (the same with --json), `offers` and `sites`,
--fx-rate, and tables that keep every name whole at 80 columns. Real `treino` subprocesses."""

from __future__ import annotations

import contextlib
import io
import json
import os
import pty
import re
import subprocess
import sys
from pathlib import Path

import pytest
from rich.console import Console

from treino.cli.progress import steps

SRC = Path(__file__).resolve().parents[2] / "src"  # this checkout's treino
BIN = Path(sys.executable).parent  # the venv's `treino` entry point
L4 = ("plan", "train", "--model", "llama-3-8b", "--gpu", "l4", "--seq-len", "4096")  # does not fit a 24 GB L4
NOTHING = ("recommend", "--model", "llama-3-8b", "--tokens", "2e9", "--deadline", "1h", "--residency", "BR")
COST = ("plan", "cost", "--model", "llama-3-8b", "--tokens", "2e9", "--dedicated", "example-eveo-sp1-8x-h200")
COST += ("--cloud", "aws-p5en-48xlarge")
# The internal reference's section and source codes, its file names, and the article the product was conceived from:
# none of them is something a user can look up (the docs are)
CITATION = re.compile(
    r"§\s?\d|\bS\d{2,3}\b|\bR\d{1,2}\b|seed|artigo de referência|critérios? de referência"
    r"|lgpd-requirements|hardware-and-prices|planner-formulas|job-servers-compared|cluster-on-one-machine"
)


def treino(*args: str, columns: int = 80, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treino", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": str(columns), "PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(SRC), **env},
    )


def test_bash_completion_script_registers_and_completes(tmp_path: Path) -> None:
    """The printed script, sourced in a real bash, registers `treino` and asks it for the words."""
    script = (
        'eval "$(treino completion bash)"; complete -p treino; '
        'COMP_WORDS=(treino pl); COMP_CWORD=1; _treino_completion treino; echo "${COMPREPLY[@]}"; '
        'COMP_WORDS=(treino offers --ki); COMP_CWORD=2; _treino_completion treino; echo "${COMPREPLY[@]}"'
    )
    env = {"PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(SRC), "HOME": str(tmp_path)}
    out = subprocess.run(["bash", "--norc", "-c", script], capture_output=True, text=True, timeout=60, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["complete -o default -F _treino_completion treino", "plan", "--kind"]
    assert treino("completion", "zsh").stdout.startswith("#compdef treino")
    assert "complete --command treino" in treino("completion", "fish").stdout
    assert treino("completion", "tcsh").returncode == 2


def test_exit_codes_are_the_same_with_and_without_json() -> None:
    # 0: done
    assert treino("gpus").returncode == 0 and treino("gpus", "--json").returncode == 0
    # 3: the answer is no (the plan does not fit; no offer meets the limits), with its output all the same
    for args in (L4, NOTHING, ("plan", "infer", "--model", "llama-3-70b", "--gpu", "l4")):
        text, as_json = treino(*args), treino(*args, "--json")
        assert (text.returncode, as_json.returncode) == (3, 3), (args, text.stderr, as_json.stderr)
        assert text.stdout and json.loads(as_json.stdout)
    # 2: a usage error, Click's own or treino's (a bad value, an unknown name)
    for args in (("plan", "train", "--model", "llama-3-8b"), ("plan", "train", *L4[2:], "--epochs", "0")):
        for extra in ((), ("--json",)):
            out = treino(*args, *extra)
            assert out.returncode == 2 and out.stdout == "", (args, out.stderr)
    state = treino("jobs", "--state", "bogus", "--url", "http://127.0.0.1:9", "--token", "t")  # before any request
    assert state.returncode == 2 and "'bogus' is not one of 'queued'" in state.stderr, state.stderr
    typo = treino("plan", "train", "--model", "llama-3-8b", "--gpu", "h100", "--json")
    assert typo.returncode == 2 and "To fix: run 'treino gpus'" in typo.stderr
    # 1: a runtime failure (no server there)
    for extra in ((), ("--json",)):
        out = treino("jobs", "--url", "http://127.0.0.1:9", "--token", "t", *extra)
        assert out.returncode == 1 and "No treino server at" in out.stderr and "Traceback" not in out.stderr
    assert "Exit codes" in " ".join(treino("--help", columns=200).stdout.split())


def test_offers_and_sites_at_80_columns() -> None:
    data = json.loads(treino("offers", "--json").stdout)
    names = [o["name"] for o in data["offers"]]
    assert len(names) >= 20 and data["fx"]["source"]
    text = treino("offers").stdout
    assert all(name in text for name in names), [n for n in names if n not in text]
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text
    assert "R$ 1.700,00/month" in text  # example-eveo-sp1-1x-l4: 1700 BRL a month
    # under each offer's GPUs, the network between its servers, or that it is one server
    assert "16×200G EFA" in text and "8×400G IB NDR" in text and "single server" in text
    assert "Rate: 5.2359 BRL/USD on 2026-02-04 (catalog fx.csv" in " ".join(text.split())
    br = json.loads(treino("offers", "--country", "BR", "--json").stdout)["offers"]
    assert br and all(o["country"] == "BR" for o in br)
    sites = json.loads(treino("sites", "--json").stdout)
    assert {"eveo-sp1", "aws-us-east-1"} <= {s["name"] for s in sites}
    text = treino("sites").stdout
    assert all(s["name"] in text for s in sites)
    unknown = treino("plan", "train", *L4[2:], "--tokens", "1e9", "--offer", "example-eveo-sp1-1x-l")
    assert unknown.returncode == 2 and "run 'treino offers'" in unknown.stderr and "offers.csv" not in unknown.stderr


@pytest.mark.parametrize("command", ["gpus", "models"])
def test_every_gpu_and_model_name_whole_at_80_columns(command: str) -> None:
    """The names users pass to --gpu and --model: once cut to `a100-…` and `deepsee…` at 80 columns."""
    names = [row["name"] for row in json.loads(treino(command, "--json").stdout)]
    assert len(names) >= 10
    for lang in ("en", "pt-BR"):
        text = treino("--lang", lang, command).stdout
        cells = {cell.strip() for line in text.splitlines() for cell in line.split("  ") if cell.strip()}
        assert set(names) <= cells, sorted(set(names) - cells)  # each a whole cell of its own, not a longer word
        assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text, text


def test_plan_cost_keeps_both_offer_ids_and_amounts_whole_at_80_columns() -> None:
    longest = (*COST[:-1], "lambda-gpu-8x-a100-80gb-sxm4")  # the catalog's longest cloud offer id
    for lang in ("en", "pt-BR"):
        text = treino("--lang", lang, *longest).stdout
        assert "example-eveo-sp1-8x-h200" in text and "lambda-gpu-8x-a100-80gb-sxm4" in text, text
        assert "R$ 1.981.200,00" in text and "…" not in text, text  # 165,100 BRL a month x 12, on one line
        assert max(len(line) for line in text.splitlines()) <= 80, text


def test_recommend_keeps_every_offer_id_whole_at_80_columns() -> None:
    args = ("recommend", "--model", "llama-3-8b", "--tokens", "2e9", "--deadline", "3d")
    data = json.loads(treino(*args, "--json").stdout)
    ids = [c["offer"] for c in data["choices"]] + [r["offer"] for r in data["rejected"]]
    text = treino(*args).stdout
    assert ids and all(i in text for i in ids), [i for i in ids if i not in text]
    assert max(len(line) for line in text.splitlines()) <= 80 and "…" not in text
    # each choice's flags right under its name, whole
    first = data["choices"][0]
    lines = text.splitlines()
    row = next(n for n, line in enumerate(lines) if first["offer"] in line)
    assert lines[row + 1].split("│")[0].strip().startswith("--gpus")
    assert "--checkpointing" in "".join(lines[row + 1 : row + 6])
    # the rejected offers' reasons, wrapped, stay indented under their heading
    rejected = lines[next(n for n, line in enumerate(lines) if line.startswith("Rejected (")) + 1 :]
    reasons = rejected[: next(n for n, line in enumerate(rejected) if line.startswith("Rate:"))]
    assert len(reasons) > len(data["rejected"]) and all(line.startswith("  ") for line in reasons), reasons


def test_fx_rate_overrides_the_catalog_and_says_so() -> None:
    catalog = json.loads(treino(*COST, "--json").stdout)
    given = json.loads(treino(*COST, "--fx-rate", "6", "--json").stdout)
    assert given["fx"]["brl_per_usd"] == 6 and given["fx"]["source"] == "--fx-rate, given by you"
    ratio = given["cloud"]["total_brl"] / catalog["cloud"]["total_brl"]
    assert ratio == pytest.approx(6 / catalog["fx"]["brl_per_usd"])  # every cloud cost is in USD
    assert given["dedicated"]["total_brl"] == catalog["dedicated"]["total_brl"]  # BRL: untouched
    assert "Rate: 6 BRL/USD (--fx-rate, given by you)." in " ".join(treino(*COST, "--fx-rate", "6").stdout.split())
    out = treino("recommend", "--model", "llama-3-8b", "--tokens", "2e9", "--fx-rate", "6", columns=200).stdout
    assert "Rate: 6 BRL/USD (--fx-rate, given by you)." in out
    assert treino(*COST, "--fx-rate", "0").returncode == 2


def test_no_internal_citation_codes_in_what_users_read() -> None:
    """A plan with advice, its run time (the MFU prior's source), its data-loading fix and its cost; a recommendation;
    a cost comparison with its price sources; every offer's source and every GPU's. The HTML report: tests/report."""
    plan = (*L4, "--tokens", "1e9", "--cpu-cores", "1", "--offer", "example-eveo-sp1-1x-l4")
    offload = ("plan", "train", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--seq-len", "4096", "--micro-batch", "8")
    shown = [
        treino(*plan, columns=200).stdout,
        treino(*offload, columns=200).stdout,  # its advice includes the optimizer's offload
        treino("--lang", "pt-BR", *offload, columns=200).stdout,
        treino("bench", "--help", columns=200).stdout,
        treino("--lang", "pt-BR", "bench", "--help", columns=200).stdout,
        treino("plan", "shared", "--help", columns=200).stdout,
        treino("recommend", "--model", "llama-3-8b", "--tokens", "2e9", columns=200).stdout,
        treino(*COST, columns=200).stdout,
        treino("offers", "--sources", columns=200).stdout,
        treino("gpus", "--json").stdout,
    ]
    for text in shown:
        assert text and not CITATION.findall(text), CITATION.findall(text)


def _on_a_terminal(*args: str) -> tuple[int, str, str]:
    """`treino ARGS` with stderr on a pseudo-terminal, as in an interactive shell: (exit code, stdout, stderr)."""
    master, slave = pty.openpty()
    env = {"COLUMNS": "100", "PATH": f"{BIN}:/usr/bin:/bin", "PYTHONPATH": str(SRC), "TERM": "xterm"}
    proc = subprocess.Popen([sys.executable, "-m", "treino", *args], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    assert proc.stdout is not None
    stdout = proc.stdout.read().decode()
    proc.wait(timeout=120)
    chunks = []
    with contextlib.suppress(OSError):  # EIO once the child has closed its end
        while chunk := os.read(master, 65536):
            chunks.append(chunk)
    os.close(master)
    return proc.returncode, stdout, b"".join(chunks).decode(errors="replace")


def test_progress_on_a_terminal_only_and_never_with_json() -> None:
    args = ("recommend", "--model", "llama-3-8b", "--tokens", "2e9")
    code, stdout, stderr = _on_a_terminal(*args)
    assert code == 0 and "recommend: planning 30 offers" in stderr and "1/1" in stderr
    assert "Cheapest configurations" in stdout and "\x1b" not in stdout  # the bar never goes to stdout
    code, stdout, stderr = _on_a_terminal(*args, "--json")
    assert code == 0 and stderr == "" and json.loads(stdout)["choices"]
    assert treino(*args).stderr == ""  # not a terminal: no bar


def test_steps_name_each_step_in_turn() -> None:
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=True, width=100)
    with steps("trace", 3, console=console) as on_step:
        for name in ("importing PyTorch", "building the model", "measuring a step"):
            on_step(name)
    shown = buffer.getvalue()
    assert all(f"trace: {name}" in shown for name in ("importing PyTorch", "building the model", "measuring a step"))
    assert "3/3" in shown
    quiet = io.StringIO()
    with steps("trace", 3, console=Console(file=quiet, force_terminal=False)) as on_step:
        on_step("importing PyTorch")
    with steps("trace", 3, enabled=False, console=Console(file=quiet, force_terminal=True)) as on_step:
        on_step("importing PyTorch")
    assert quiet.getvalue() == ""
