"""The Plan page's numbers: the same library calls as `treino plan train`, `plan scale` and `plan cost`
(treino.cli.app), so the page and the CLI cannot disagree. Only catalog presets are accepted: the CLI's config.json
paths and module:function traces would let a browser make the server read files or import code."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from treino.errors import TreinoError
from treino.i18n import Msg, message_of

PRECISIONS = ("bf16-mixed", "fp16-mixed", "bf16-master", "bf16-true", "fp32")
OPTIMIZERS = ("adamw", "adamw-8bit", "sgd", "sgd-momentum", "adafactor", "lion")
SCALE_COUNTS = [1, 2, 4, 8, 16, 32, 64]  # as `treino plan scale --max-gpus 64`
SCALE_ZERO = 3  # `plan scale`'s default ZeRO stage from 2 GPUs on
COST_MONTHS = 12  # `plan cost`'s default horizon
MEMORY_PARTS = (  # label, MemoryEstimate field, colour (treino.report.html's Okabe-Ito palette)
    ("weights", "weights_bytes", "#0072B2"),
    ("gradients", "gradients_bytes", "#CC79A7"),
    ("optimizer", "optimizer_bytes", "#E69F00"),
    ("activations", "activations_bytes", "#009E73"),
    ("logits+loss", "logits_bytes", "#56B4E9"),
    ("temporaries", "temporary_bytes", "#999999"),
    ("overhead", "overhead_bytes", "#D55E00"),
)


@dataclass
class PlanForm:
    model: str = "llama-3-8b"
    gpu: str = "h200-sxm"
    gpus: int = 1
    precision: str = "bf16-mixed"
    optimizer: str = "adamw"
    micro_batch: int = 1
    seq_len: int = 4096
    tokens: float = 2e9
    dedicated: str = ""  # offer names; "" = the first of that kind with this GPU
    cloud: str = ""

    @classmethod
    def from_query(cls, q: dict[str, str]) -> tuple[PlanForm, list[str]]:
        """The form from query parameters, and what was wrong with them (each field keeps its default then)."""
        form, errors = cls(), list[str]()
        for name, default in asdict(form).items():
            raw = q.get(name)
            if raw is None or raw == "":
                continue
            try:
                value: Any = type(default)(float(raw)) if isinstance(default, int | float) else raw.strip()
            except ValueError:
                errors.append(Msg("{name}: not a number: {raw!r}", name=name, raw=raw))
                continue
            setattr(form, name, value)
        return form, errors


@dataclass
class PlanResult:
    form: PlanForm
    errors: list[str] = field(default_factory=list)  # Msg where the message has one: the page translates it
    plan: Any = None  # treino.plan.TrainPlan
    parts: list[dict[str, Any]] = field(default_factory=list)
    timing: Any = None  # treino.plan.performance.TimeEstimate
    interconnect: str = ""
    scale: list[dict[str, Any]] = field(default_factory=list)
    cost: Any = None  # treino.plan.tco.Comparison
    cost_error: str = ""
    choices: dict[str, list[str]] = field(default_factory=dict)


def _offer_for(kind: str, gpu: str, wanted: str, names: dict[str, Any]) -> str:
    if wanted:
        return wanted
    same = [n for n, o in names.items() if o.kind == kind and o.gpu == gpu]
    return same[0] if same else next(n for n, o in names.items() if o.kind == kind)


def compute(form: PlanForm) -> PlanResult:
    from treino import catalog
    from treino.catalog import offers as offer_catalog
    from treino.plan import TrainSetup, plan_training
    from treino.plan.performance import estimate_time, scale
    from treino.plan.tco import compare

    all_offers = offer_catalog.offers()
    out = PlanResult(
        form,
        choices={
            "model": catalog.model_names(),
            "gpu": list(catalog.gpus()),
            "precision": list(PRECISIONS),
            "optimizer": list(OPTIMIZERS),
            "dedicated": [n for n, o in all_offers.items() if o.kind == "dedicated"],
            "cloud": [n for n, o in all_offers.items() if o.kind == "cloud"],
        },
    )
    if form.model not in out.choices["model"]:
        out.errors.append(
            Msg("Unknown model {model!r}. To fix: pick one of the list ('treino models').", model=form.model)
        )
    if form.gpu not in out.choices["gpu"]:
        out.errors.append(Msg("Unknown GPU {gpu!r}. To fix: pick one of the list ('treino gpus').", gpu=form.gpu))
    for name in ("dedicated", "cloud"):
        if getattr(form, name) and getattr(form, name) not in out.choices[name]:
            out.errors.append(Msg("Unknown {kind} offer {offer!r}.", kind=Msg(name), offer=getattr(form, name)))
    if not (1 <= form.gpus <= 1024 and 1 <= form.micro_batch <= 4096 and 1 <= form.seq_len <= 2**20):
        out.errors.append(Msg("GPUs, micro-batch and sequence must be positive (GPUs <= 1024)."))
    if not 0 <= form.tokens <= 1e15:
        out.errors.append(Msg("tokens must be between 0 and 1e15."))
    if out.errors:
        return out
    try:
        setup = TrainSetup(
            micro_batch=form.micro_batch,
            seq_len=form.seq_len,
            precision=form.precision,
            optimizer=form.optimizer,
            gpus=form.gpus,
        )
        spec, gpu = catalog.model(form.model), catalog.gpu(form.gpu)
        out.plan = plan_training(spec, gpu, setup)
        m = out.plan.memory
        out.parts = [
            {"label": label, "bytes": getattr(m, attr), "colour": colour, "share": getattr(m, attr) / m.peak_bytes}
            for label, attr, colour in MEMORY_PARTS
        ]
        out.interconnect = gpu.interconnect
        out.timing = estimate_time(spec, gpu, setup, tokens=form.tokens, interconnect=out.interconnect)
        scale_setup = TrainSetup(
            micro_batch=form.micro_batch, seq_len=form.seq_len, precision=form.precision, zero=SCALE_ZERO
        )
        out.scale = [asdict(p) for p in scale(spec, gpu, scale_setup, SCALE_COUNTS)]
    except TreinoError as exc:
        out.errors.append(message_of(exc))
        return out
    if form.tokens > 0:
        try:
            ded = _offer_for("dedicated", form.gpu, form.dedicated, all_offers)
            cl = _offer_for("cloud", form.gpu, form.cloud, all_offers)
            form.dedicated, form.cloud = ded, cl
            out.cost = compare(
                spec,
                offer_catalog.candidate(ded),
                offer_catalog.candidate(cl),
                offer_catalog.fx_rate(),
                tokens=form.tokens,
                seq_len=form.seq_len,
                precision=form.precision,
                months=COST_MONTHS,
            )
        except TreinoError as exc:
            out.cost_error = message_of(exc)
    return out


def scale_series(points: list[dict[str, Any]]) -> dict[str, Any]:
    """{gpus: [...], nvlink: [efficiency or None], pcie: [...]} for the scaling chart."""
    counts = sorted({p["gpus"] for p in points})
    by = {(p["interconnect"], p["gpus"]): p["efficiency"] for p in points}
    return {
        "gpus": counts,
        "nvlink": [by.get(("nvlink", n)) for n in counts],
        "pcie": [by.get(("pcie", n)) for n in counts],
    }
