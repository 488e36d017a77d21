"""The API against its own contract: schemathesis generates requests from /openapi.json (valid and invalid, edge
integers, odd strings, NUL bytes, wrong methods) against a real server, and every answer must be documented there,
status and body: no 5xx, no undocumented status, content type or Allow header, no schema violation, no invalid
input accepted, no authenticated route answering without a token.

Bounded (a fixed seed, SCHEMATHESIS_EXAMPLES per operation) and local: the server listens on 127.0.0.1 only.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import httpx

from tests.server.conftest import ServerProcess, clean_env
from treino.server.settings import IDEMPOTENCY_KEY_PATTERN

SCHEMATHESIS_EXAMPLES = 25  # per operation and phase: ~1 min on 2 cores
SCHEMATHESIS_TIMEOUT_S = 600
# Revoking tokens would revoke the run's own admin token halfway; it gets a run of its own, last.
REVOKE = "/api/v1/tokens/{token_id}/revoke"


def schemathesis(server: ServerProcess, tmp: Path, *filters: str) -> subprocess.CompletedProcess[str]:
    argv = [
        str(Path(sys.executable).with_name("st")),
        "run",
        f"{server.url}/openapi.json",
        "--header",
        f"Authorization: Bearer {server.token}",
        "--checks",
        "all",
        # Not a contract check: a schema-valid request may still be refused with a documented 422 when it names an
        # unknown site, more nodes than this server has, a checkpoint outside the job's folder, or holds a NUL byte.
        "--exclude-checks",
        "positive_data_acceptance",
        "--max-examples",
        str(SCHEMATHESIS_EXAMPLES),
        "--seed",
        "20261201",
        "--workers",
        "1",
        "--generation-database",
        "none",
        "--generation-allow-x00",
        "true",
        "--no-color",
        "--request-timeout",
        "30",
        *filters,
    ]
    env = clean_env(SCHEMATHESIS_TELEMETRY="false", COLUMNS="160")
    return subprocess.run(
        argv, cwd=tmp, env=env, capture_output=True, text=True, timeout=SCHEMATHESIS_TIMEOUT_S, check=False
    )


def test_every_answer_is_the_one_the_openapi_document_promises(server: ServerProcess, tmp_path: Path) -> None:
    spec = httpx.get(f"{server.url}/openapi.json").json()
    submit = spec["paths"]["/api/v1/jobs"]["post"]
    # the job spec is typed in the contract, and so are the errors actually sent
    assert submit["requestBody"]["content"]["application/json"]["schema"]["$ref"].endswith("/JobSpec")
    assert {"200", "201", "401", "403", "409", "413", "422"} <= set(submit["responses"])
    [key] = [p for p in submit["parameters"] if p["name"] == "idempotency-key"]  # a repeat returns the first job
    assert key["in"] == "header" and key["schema"]["anyOf"][0]["pattern"] == IDEMPOTENCY_KEY_PATTERN
    for path in ("/api/v1/jobs", "/api/v1/jobs/{job_id}/metrics", "/api/v1/users", "/api/v1/datasets"):
        assert "401" in spec["paths"][path]["post"]["responses"]  # refused before the body is read
    assert spec["components"]["schemas"]["Invalid"]["properties"]["detail"]["items"]["$ref"].endswith("/FieldError")
    assert "HTTPValidationError" not in spec["components"]["schemas"]  # FastAPI's default 422 shape is not sent

    main = schemathesis(server, tmp_path, "--exclude-path", REVOKE)
    assert main.returncode == 0, main.stdout[-20_000:] + main.stderr[-5_000:]
    assert "API Operations:" in main.stdout and "Selected: 45/46" in main.stdout, main.stdout[-3_000:]
    revoke = schemathesis(server, tmp_path, "--include-path", REVOKE)
    assert revoke.returncode == 0, revoke.stdout[-20_000:] + revoke.stderr[-5_000:]
    assert "Server error" not in server.log() and "Traceback" not in server.log(), server.log()[-5_000:]
