"""`make demo`'s LGPD story on the synthetic customer data shipped in examples/data/clientes.csv:
register the dataset, train, refuse a job at a Miami site, erase one customer, show the affected model, the
retraining and a verified audit chain. Two real servers (SP1 Cotia and FL1 Miami), driven through the CLI."""

from __future__ import annotations

import csv
import tempfile
from pathlib import Path

from demo_common import ROOT, DemoServer, run

DATA = ROOT / "examples" / "data"


def people_and_data(server: DemoServer) -> dict[str, str]:
    """ana (engineer) registers clientes; bia (the DPO) grants her the churn-model purpose."""
    admin = server.env()
    run("users", "add", "ana", "--role", "engineer", env=admin, as_user="admin")
    run("users", "add", "bia", "--role", "dpo", env=admin, as_user="admin")
    tokens = {}
    for user in ("ana", "bia"):
        out = run("tokens", "create", user, "--json", env=admin, as_user="admin")
        tokens[user] = out.split('"token": "')[1].split('"')[0]
    register = ["data", "add", "clientes", str(DATA / "clientes.csv"), "--legal-basis", "art7-ix"]
    register += ["--purpose", "churn-model", "--personal", "--subject-column", "cpf", "--retention-days", "365"]
    run(*register, env=server.env(tokens["ana"]), as_user="ana")
    run("grant", "ana", "clientes", "--purpose", "churn-model", env=server.env(tokens["bia"]), as_user="bia")
    return tokens


def main() -> int:
    with (DATA / "clientes.csv").open() as f:
        customer = next(csv.DictReader(f))["cpf"]
    job_spec = str(ROOT / "examples" / "churn_job.yaml")
    with tempfile.TemporaryDirectory(prefix="treino-lgpd-") as tmp:
        print("== 1. São Paulo (EVEO SP1, Cotia): register the customer data and train ==", flush=True)
        sp1 = DemoServer(Path(tmp) / "sp1", "--site", "eveo-sp1", "--import-root", str(DATA))
        miami = None
        try:
            tokens = people_and_data(sp1)
            ana, bia = sp1.env(tokens["ana"]), sp1.env(tokens["bia"])
            out = run("submit", job_spec, env=ana, as_user="ana")
            job_id = out.split("job ")[1].split()[0]
            run("logs", job_id, "--follow", env=ana, as_user="ana")

            print("== 2. Miami (EVEO FL1): the same job is refused, Brazilian data stays in Brazil ==", flush=True)
            miami = DemoServer(Path(tmp) / "fl1", "--site", "eveo-fl1", "--import-root", str(DATA))
            miami_tokens = people_and_data(miami)
            run("submit", job_spec, env=miami.env(miami_tokens["ana"]), as_user="ana", check=False)

            print(f"== 3. A customer asks what is held about them, then for erasure ({customer}) ==", flush=True)
            run("subject", "report", "--subject", customer, env=bia, as_user="bia")
            run("erase", "--subject", customer, "--retrain", env=bia, as_user="bia")
            run("lineage", "models", env=bia, as_user="bia")
            run("data", "show", "clientes", env=bia, as_user="bia")
            retrain = str(int(job_id) + 1)
            run("logs", retrain, "--follow", env=ana, as_user="ana")

            print("== 4. The audit chain, verified ==", flush=True)
            run("audit", "verify", env=bia, as_user="bia")
        finally:
            sp1.stop()
            if miami is not None:
                miami.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
