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
total_steps: 1000              # optional: the step it ends at, for progress and ETA (else `--steps N` in args)
grace_seconds: 30              # SIGTERM -> SIGKILL on cancel and preemption, time to save a checkpoint
memory_gb: 64                  # optional memory limit of one attempt, all its processes (its cgroup, where
                               #   the server has cgroups; the kernel's OOM killer ends it beyond that)
env: {HF_HOME: /data/hf}
plan: {model: llama-3.1-8b, micro_batch: 1, seq_len: 4096, precision: bf16-mixed, checkpointing: full}
                               # admission control (PlanSpec: also grad_accum, zero, tp, offload, lora_rank, quant);
                               #   a refusal's advice names these keys: `plan: {zero: 3, offload: optimizer}`
datasets: [clientes-2026]      # enforced by the governance issue
sisa: {shards: 3, slices: 4}   # SISA training (treino.sisa): the job gets TREINO_SISA=3:4; an erasure's retraining
                               #   continues from its shards' slice checkpoints, retraining only the affected shards
memorisation_check: true       # an erasure's retraining of this job is given the erased subject's rows, which its
                               #   code compares with held-out rows (treino.sisa.memorisation_check); SISA jobs always
trackers: [tensorboard, mlflow, wandb]   # what run.log/run.config also write to, in the job's folder (treino.trackers);
                               #   absent: TensorBoard when the job's Python has it; []: none. Each one's package must
                               #   be importable by the job's Python, checked at submit (treino.server.trackers)
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping
from pathlib import Path
from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    WithJsonSchema,
    field_validator,
    model_validator,
)

from treino import trackers as tracker_bridges
from treino.errors import JobError
from treino.i18n import Joined, Msg, message_of, pydantic_msg
from treino.plan.memory import ATTENTIONS, CHECKPOINTING, OFFLOADS, OPTIMIZERS, PRECISIONS, QUANTS
from treino.server.settings import (
    ARG_STRING_BYTES_MAX,
    ARGV_ENV_BYTES_MAX,
    DATASETS_PER_JOB_MAX,
    ENV_VARS_MAX,
    PATH_BYTES_MAX,
    PATH_COMPONENT_BYTES_MAX,
    SPEC_FILE_ALIASES_MAX,
    SPEC_FILE_BYTES_MAX,
    SPEC_FILE_DEPTH_MAX,
    SPEC_FILE_NODES_MAX,
    SPEC_STRING_CHARS_MAX,
)
from treino.sisa import SHARDS_MAX as SISA_SHARDS_MAX
from treino.sisa import SLICES_MAX as SISA_SLICES_MAX

NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"
MAX_GPUS_PER_JOB = 1024  # a sanity bound; the server checks its own inventory
MAX_NODES_PER_JOB = 1024  # likewise
TOTAL_STEPS_MAX = 2**53  # a sanity bound that JSON numbers (doubles) still hold exactly
MAX_MEMORY_GB = 1024.0**2  # a sanity bound (1 PiB): memory_gb * 1024**3 bytes must fit a 64-bit integer
TORCHRUN_SHUTDOWN_TIMEOUT_S = 30  # torchrun's default --shutdown-timeout
DEFAULT_GRACE_S = 30.0  # SIGTERM -> SIGKILL on cancel, preemption and timeout
ENV_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,199}$"  # what execve's environment can hold as a name (no '=')


def no_nul(value: str) -> str:
    """Refuse NUL bytes: argv, paths and environment entries cannot hold them, nor can PostgreSQL text. Nor a lone
    surrogate (JSON's "\\ud800"): it has no UTF-8 form for a database, a file name or an argv."""
    if "\x00" in value:
        raise ValueError(Msg("may not contain NUL bytes (\\x00)"))
    try:
        value.encode()
    except UnicodeEncodeError as exc:
        raise ValueError(
            Msg("is not valid Unicode ({reason} at character {start})", reason=exc.reason, start=exc.start)
        ) from exc
    return value


def fs_path(value: str) -> str:
    """A path the kernel can take: no NUL, at most PATH_BYTES_MAX bytes (PATH_MAX) and no name in it over
    PATH_COMPONENT_BYTES_MAX (NAME_MAX); else open() fails with ENAMETOOLONG long after the API said yes."""
    size = len(no_nul(value).encode())
    if size > PATH_BYTES_MAX:
        raise ValueError(
            Msg("is {size} bytes long; a path may have at most {most} (PATH_MAX)", size=size, most=PATH_BYTES_MAX)
        )
    longest = max((len(part.encode()) for part in value.split("/")), default=0)
    if longest > PATH_COMPONENT_BYTES_MAX:
        raise ValueError(
            Msg(
                "has a name of {longest} bytes; each name in a path may have at most {most} (NAME_MAX)",
                longest=longest,
                most=PATH_COMPONENT_BYTES_MAX,
            )
        )
    return value


def arg_string(value: str) -> str:
    """One argv string: at most ARG_STRING_BYTES_MAX bytes (the kernel's MAX_ARG_STRLEN), else execve fails."""
    size = len(no_nul(value).encode())
    if size > ARG_STRING_BYTES_MAX:
        raise ValueError(
            Msg(
                "is {size} bytes long; one argument may have at most {most} (MAX_ARG_STRLEN)",
                size=size,
                most=ARG_STRING_BYTES_MAX,
            )
        )
    return value


Text = Annotated[str, AfterValidator(no_nul)]
ShortText = Annotated[str, Field(max_length=SPEC_STRING_CHARS_MAX), AfterValidator(no_nul)]
Purpose = Annotated[str, Field(max_length=100), AfterValidator(no_nul)]  # pydantic then says "String ..."
Arg = Annotated[str, AfterValidator(arg_string)]
FsPath = Annotated[str, Field(min_length=1), AfterValidator(fs_path)]
ArgPath = Annotated[str, Field(min_length=1), AfterValidator(fs_path), AfterValidator(arg_string)]
EnvName = Annotated[str, Field(pattern=ENV_NAME_PATTERN)]


def planner_choice(label: str, allowed: tuple[str, ...]) -> AfterValidator:
    """Refuse a `label` the planner does not know, naming those it does (treino.plan.memory)."""

    def check(value: str) -> str:
        if value not in allowed:
            raise ValueError(
                Msg(
                    "the planner knows no {label} {value!r}. To fix: use one of {allowed}",
                    label=label,
                    value=value,
                    allowed=", ".join(allowed),
                )
            )
        return value

    return AfterValidator(check)


def enum(allowed: tuple[str, ...]) -> WithJsonSchema:
    return WithJsonSchema({"type": "string", "enum": list(allowed)})


Precision = Annotated[str, planner_choice("precision", PRECISIONS), enum(PRECISIONS)]
Optimizer = Annotated[str, planner_choice("optimizer", OPTIMIZERS), enum(OPTIMIZERS)]
Attention = Annotated[str, planner_choice("attention", ATTENTIONS), enum(ATTENTIONS)]
Checkpointing = Annotated[str, planner_choice("checkpointing", CHECKPOINTING), enum(CHECKPOINTING)]
Offload = Annotated[str, planner_choice("offload", OFFLOADS), enum(OFFLOADS)]
Quant = Annotated[str, planner_choice("quant", QUANTS), enum(QUANTS)]


class PlanSpec(BaseModel):
    """The planner's inputs for admission control: the fields of `treino plan train`, named as treino.plan's
    TrainSetup fields, so that every change the planner's advice names is a key here (treino.plan.advice)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    model: ShortText
    micro_batch: int = Field(1, ge=1, le=1_000_000)
    seq_len: int = Field(2048, ge=1, le=100_000_000)
    grad_accum: int = Field(1, ge=1, le=1_000_000)
    precision: Precision = "bf16-mixed"
    optimizer: Optimizer = "adamw"
    attention: Attention = "sdpa"
    checkpointing: Checkpointing = "none"
    zero: int = Field(0, ge=0, le=3)
    tp: int = Field(1, ge=1, le=1024)
    offload: Offload = "none"
    lora_rank: int = Field(0, ge=0, le=65_536)
    quant: Quant = "none"


class SisaSpec(BaseModel):
    """SISA training (treino.sisa): the rows in `shards` shards of `slices` slices each, by subject."""

    model_config = ConfigDict(extra="forbid", strict=True)

    shards: int = Field(ge=1, le=SISA_SHARDS_MAX)
    slices: int = Field(1, ge=1, le=SISA_SLICES_MAX)


class JobSpec(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)  # no coercion: "2" is not 2 GPUs

    name: str = Field(pattern=NAME_PATTERN)
    command: list[Arg] | None = Field(None, min_length=1)
    script: ArgPath | None = None
    args: list[Arg] = Field(default_factory=list)
    workdir: FsPath | None = None
    gpus: int = Field(1, ge=1, le=MAX_GPUS_PER_JOB)  # per node
    nodes: int = Field(1, ge=1, le=MAX_NODES_PER_JOB)
    env: dict[EnvName, Arg] = Field(default_factory=dict, max_length=ENV_VARS_MAX)
    priority: int = Field(0, ge=-100, le=100)
    max_restarts: int = Field(0, ge=0, le=100)
    timeout_minutes: float | None = Field(None, gt=0, le=10_000_000)
    total_steps: int | None = Field(None, ge=1, le=TOTAL_STEPS_MAX)  # progress and ETA (treino.server.progress)
    grace_seconds: float = Field(DEFAULT_GRACE_S, ge=0, le=3600)
    memory_gb: float | None = Field(None, gt=0, le=MAX_MEMORY_GB)  # per attempt (GiB, 1024**3 bytes)
    plan: PlanSpec | None = None
    datasets: list[ShortText] = Field(default_factory=list, max_length=DATASETS_PER_JOB_MAX)
    purpose: Purpose | None = None  # why the job reads its datasets (LGPD Art. 6 I)
    trackers: list[ShortText] | None = Field(None, max_length=len(tracker_bridges.TRACKERS))
    sisa: SisaSpec | None = None
    # An erasure's retraining of this job gets the erased rows for its memorisation check (SISA jobs always do): only
    # code written to check, and to leave the rows alone, should be handed a subject's rows after they asked to go.
    memorisation_check: bool = False

    @field_validator("trackers")
    @classmethod
    def _known_trackers(cls, trackers: list[str] | None) -> list[str] | None:
        if trackers is None:
            return None
        unknown = tracker_bridges.unknown_trackers(trackers)
        if unknown:
            raise ValueError(
                Msg(
                    "no tracker {unknown}; treino writes to {known}. To fix: name some of those, or [] for none",
                    unknown=Joined(", ", unknown),
                    known=", ".join(tracker_bridges.TRACKERS),
                )
            )
        if len(set(trackers)) != len(trackers):
            raise ValueError(Msg("names a tracker twice. To fix: name each once"))
        return trackers

    @field_validator("env")
    @classmethod
    def _env_strings(cls, env: dict[str, str]) -> dict[str, str]:
        for key, value in env.items():
            arg_string(f"{key}={value}")  # one environment string, as execve gets it
        return env

    @model_validator(mode="after")
    def _one_entry_point(self) -> JobSpec:
        if (self.command is None) == (self.script is None):
            raise ValueError(Msg("give exactly one of 'command' (an argv list) or 'script' (a Python file)"))
        if self.command is not None and self.args:
            raise ValueError(Msg("'args' goes with 'script'; put a command's arguments in the 'command' list"))
        reserved = sorted(k for k in self.env if k.startswith("TREINO_") or k == "CUDA_VISIBLE_DEVICES")
        if reserved:
            raise ValueError(Msg("env may not set {names}: the server sets them", names=", ".join(reserved)))
        strings = [*(self.command or [self.script or "", *self.args]), *(f"{k}={v}" for k, v in self.env.items())]
        size = sum(len(a.encode()) + 1 for a in strings)  # each with its NUL
        if size > ARGV_ENV_BYTES_MAX:
            raise ValueError(
                Msg(
                    "the command line and env take {size} bytes; at most {most} fit beside the server's own (the "
                    "kernel's ARG_MAX). To fix: pass large inputs in a file and its path in args",
                    size=size,
                    most=ARGV_ENV_BYTES_MAX,
                )
            )
        return self

    def argv(self, processes: int, python: str) -> list[str]:
        """The command line of one attempt: torchrun for several processes, plain Python for one."""
        if self.command is not None:
            return list(self.command)
        assert self.script is not None
        if processes == 1:
            return [python, self.script, *self.args]
        # torchrun, minus its traceback when the server stops it (treino.server.torchrun)
        torchrun = [python, "-m", "treino.server.torchrun", "--standalone", f"--nproc-per-node={processes}"]
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


def field_errors(exc: ValidationError, model: Any = None) -> list[dict[str, Any]]:
    """Pydantic's errors as `{field, message}`, the message a Msg where treino words it (`validation_message`), for
    the CLI's own check of a spec file (the API's 422s are built by treino.server.api.errors the same way)."""
    out = []
    for err in exc.errors():
        where = ".".join(str(p) for p in err["loc"]) or "(spec)"
        out.append({"field": where, "message": validation_message(err, JobSpec if model is None else model)})
    return out


def validation_message(error: Mapping[str, Any], model: Any = None) -> str:
    """A pydantic error's message, as a Msg that a client words in its language where treino has its words: a
    validator's own Msg; for a key `model` does not take (`error["loc"]`: the path into `model`), pydantic's words
    and the keys it does take there; pydantic's other messages by treino.i18n.pydantic_msg. Its English is pydantic's
    (a validator's message without pydantic's "Value error, "), with the keys after it for an unknown key."""
    english = str(error["msg"]).removeprefix("Value error, ")
    if error.get("type") == "value_error":
        cause = (error.get("ctx") or {}).get("error")
        said = message_of(cause) if isinstance(cause, ValueError) else english
        return said if isinstance(said, Msg) else english
    loc = tuple(error.get("loc") or ())
    keys = model_keys(model, loc[:-1]) if error.get("type") == "extra_forbidden" and model is not None else None
    if not keys or not loc:
        return pydantic_msg(error, english)
    close = difflib.get_close_matches(str(loc[-1]), keys, n=1)
    hint = Msg(" Did you mean '{name}'?", name=close[0]) if close else ""
    quoted = ", ".join(f"'{k}'" for k in keys)
    if len(loc) == 1:
        return Msg(
            "Extra inputs are not permitted.{hint} To fix: remove it, or use one of the keys {keys}.",
            hint=hint,
            keys=quoted,
        )
    return Msg(
        "Extra inputs are not permitted.{hint} To fix: remove it, or use a key of {where}: {keys}.",
        hint=hint,
        where=".".join(str(p) for p in loc[:-1]),
        keys=quoted,
    )


def model_keys(model: Any, path: tuple[Any, ...]) -> list[str] | None:
    """The keys of the pydantic model found at `path` inside the annotation `model` (through its fields, Optional,
    Annotated, a list's items and a dict's values), in their order; None where no model is there."""
    annotation = model
    for part in path:
        annotation = _inside(annotation, part)
        if annotation is None:
            return None
    found = _inside(annotation, None)
    return None if found is None else [f.alias or name for name, f in found.model_fields.items()]


def _inside(annotation: Any, part: str | int | None) -> Any:
    """The annotation at `part` of `annotation` (a model's field, a list's item, a dict's value); with `part` None,
    the model `annotation` is (through Optional and Annotated). None when there is none."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        if part is None:
            return annotation
        field = annotation.model_fields.get(str(part))
        return None if field is None else field.annotation
    origin, args = get_origin(annotation), get_args(annotation)
    if origin is Annotated:
        return _inside(args[0], part)
    if origin in (Union, UnionType):
        return next((found for arg in args if (found := _inside(arg, part)) is not None), None)
    if part is None:
        return None
    if origin in (list, tuple, set, frozenset) and isinstance(part, int) and args:
        return args[0]
    if origin is dict and len(args) == 2:
        return args[1]
    return None


def load_spec_file(path: Path) -> dict[str, Any]:
    """A spec file's raw mapping (YAML or JSON); validation happens on the server, which knows its GPUs. A file over
    SPEC_FILE_BYTES_MAX, or YAML with more than SPEC_FILE_ALIASES_MAX aliases or nested deeper than
    SPEC_FILE_DEPTH_MAX, is refused before it is built: a "billion laughs" file (aliases of aliases) is a few
    hundred bytes that would expand to gigabytes."""
    try:
        with path.open("rb") as f:
            raw = f.read(SPEC_FILE_BYTES_MAX + 1)
    except OSError as exc:
        raise JobError(
            Msg(
                "Cannot read the job spec {path}: {strerror}. To fix: check the path.", path=path, strerror=exc.strerror
            )
        ) from exc
    if len(raw) > SPEC_FILE_BYTES_MAX:
        raise JobError(
            Msg(
                "{path} is over {kib} KiB; a job spec is a few lines. To fix: put large inputs in files the job "
                "reads, and their paths in the spec.",
                path=path,
                kib=SPEC_FILE_BYTES_MAX // 1024,
            )
        )
    kind = "JSON" if path.suffix == ".json" else "YAML"
    try:
        text = raw.decode()
        if kind == "YAML":
            check_yaml_shape(path, text)
        data = json.loads(text) if kind == "JSON" else yaml.safe_load(text)
    except (UnicodeDecodeError, json.JSONDecodeError, yaml.YAMLError) as exc:
        raise JobError(Msg("{path} is not valid {kind}: {exc}", path=path, kind=kind, exc=exc)) from exc
    except RecursionError as exc:
        raise JobError(
            Msg("{path} is nested too deeply to be a job spec. To fix: write it as a flat mapping.", path=path)
        ) from exc
    if not isinstance(data, dict):
        raise JobError(
            Msg(
                "{path} must hold a mapping (name, script or command, gpus, ...), not {type_name}.",
                path=path,
                type_name=type(data).__name__,
            )
        )
    return data


def check_yaml_shape(path: Path, text: str) -> None:
    """Refuse YAML with more than SPEC_FILE_ALIASES_MAX aliases, nested deeper than SPEC_FILE_DEPTH_MAX, or whose
    aliases would expand it past SPEC_FILE_NODES_MAX values, reading its events: a stream in which nothing is built,
    so this costs the file's size however far it would expand."""
    aliases = 0
    expanded: dict[str, int] = {}  # anchor -> the values its node holds, aliases expanded
    open_: list[tuple[str | None, int]] = [(None, 0)]  # the collections being read: (anchor, values so far)

    def add(count: int) -> None:
        anchor, total = open_[-1]
        open_[-1] = (anchor, total + count)
        if open_[-1][1] > SPEC_FILE_NODES_MAX:
            raise JobError(
                Msg(
                    "{path} would expand to over {max_values:,} values through its aliases (a 'billion "
                    "laughs' file). To fix: write the values out instead of aliasing them.",
                    path=path,
                    max_values=SPEC_FILE_NODES_MAX,
                )
            )

    for event in yaml.parse(text, Loader=yaml.SafeLoader):
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > SPEC_FILE_ALIASES_MAX:
                raise JobError(
                    Msg(
                        "{path} has more than {max_aliases} YAML aliases (*name), as a 'billion laughs' "
                        "file has to expand to gigabytes. To fix: write the values out instead of aliasing them.",
                        path=path,
                        max_aliases=SPEC_FILE_ALIASES_MAX,
                    )
                )
            add(expanded.get(str(event.anchor), 1))
        elif isinstance(event, yaml.ScalarEvent):
            if event.anchor is not None:
                expanded[event.anchor] = 1
            add(1)
        elif isinstance(event, yaml.CollectionStartEvent):
            open_.append((event.anchor, 0))
            if len(open_) - 1 > SPEC_FILE_DEPTH_MAX:
                raise JobError(
                    Msg(
                        "{path} nests lists and mappings more than {max_depth} deep; a job spec is 3 deep. "
                        "To fix: write it as the flat mapping of treino.server.spec.",
                        path=path,
                        max_depth=SPEC_FILE_DEPTH_MAX,
                    )
                )
        elif isinstance(event, yaml.CollectionEndEvent):
            anchor, total = open_.pop()
            if anchor is not None:
                expanded[anchor] = total + 1
            add(total + 1)


def parse_spec(data: dict[str, Any]) -> JobSpec:
    try:
        return JobSpec.model_validate(data)
    except ValidationError as exc:
        lines = Joined("; ", [Msg("{field}: {message}", **e) for e in field_errors(exc)])
        raise JobError(Msg("Invalid job spec: {lines}.", lines=lines)) from exc
