"""The job spec: what `treino submit job.yaml` sends and `POST /api/v1/jobs` validates.

name: llama-ft                 # letters, digits, '.', '_', '-'
script: train.py               # run as `torchrun --standalone --nproc-per-node=<gpus> train.py <args>`
args: [--steps, "1000"]        #   (plain `python train.py` when the job has one process)
# or: command: [python, -m, mypkg.train]   an argv list, run as is
workdir: /srv/projects/llm     # default: the server's data dir
gpus: 2                        # whole GPUs per node (or CPU slots on a `--devices cpu:N` server)
nodes: 1                       # machines (Slurm backend): one torchrun agent per node, world size nodes x gpus
priority: 0                    # higher runs first; FIFO within a priority
max_restarts: 3                # restarts after a crash (OOM is never retried)
timeout_minutes: 600           # optional wall-clock limit of one attempt; also lets small jobs backfill
grace_seconds: 30              # SIGTERM -> SIGKILL on cancel and preemption, time to save a checkpoint
memory_gb: 64                  # optional memory limit of one attempt, all its processes (its cgroup, where
                               #   the server has cgroups; the kernel's OOM killer ends it beyond that)
env: {HF_HOME: /data/hf}
plan: {model: llama-3.1-8b, micro_batch: 1, seq_len: 4096, precision: bf16-mixed, checkpointing: full}
datasets: [clientes-2026]      # enforced by the governance issue
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import yaml
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationError, model_validator

from treino.errors import JobError

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
MAX_GPUS_PER_JOB = 1024  # a sanity bound; the server checks its own inventory
MAX_NODES_PER_JOB = 1024  # likewise
MAX_MEMORY_GB = 1024.0**2  # a sanity bound (1 PiB): memory_gb * 1024**3 bytes must fit a 64-bit integer
TORCHRUN_SHUTDOWN_TIMEOUT_S = 30  # torchrun's default --shutdown-timeout
DEFAULT_GRACE_S = 30.0  # SIGTERM -> SIGKILL on cancel, preemption and timeout
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,199}$"  # what execve's environment can hold as a name (no '=')


def no_nul(value: str) -> str:
    """Refuse NUL bytes: argv, paths and environment entries cannot hold them, nor can PostgreSQL text."""
    if "\x00" in value:
        raise ValueError("may not contain NUL bytes (\\x00)")
    return value


Text = Annotated[str, AfterValidator(no_nul)]
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]


class PlanSpec(BaseModel):
    """The planner's inputs for admission control (the fields of `treino plan train`)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: str
    micro_batch: int = Field(1, ge=1, le=1_000_000)
    seq_len: int = Field(2048, ge=1, le=100_000_000)
    precision: str = "bf16-mixed"
    optimizer: str = "adamw"
    attention: str = "sdpa"
    checkpointing: str = "none"
    zero: int = Field(0, ge=0, le=3)
    tp: int = Field(1, ge=1, le=1024)
    lora_rank: int = Field(0, ge=0, le=65_536)


class JobSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # no coercion: "2" is not 2 GPUs

    name: str = Field(pattern=NAME_PATTERN)
    command: list[Text] | None = Field(None, min_length=1)
    script: Text | None = None
    args: list[Text] = Field(default_factory=list)
    workdir: Text | None = None
    gpus: int = Field(1, ge=1, le=MAX_GPUS_PER_JOB)  # per node
    nodes: int = Field(1, ge=1, le=MAX_NODES_PER_JOB)
    env: dict[EnvName, Text] = Field(default_factory=dict)
    priority: int = Field(0, ge=-100, le=100)
    max_restarts: int = Field(0, ge=0, le=100)
    timeout_minutes: float | None = Field(None, gt=0, le=10_000_000)
    grace_seconds: float = Field(DEFAULT_GRACE_S, ge=0, le=3600)
    memory_gb: float | None = Field(None, gt=0, le=MAX_MEMORY_GB)  # per attempt (GiB, 1024**3 bytes)
    plan: PlanSpec | None = None
    datasets: list[Text] = Field(default_factory=list)
    purpose: Text | None = Field(None, max_length=100)  # why the job reads its datasets (LGPD Art. 6 I)

    @model_validator(mode="after")
    def _one_entry_point(self) -> JobSpec:
        if (self.command is None) == (self.script is None):
            raise ValueError("give exactly one of 'command' (an argv list) or 'script' (a Python file)")
        if self.command is not None and self.args:
            raise ValueError("'args' goes with 'script'; put a command's arguments in the 'command' list")
        reserved = sorted(k for k in self.env if k.startswith("TREINO_") or k == "CUDA_VISIBLE_DEVICES")
        if reserved:
            raise ValueError(f"env may not set {', '.join(reserved)}: the server sets them")
        return self

    def argv(self, processes: int, python: str) -> list[str]:
        """The command line of one attempt: torchrun for several processes, plain Python for one."""
        if self.command is not None:
            return list(self.command)
        assert self.script is not None
        if processes == 1:
            return [python, self.script, *self.args]
        torchrun = [python, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={processes}"]
        if self.grace_seconds > TORCHRUN_SHUTDOWN_TIMEOUT_S:
            # torchrun SIGKILLs its workers this long after passing SIGTERM on; a longer grace needs the flag
            # (torch >= 2.13 has it; older torchrun refuses it, so it is only added when it matters).
            torchrun.append(f"--shutdown-timeout={int(self.grace_seconds) + 1}")
        return [*torchrun, self.script, *self.args]

    @property
    def memory_bytes(self) -> int | None:
        return None if self.memory_gb is None else int(self.memory_gb * 1024**3)

    def script_argv(self) -> list[str] | None:
        """What torchrun runs on each node of a multi-node job (`script` + `args`); None for a `command`."""
        return None if self.script is None else [self.script, *self.args]


def field_errors(exc: ValidationError) -> list[dict[str, Any]]:
    """Pydantic's errors as `{field, message}`, for the CLI's own check of a spec file (the API's 422s are built by
    treino.server.api.errors from the same errors)."""
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(spec)"
        message = str(err["msg"]).removeprefix("Value error, ")
        out.append({"field": where, "message": message})
    return out


def load_spec_file(path: Path) -> dict[str, Any]:
    """A spec file's raw mapping (YAML or JSON); validation happens on the server, which knows its GPUs."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise JobError(f"Cannot read the job spec {path}: {exc.strerror}. To fix: check the path.") from exc
    try:
        data = json.loads(text) if path.suffix == ".json" else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise JobError(f"{path} is not valid {'JSON' if path.suffix == '.json' else 'YAML'}: {exc}") from exc
    if not isinstance(data, dict):
        raise JobError(f"{path} must hold a mapping (name, script or command, gpus, ...), not {type(data).__name__}.")
    return data


def parse_spec(data: dict[str, Any]) -> JobSpec:
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        lines = "; ".join(f"{e['field']}: {e['message']}" for e in field_errors(exc))
        raise JobError(f"Invalid job spec: {lines}.") from exc
