"""`treino users | tokens | grant | data | audit | subject | erase` as a DPO and an engineer run them: real CLI
subprocesses against a real server at site eveo-sp1 that imports from examples/data."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from functools import reduce
from pathlib import Path

import pytest
from sqlalchemy import text

from tests.conftest import Database
from tests.server.conftest import ServerProcess, Servers, clean_env
from treino.server.db import make_engine

CLI_TIMEOUT_S = 30
REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "data"
CLIENTES = EXAMPLES / "clientes.csv"


@pytest.fixture(scope="module")
def imports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A second import root, for a test's own data files."""
    return tmp_path_factory.mktemp("imports")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, database: Database, imports: Path) -> Iterator[ServerProcess]:
    servers = Servers(tmp_path_factory, database)
    try:
        roots = ["--import-root", str(EXAMPLES), "--import-root", str(imports)]
        yield servers.start(extra_args=["--site", "eveo-sp1", *roots])
    finally:
        servers.close()


def treino(*args: str, cwd: Path, url: str, token: str) -> subprocess.CompletedProcess[str]:
    """`treino ARGS` with the server and token in the environment, and no real config file read."""
    env = {"HOME": str(cwd / "home"), "XDG_CONFIG_HOME": str(cwd / "xdg"), "COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-m", "treino", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env=clean_env(**env, TREINO_URL=url, TREINO_TOKEN=token),
    )


def ok(out: subprocess.CompletedProcess[str]) -> str:
    assert out.returncode == 0, out.stderr
    return out.stdout


def one_line(text: str) -> str:
    return " ".join(text.split())


def make_token(server: ServerProcess, tmp: Path, user: str) -> str:
    out = ok(treino("tokens", "create", user, "--name", f"{user}-laptop", cwd=tmp, url=server.url, token=server.token))
    lines = out.splitlines()
    assert re.fullmatch(rf"Token \d+ for {user} \(\w+\), no expiry:", lines[0]), out
    assert lines[1].startswith("trn_") and "only time the token is shown" in lines[2]
    return lines[1]


def test_register_grant_audit_erase(server: ServerProcess, tmp_path: Path) -> None:
    def admin(*args: str) -> subprocess.CompletedProcess[str]:
        return treino(*args, cwd=tmp_path, url=server.url, token=server.token)

    # People and tokens, by the admin.
    assert ok(admin("users", "add", "dpo1", "--role", "dpo")).startswith("Added user dpo1 (dpo)")
    assert ok(admin("users", "add", "eng1", "--role", "engineer")).startswith("Added user eng1 (engineer)")
    users = json.loads(ok(admin("users", "list", "--json")))
    assert {(u["name"], u["role"]) for u in users} >= {("dpo1", "dpo"), ("eng1", "engineer")}
    dpo_token, eng_token = make_token(server, tmp_path, "dpo1"), make_token(server, tmp_path, "eng1")
    listed = ok(admin("tokens", "list"))
    assert "dpo1-laptop" in listed and dpo_token not in listed and eng_token not in listed

    def dpo(*args: str) -> subprocess.CompletedProcess[str]:
        return treino(*args, cwd=tmp_path, url=server.url, token=dpo_token)

    def eng(*args: str) -> subprocess.CompletedProcess[str]:
        return treino(*args, cwd=tmp_path, url=server.url, token=eng_token)

    # Registering: a relative path is made absolute here; the basis, purpose and subject column are recorded.
    base = ("--legal-basis", "art7-ix", "--purpose", "churn-model", "--personal")
    rel = str(CLIENTES.relative_to(REPO))
    out = treino("data", "add", "clientes", rel, *base, "--subject-column", "cpf", "--retention-days", "365",
                 cwd=REPO, url=server.url, token=server.token)  # fmt: skip
    found = re.match(r"Registered clientes v1: sha256 ([0-9a-f]{12}), 2,000 rows\.\n", ok(out))
    assert found, out.stdout
    v1_short = found[1]

    # Sensitive data on legitimate interest: refused by Art. 11, one red line, exit 1.
    out = admin("data", "add", "saude", str(CLIENTES), *base, "--sensitive", "--subject-column", "cpf")
    assert out.returncode == 1 and out.stdout == "" and "Traceback" not in out.stderr
    assert one_line(out.stderr).startswith("error: refused (LGPD Art. 11): ")
    # A file outside the import root.
    outside = tmp_path / "fora.csv"
    outside.write_text(CLIENTES.read_text())
    out = admin("data", "add", "fora", str(outside), *base, "--subject-column", "cpf")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert one_line(out.stderr).startswith(f"error: refused (import roots): {outside} is outside the allowed")

    # Grants: the DPO may, the engineer may not.
    out = ok(dpo("grant", "eng1", "clientes", "--purpose", "churn-model"))
    assert re.fullmatch(r"Grant \d+: eng1 may read clientes for churn-model\.\n", out)
    out = eng("grant", "eng1", "clientes", "--purpose", "churn-model")
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert one_line(out.stderr) == (
        "error: Role engineer may not grants.manage. To fix: use a token of a user with role admin, dpo."
    )
    out = dpo("grant", "eng1", "clientes", "--purpose", "marketing")
    assert out.returncode == 1 and one_line(out.stderr).startswith("error: refused (purpose): dataset clientes allows")

    # The audit chain holds, and exports as CSV.
    out = ok(dpo("audit", "verify"))
    assert re.fullmatch(r"chain intact: \d+ records; .+ verified; the head is record \d+.*\n", out), out
    out = dpo("audit", "export", "--format", "csv", "--dataset", "clientes")
    rows = list(csv.DictReader(ok(out).splitlines()))
    assert {"dataset.register", "grant.create"} <= {r["action"] for r in rows}
    assert {r["dataset"] for r in rows} == {"clientes"}

    # Art. 18 II, then VI: a subject from the CSV, by its masked CPF.
    with CLIENTES.open() as f:
        cpf = next(csv.DictReader(f))["cpf"]
    out = ok(dpo("subject", "report", "--subject", cpf))
    assert f"Subject {cpf} (pseudonym " in out
    assert re.search(
        rf"clientes\s+│\s+v1\s+│\s+{v1_short}\s+│\s+1\s+│\s+art7-ix\s+│\s+churn-model\s+│\s+BR\s+│\s+eng1", out
    )

    out = ok(dpo("erase", "--subject", cpf))
    assert f"of subject {cpf} (pseudonym " in out and "LGPD Art. 19: 15 days" in out
    found = re.search(
        rf"clientes: 1 row\(s\) removed; purged v1 \({v1_short}\); new version v2 \(([0-9a-f]{{12}})\)", out
    )
    assert found, out
    v2_short = found[1]
    assert "models marked: none" in out

    out = ok(dpo("data", "show", "clientes"))
    assert re.search(rf"v1\s+│\s+{v1_short}\s+│\s+2,000\s+│.*│\s+purged \d{{4}}-", out), out
    assert re.search(rf"v2\s+│\s+{v2_short}\s+│\s+1,999\s+│.*│\s+current", out), out
    shown = json.loads(ok(dpo("data", "show", "clientes", "--json")))
    assert [(v["number"], v["purged_at"] is not None) for v in shown["versions"]] == [(1, True), (2, False)]
    out = ok(dpo("subject", "report", "--subject", cpf))
    assert "no records" in out and "erasure #1 requested" in out

    # Neither the raw CPF nor its digits reach the audit log; the chain still holds.
    exported = ok(dpo("audit", "export"))
    assert cpf not in exported and re.sub(r"\D", "", cpf) not in exported
    assert ok(dpo("audit", "verify")).startswith("chain intact: ")

    # A revoked token stops working at once.
    token_id = next(t["id"] for t in json.loads(ok(admin("tokens", "list", "--json"))) if t["user"] == "eng1")
    assert ok(admin("tokens", "revoke", str(token_id))).startswith(f"Revoked token {token_id} at ")
    out = eng("data", "list")
    assert out.returncode == 1 and "Traceback" not in out.stderr and out.stderr.startswith("error: ")


def test_bad_since_and_export_to_file(server: ServerProcess, tmp_path: Path) -> None:
    out = treino("audit", "export", "--since", "yesterday", cwd=tmp_path, url=server.url, token=server.token)
    assert out.returncode == 2 and "Cannot read --since 'yesterday'" in out.stderr
    out = treino("audit", "export", "--since", "2000-01-01", "-o", "audit.jsonl", cwd=tmp_path, url=server.url,
                 token=server.token)  # fmt: skip
    assert out.returncode == 0 and out.stdout == "", out.stderr
    records = [json.loads(line) for line in (tmp_path / "audit.jsonl").read_text().splitlines()]
    assert records and out.stderr == f"Wrote {len(records)} record(s) to audit.jsonl.\n"
    out = treino("audit", "records", cwd=tmp_path, url=server.url, token=server.token)
    assert out.returncode == 0 and out.stdout.startswith("#"), out.stdout[:200]


def test_verify_names_the_first_tampered_record(
    tmp_path_factory: pytest.TempPathFactory, database: Database, tmp_path: Path
) -> None:
    servers = Servers(tmp_path_factory, database)
    try:
        server = servers.start()
        for name in ("a1", "a2", "a3"):  # three audited actions: records to tamper with
            ok(treino("users", "add", name, "--role", "viewer", cwd=tmp_path, url=server.url, token=server.token))
        engine = make_engine(server.database_url)
        with engine.begin() as db:
            rows = db.execute(text("SELECT seq FROM audit_records WHERE action = 'user.create' ORDER BY seq"))
            seq = rows.scalars().all()[1]
            db.execute(text("UPDATE audit_records SET actor = 'mallory' WHERE seq = :seq"), {"seq": seq})
        engine.dispose()
        out = treino("audit", "verify", cwd=tmp_path, url=server.url, token=server.token)
        assert out.returncode == 1 and out.stdout == "", out.stdout
        assert one_line(out.stderr).startswith(f"chain broken at record {seq}: ")
        assert one_line(out.stderr).endswith(f"record {seq}: its hash does not match its content (modified)")
        pt = treino("--lang", "pt-BR", "audit", "verify", cwd=tmp_path, url=server.url, token=server.token)
        assert pt.returncode == 1 and one_line(pt.stderr) == (  # the server's verdict as data, worded by the CLI
            f"cadeia rompida no registro {seq}: registro {seq}: seu hash não confere com seu conteúdo (modificado)"
        )
    finally:
        servers.close()


def test_the_governance_commands_speak_portuguese(server: ServerProcess, tmp_path: Path) -> None:
    """`treino --lang pt-BR users | tokens | data | grant | grants | transfer | audit | lineage | erase | subject`: no
    English word of treino's in what they print (names, hashes, paths and dates are data), the server's own texts
    (an import's warnings, the audit verdict, a subject report) included. The words do not depend on the database:
    SQLite only."""
    from tests.cli.test_cli_i18n import untranslated

    if server.db_url is not None:
        pytest.skip("the same words on PostgreSQL")

    def pt(*args: str) -> str:
        return ok(treino("--lang", "pt-BR", *args, cwd=tmp_path, url=server.url, token=server.token))

    with CLIENTES.open() as f:
        cpf = list(csv.DictReader(f))[2]["cpf"]  # not the subject the other test erases
    shown = {
        "users add": pt("users", "add", "dpo-pt", "--role", "dpo"),
        "tokens create": pt("tokens", "create", "dpo-pt", "--name", "notebook").replace("trn_", "").split("\n", 1)[1],
        "users disable": pt("users", "disable", "dpo-pt"),
        # personal data with no retention period: the server warns, in the reader's language
        "data add": pt(
            "data",
            "add",
            "clientes-pt",
            str(CLIENTES),
            "--legal-basis",
            "art7-ix",
            "--purpose",
            "churn-model",
            "--personal",
            "--subject-column",
            "cpf",
        ),
        "data list": pt("data", "list"),
        "data show": pt("data", "show", "clientes-pt"),
        "grant": pt("grant", "dpo-pt", "clientes-pt", "--purpose", "churn-model"),
        "grants list": pt("grants", "list"),
        "audit verify": pt("audit", "verify"),
        "lineage dataset": pt("lineage", "dataset", "clientes-pt"),
        "erase": pt("erase", "--subject", cpf, "--dataset", "clientes-pt"),
        "subject report after": pt("subject", "report", "--subject", cpf),
    }
    assert shown["users add"].startswith("Usuário dpo-pt (dpo) adicionado")
    assert "sem prazo de retenção" in shown["data add"] and "linhas" in shown["data add"]
    assert shown["audit verify"].startswith("cadeia íntegra: ") and "checkpoints assinados" in shown["audit verify"]
    assert "Eliminação nº" in shown["erase"] and "resposta devida até" in shown["erase"]
    assert "pedida em" in shown["subject report after"]
    left = {what: untranslated(text.replace("│", " ")) for what, text in shown.items()}
    assert left == {what: [] for what in shown}, left
    english = treino("data", "show", "clientes-pt", cwd=tmp_path, url=server.url, token=server.token).stdout
    assert untranslated(english) != []  # the check sees English where there is some


def test_a_refused_command_prints_the_servers_message_in_portuguese(
    server: ServerProcess, imports: Path, tmp_path: Path
) -> None:
    """The server's refusals (404, 409, a role's 403, a governance rule's 403, 401, a 422) sent as data beside the
    English `detail` (treino.server.api.errors), worded by the CLI in pt-BR; the same refusals in English as the
    server words them. SQLite only: the words do not depend on the database."""
    from tests.cli.test_cli_i18n import untranslated

    if server.db_url is not None:
        pytest.skip("the same words on PostgreSQL")

    def run(*args: str, token: str = server.token, lang: str = "pt-BR") -> str:
        out = treino("--lang", lang, *args, cwd=tmp_path, url=server.url, token=token)
        assert out.returncode in (1, 2) and out.stdout == "", (out.returncode, out.stdout, out.stderr)
        return one_line(out.stderr)

    from treino.govern.cpf import make_cpf

    ok(treino("users", "add", "eng-refused", "--role", "engineer", cwd=tmp_path, url=server.url, token=server.token))
    eng = make_token(server, tmp_path, "eng-refused")
    # rows of its own: the module's server refuses clientes.csv again once another test erased one of its subjects
    data = imports / "refused.csv"
    rows = [f"{make_cpf(f'{n:09d}')},{n}" for n in (417_203_968, 582_914_307, 903_166_421)]
    data.write_text("cpf,compras_12m\n" + "\n".join(rows) + "\n")
    ok(
        treino(
            "data", "add", "clientes-refused", str(data), "--legal-basis", "art7-ix", "--purpose", "churn-model",
            "--personal", "--subject-column", "cpf", "--retention-days", "365",
            cwd=tmp_path, url=server.url, token=server.token,
        )
    )  # fmt: skip
    outside = tmp_path / "fora.csv"  # reached through a link in an import root: the message names both paths
    outside.write_text(data.read_text())
    (imports / "ligado.csv").symlink_to(outside)
    sensitive = ("--purpose", "churn-model", "--personal", "--sensitive", "--subject-column", "cpf")
    refusals = {
        "404": ("show", "987654"),
        "403 Art. 11": ("data", "add", "saude", str(data), "--legal-basis", "art7-ix", *sensitive),
        "403 Art. 11 instead": ("data", "add", "saude", str(data), "--legal-basis", "art7-i", *sensitive),
        "403 import roots": (
            "data",
            "add",
            "ligado",
            str(imports / "ligado.csv"),
            "--legal-basis",
            "art7-ix",
            "--purpose",
            "churn-model",
            "--personal",
            "--subject-column",
            "cpf",
        ),
        "409": ("users", "add", "eng-refused", "--role", "engineer"),
        "403 role": ("users", "add", "someone", "--role", "dpo"),
        "403 purpose": ("grant", "eng-refused", "clientes-refused", "--purpose", "ads"),
        "401": ("jobs",),
        "422": ("usage", "--since", "yesterday-ish"),
    }
    tokens = {"403 role": eng, "401": "trn_not-a-token"}
    shown = {k: run(*args, token=tokens.get(k, server.token)) for k, args in refusals.items()}
    english = {k: run(*args, token=tokens.get(k, server.token), lang="en") for k, args in refusals.items()}
    assert shown["404"] == "erro: Não existe o job 987654. Como corrigir: liste os jobs com 'treino jobs'."
    assert english["404"] == "error: No job 987654. To fix: list jobs with 'treino jobs'."
    assert shown["409"].startswith("erro: O usuário 'eng-refused' já existe. Como corrigir:")
    assert shown["403 role"].startswith("erro: O papel engineer não tem a permissão ")
    assert shown["403 purpose"].startswith(
        "erro: recusado (finalidade): o dataset clientes-refused permite churn-model, não ads"
    )
    assert english["403 purpose"].startswith("error: refused (purpose): dataset clientes-refused allows churn-model")
    assert shown["401"].startswith("erro: Token inválido, expirado ou revogado. Como corrigir:")
    assert shown["422"].startswith("erro: O servidor recusou o uso (422): since: 'yesterday-ish' não é nem uma data")
    # a legal basis named in the LGPD's own words (treino.govern.datasets.BASIS_LABELS), and the English as it was
    assert shown["403 Art. 11"] == (
        "erro: recusado (LGPD Art. 11): Art. 7 IX: interesse legítimo do controlador ou de terceiro não está "
        "disponível para dados sensíveis (só as bases do Art. 11 estão). Como corrigir: escolha uma de art11-i, "
        "art11-ii-a, art11-ii-b, art11-ii-c, art11-ii-d, art11-ii-e, art11-ii-f, art11-ii-g, se uma realmente se "
        "aplicar, ou retire as colunas sensíveis."
    )
    assert english["403 Art. 11"] == (
        "error: refused (LGPD Art. 11): Art. 7 IX: legitimate interest of the controller or a third party is not "
        "available for sensitive data (only Art. 11 bases are). To fix: choose one of art11-i, art11-ii-a, art11-ii-b, "
        "art11-ii-c, art11-ii-d, art11-ii-e, art11-ii-f, art11-ii-g, if one truly applies, or drop the sensitive "
        "columns."
    )
    assert shown["403 Art. 11 instead"] == (
        "erro: recusado (LGPD Art. 11): Art. 7 I: consentimento do titular não cobre dados sensíveis; o Art. 11 tem "
        "sua própria lista, mais restrita. Como corrigir: use art11-i (Art. 11 I: consentimento específico e "
        "destacado, para finalidades específicas)."
    )
    assert english["403 Art. 11 instead"] == (
        "error: refused (LGPD Art. 11): Art. 7 I: consent of the data subject does not cover sensitive data; Art. 11 "
        "has its own, narrower list. To fix: use art11-i (Art. 11 I: specific and highlighted consent, for specific "
        "purposes)."
    )
    link, roots = imports / "ligado.csv", f"{EXAMPLES.resolve()}, {imports.resolve()}"
    assert shown["403 import roots"].startswith(
        f"erro: recusado (raízes de importação): {link} (que aponta para {outside.resolve()}) está fora das raízes de "
        f"importação permitidas: {roots}. Como corrigir:"
    )
    assert english["403 import roots"].startswith(
        f"error: refused (import roots): {link} (resolves to {outside.resolve()}) is outside the allowed import roots: "
        f"{roots}. To fix:"
    )
    # only names, options, paths and commands in English (quoted or flags, which untranslated() skips)
    paths = (str(tmp_path.resolve()), str(tmp_path), str(imports.resolve()), str(imports), str(EXAMPLES.resolve()))
    left = {k: untranslated(reduce(lambda t, p: t.replace(p, " "), paths, text)) for k, text in shown.items()}
    assert left == {k: [] for k in shown}, (left, shown)


def test_a_refused_job_spec_reads_in_portuguese(server: ServerProcess, tmp_path: Path) -> None:
    """`treino submit` of specs the server refuses (422): pydantic's own words, the spec's validators (an offload the
    planner does not know), an unknown key (with the keys of its mapping), more GPUs than the server has, and a
    spec's rule across fields, each worded by the CLI in pt-BR from the data the server sent (message_msg); the same
    lines in English as the server says them, and the same exit code."""
    from tests.cli.test_cli_i18n import untranslated

    if server.db_url is not None:
        pytest.skip("the same words on PostgreSQL")
    specs = {
        "fields.yaml": {
            "name": "bad name",
            "command": ["true"],
            "gpus": "2",
            "priority": 500,
            "colour": "red",
            "plan": {"model": "llama-3-8b", "ofload": "gpu", "offload": "gpu"},
            "trackers": ["wandbb"],
            "memorisation_check": "yes",
        },
        "big.yaml": {"name": "big", "command": ["true"], "gpus": 9},
        "args.yaml": {"name": "args", "command": ["true"], "args": ["x"]},
    }
    spec_keys = (
        "'name', 'command', 'script', 'args', 'workdir', 'gpus', 'nodes', 'env', 'priority', 'max_restarts', "
        "'timeout_minutes', 'total_steps', 'grace_seconds', 'memory_gb', 'plan', 'datasets', 'purpose', 'trackers', "
        "'sisa', 'memorisation_check'"
    )
    plan_keys = (
        "'model', 'micro_batch', 'seq_len', 'grad_accum', 'precision', 'optimizer', 'attention', 'checkpointing', "
        "'zero', 'tp', 'offload', 'lora_rank', 'quant'"
    )
    expected = {  # file -> (its pt-BR lines, its English lines)
        "fields.yaml": (
            [
                "erro: O servidor recusou a especificação do job fields.yaml (422):",
                "  name: O texto deve seguir o padrão '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'",
                "  gpus: Deveria ser um número inteiro",
                "  priority: O valor deve ser menor ou igual a 100",
                "  plan.offload: o planejador não conhece offload 'gpu'. Como corrigir: use um de none, optimizer, "
                "optimizer+params",
                "  plan.ofload: Não são permitidos campos extras. Você quis dizer 'offload'? Como corrigir: remova-o, "
                f"ou use uma chave de plan: {plan_keys}.",
                "  trackers: não há tracker 'wandbb' (você quis dizer 'wandb'?); o treino escreve em tensorboard, "
                "mlflow, wandb. Como corrigir: indique alguns deles, ou [] para nenhum",
                "  memorisation_check: Deveria ser um booleano (true/false)",
                "  colour: Não são permitidos campos extras. Como corrigir: remova-o, ou use uma das chaves "
                f"{spec_keys}.",
            ],
            [
                "error: The server refused the job spec fields.yaml (422):",
                "  name: String should match pattern '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'",
                "  gpus: Input should be a valid integer",
                "  priority: Input should be less than or equal to 100",
                "  plan.offload: the planner knows no offload 'gpu'. To fix: use one of none, optimizer, "
                "optimizer+params",
                "  plan.ofload: Extra inputs are not permitted. Did you mean 'offload'? To fix: remove it, or use a "
                f"key of plan: {plan_keys}.",
                "  trackers: no tracker 'wandbb' (did you mean 'wandb'?); treino writes to tensorboard, mlflow, wandb. "
                "To fix: name some of those, or [] for none",
                "  memorisation_check: Input should be a valid boolean",
                f"  colour: Extra inputs are not permitted. To fix: remove it, or use one of the keys {spec_keys}.",
            ],
        ),
        "big.yaml": (
            [
                "erro: O servidor recusou a especificação do job big.yaml (422):",
                "  gpus: pede 9, mas este servidor tem 2 (2 slots de CPU (sem GPUs: os jobs rodam na CPU com gloo)). "
                "Como corrigir: gpus <= 2.",
            ],
            [
                "error: The server refused the job spec big.yaml (422):",
                "  gpus: asks for 9 but this server has 2 (2 CPU slots (no GPUs: jobs run on CPU with gloo)). To fix: "
                "gpus <= 2.",
            ],
        ),
        "args.yaml": (
            [
                "erro: O servidor recusou a especificação do job args.yaml (422):",
                "  (body): 'args' acompanha 'script'; ponha os argumentos de um comando na lista 'command'",
            ],
            [
                "error: The server refused the job spec args.yaml (422):",
                "  (body): 'args' goes with 'script'; put a command's arguments in the 'command' list",
            ],
        ),
    }
    for name, spec in specs.items():
        (tmp_path / name).write_text(json.dumps(spec))  # JSON is YAML
        portuguese, english = expected[name]
        pt = treino("--lang", "pt-BR", "submit", name, cwd=tmp_path, url=server.url, token=server.token)
        assert (pt.returncode, pt.stdout) == (1, ""), pt.stderr
        assert sorted(pt.stderr.splitlines()) == sorted(portuguese)  # pydantic's order of fields, not ours
        # the spec's own names (each line's field, the values the planner and treino know) stay as they are
        words = re.sub(r"(?m)^  \S+:|none, optimizer, optimizer\+params|tensorboard, mlflow, wandb", " ", pt.stderr)
        assert untranslated(words) == [], pt.stderr
        en = treino("--lang", "en", "submit", name, cwd=tmp_path, url=server.url, token=server.token)
        assert (en.returncode, en.stdout) == (1, "")
        assert sorted(en.stderr.splitlines()) == sorted(english)
