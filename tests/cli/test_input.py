"""What users type for --residency and --model org/name: real `treino` subprocesses, no network."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
MODELS = SRC / "treino" / "catalog" / "models"
RECOMMEND = ["recommend", "--model", "llama-3-8b", "--tokens", "1e9"]


def treino(*args: str, hf_home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {"COLUMNS": "120", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(SRC), "HOME": "/nonexistent"}
    if hf_home is not None:
        env["HF_HOME"] = str(hf_home)
    return subprocess.run([sys.executable, "-m", "treino", *args], capture_output=True, text=True, timeout=120, env=env)


def test_residency_written_out_is_a_usage_error_with_a_suggestion() -> None:
    r = treino(*RECOMMEND, "--residency", "Brasil")
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1
    assert "Did you mean 'BR'?" in r.stderr
    assert "To fix:" in r.stderr and "treino sites" in r.stderr


@pytest.mark.parametrize("value", ["br", "eveo-sp1"])
def test_residency_by_country_code_in_any_case_or_by_site(value: str) -> None:
    r = treino(*RECOMMEND, "--residency", value, "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["choices"] and {c["country"] for c in out["choices"]} == {"BR"}
    assert any(x["kind"] == "residency" for x in out["rejected"])  # offers in the US were turned away


def _snapshot(hub: Path, repo: str, revision: str, preset: str) -> Path:
    folder = hub / ("models--" + repo.replace("/", "--")) / "snapshots" / revision
    folder.mkdir(parents=True)
    shutil.copy(MODELS / f"{preset}.json", folder / "config.json")
    return folder


def test_model_org_name_from_the_hf_cache_refs_main_first_then_newest(tmp_path: Path) -> None:
    hub = tmp_path / "hub"
    pinned = _snapshot(hub, "acme/tiny", "aaa111", "gpt2")
    _snapshot(hub, "acme/tiny", "bbb222", "llama-3.2-1b")
    os.utime(pinned / "config.json", (1, 1))  # bbb222 is the newest snapshot, aaa111 the one refs/main names
    (hub / "models--acme--tiny" / "refs").mkdir()
    (hub / "models--acme--tiny" / "refs" / "main").write_text("aaa111\n")
    plan = ["plan", "train", "--model", "acme/tiny", "--gpu", "h200-sxm", "--seq-len", "512", "--json"]
    r = treino(*plan, hf_home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["family"] == "gpt2"
    (hub / "models--acme--tiny" / "refs" / "main").unlink()
    r = treino(*plan, hf_home=tmp_path)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["family"] == "llama"


def test_model_not_in_the_hf_cache_says_where_it_looked_and_how_to_pass_a_file(tmp_path: Path) -> None:
    r = treino("plan", "train", "--model", "acme/absent", "--gpu", "h200-sxm", hf_home=tmp_path)
    assert r.returncode == 2, r.stdout + r.stderr
    line = " ".join(r.stderr.split())
    assert f"{tmp_path}/hub/models--acme--absent/snapshots/*/config.json" in line
    assert "huggingface-cli download acme/absent config.json" in line
    assert "--model path/to/config.json" in line
