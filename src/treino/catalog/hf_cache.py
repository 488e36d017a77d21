"""`--model org/name`: the config.json of a Hugging Face repo from the local hub cache, never from the network.

The cache is where `huggingface_hub` keeps it: $HF_HUB_CACHE, else $HF_HOME/hub, else
$XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub; a repo lives in models--ORG--NAME/, its files in
snapshots/REVISION/. The snapshot refs/main names is used, else the newest one holding a config.json."""

from __future__ import annotations

import os
from pathlib import Path

from treino.errors import UnknownNameError
from treino.i18n import Msg


def hub_cache_dir() -> Path:
    """The hub cache folder huggingface_hub would use, from the same environment variables."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(xdg).expanduser() / "huggingface" / "hub"


def cached_config(repo_id: str) -> Path:
    """The cached config.json of `repo_id` ('org/name'). Raises UnknownNameError (exit 2) saying where it looked
    and how to pass the file instead."""
    repo = hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    snapshots = repo / "snapshots"
    ref = repo / "refs" / "main"
    if ref.is_file():
        pinned = snapshots / ref.read_text(encoding="utf-8").strip() / "config.json"
        if pinned.is_file():
            return pinned
    found = sorted(snapshots.glob("*/config.json"), key=lambda p: p.stat().st_mtime, reverse=True)
    if found:
        return found[0]
    raise UnknownNameError(
        Msg(
            "Model {repo!r} is neither a preset nor in the local Hugging Face cache (looked for "
            "{snapshots}/*/config.json; treino never downloads). To fix: on a machine with network run "
            "'huggingface-cli download {repo} config.json' (or set HF_HOME to the cache that holds it), or copy its "
            "config.json here and pass --model path/to/config.json; 'treino models' lists the presets.",
            repo=repo_id,
            snapshots=str(snapshots),
        )
    )
