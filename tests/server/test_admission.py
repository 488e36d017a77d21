"""Admission control's advice can be followed: a refusal names job spec keys (never CLI flags), and the spec with
any one option merged in is admitted (treino.server.admission, treino.plan.advice, PlanSpec in treino.server.spec).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
import yaml

from tests.server.conftest import StartServer
from treino import catalog
from treino.errors import SpecError
from treino.server.admission import admission_for
from treino.server.spec import JobSpec

GPUS_PER_NODE = 2  # what the test servers have (tests/server/conftest.py: cpu:2)
OPTION = re.compile(r"GiB with ((?:gpus|plan): [^()]*)\)")  # "... (19.7 GiB with plan: {zero: 3, ...})"

# Big models on a 24 GB L4: full fine-tunes, several GPUs, two nodes, LoRA, some savings already made.
REFUSED: dict[str, dict[str, Any]] = {
    "8b-full": {"plan": {"model": "llama-3.1-8b"}},
    "8b-2gpus-long": {"gpus": 2, "plan": {"model": "llama-3.1-8b", "micro_batch": 4, "seq_len": 4096}},
    "8b-fp32-2nodes": {"nodes": 2, "plan": {"model": "llama-3.1-8b", "precision": "fp32", "zero": 3}},
    "14b-lora": {"gpus": 2, "plan": {"model": "qwen2.5-14b", "lora_rank": 8}},
    "8b-offloading": {
        "plan": {"model": "llama-3.1-8b", "zero": 3, "offload": "optimizer", "checkpointing": "full"},
    },
}


def job(spec: dict[str, Any]) -> dict[str, Any]:
    return {"name": "ft", "command": ["true"], **spec}


def merged(spec: dict[str, Any], keys: str) -> dict[str, Any]:
    """`spec` with an option's keys (`gpus: 2, plan: {zero: 3}`) merged in, as a user edits the YAML."""
    change = yaml.safe_load("{" + keys + "}")
    assert isinstance(change, dict) and set(change) <= {"gpus", "plan"}, keys
    return {**spec, **change, "plan": {**spec["plan"], **change.get("plan", {})}}


def refusal_options(message: str) -> list[str]:
    assert "does not fit" in message and "To fix:" in message, message
    assert "--" not in message, message  # spec keys, not `treino plan train` flags
    options = OPTION.findall(message)
    assert options, message
    return options


@pytest.mark.parametrize("spec", REFUSED.values(), ids=REFUSED.keys())
def test_every_option_of_a_refusal_merged_into_the_spec_is_admitted(spec: dict[str, Any]) -> None:
    check = admission_for(catalog.gpu("l4"), lambda: GPUS_PER_NODE)
    with pytest.raises(SpecError) as refused:
        check(JobSpec.model_validate(job(spec)))
    assert refused.value.field == "plan"
    for keys in refusal_options(str(refused.value)):
        fixed = JobSpec.model_validate(job(merged(spec, keys)))
        assert fixed.gpus <= GPUS_PER_NODE, keys  # never more GPUs per node than the server has
        assert check(fixed).startswith("fits: "), keys


def test_a_refused_job_follows_the_advice_and_is_admitted_and_a_bad_plan_value_names_the_good_ones(
    start_server: StartServer,
) -> None:
    server = start_server(extra_args=["--admission-gpu", "l4"])
    spec = REFUSED["8b-full"]
    with server.client() as c:
        r = c.post("/api/v1/jobs", json=job(spec))
        assert r.status_code == 422 and r.json()["detail"][0]["field"] == "plan", r.text
        options = refusal_options(r.json()["detail"][0]["message"])
        for keys in options:
            r = c.post("/api/v1/jobs", json=job(merged(spec, keys)))
            assert r.status_code == 201, (keys, r.text)
        assert len(c.get("/api/v1/jobs").json()["jobs"]) == len(options)
        for key, value, allowed in (
            ("offload", "gpu", "none, optimizer, optimizer+params"),
            ("quant", "int4", "none, nf4"),
            ("precision", "fp4", "bf16-master"),
        ):
            r = c.post("/api/v1/jobs", json=job({"plan": {**spec["plan"], key: value}}))
            assert r.status_code == 422, r.text
            error = r.json()["detail"][0]
            assert error["field"] == f"plan.{key}" and repr(value) in error["message"], error
            assert allowed in error["message"] and "To fix:" in error["message"], error
