"""The people and data most governance tests start from: users eng1 (engineer), dpo1 (dpo), view1 (viewer) with
tokens; the synthetic `clientes` dataset registered by eng1; dpo1's grant to eng1 for churn-model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
CLIENTES = {
    "name": "clientes",
    "path": str(DATA / "clientes.csv"),
    "legal_basis": "art7-ix",
    "purposes": ["churn-model"],
    "personal_data": True,
    "residency": "BR",
    "retention_days": 365,
    "subject_column": "cpf",
}


def call(url: str, token: str, method: str, path: str, **kw: Any) -> httpx.Response:
    return httpx.request(method, url + path, headers={"Authorization": f"Bearer {token}"}, timeout=30, **kw)


def people_and_clientes(url: str, admin_token: str) -> dict[str, str]:
    """Tokens by user name (admin included), after the users, the dataset and the grant exist."""
    tokens = {"admin": admin_token}
    for name, role in (("eng1", "engineer"), ("dpo1", "dpo"), ("view1", "viewer")):
        r = call(url, admin_token, "POST", "/api/v1/users", json={"name": name, "role": role})
        assert r.status_code == 201, r.text
        r = call(url, admin_token, "POST", "/api/v1/tokens", json={"user": name})
        assert r.status_code == 201, r.text
        tokens[name] = r.json()["token"]
    r = call(url, tokens["eng1"], "POST", "/api/v1/datasets", json=CLIENTES)
    assert r.status_code == 201, r.text
    grant = {"user": "eng1", "dataset": "clientes", "purposes": ["churn-model"]}
    r = call(url, tokens["dpo1"], "POST", "/api/v1/grants", json=grant)
    assert r.status_code == 201, r.text
    return tokens


def churn_job(name: str = "churn", steps: int = 30) -> dict[str, Any]:
    return {
        "name": name,
        "script": str(ROOT / "examples" / "churn_train.py"),
        "args": ["--steps", str(steps), "--save-every", "10"],
        "workdir": str(ROOT),
        "datasets": ["clientes"],
        "purpose": "churn-model",
        "memorisation_check": True,  # an erasure's retraining checks what the new model remembers (churn_train.py)
        "env": {"OMP_NUM_THREADS": "1"},
    }
