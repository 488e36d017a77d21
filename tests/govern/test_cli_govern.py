"""`treino users | tokens | grant | data | audit | subject | erase` as a DPO and an engineer run them: real CLI
subprocesses against a real server at site eveo-sp1 that imports from examples/data."""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from collections.abc import Iterator
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
    refusals = {
        "404": ("show", "987654"),
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
    # only names, options, paths and commands in English (quoted or flags, which untranslated() skips)
    left = {k: untranslated(text) for k, text in shown.items()}
    assert left == {k: [] for k in shown}, (left, shown)
