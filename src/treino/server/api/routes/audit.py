"""The audit chain, for DPOs and admins (audit.read; each use is itself audited as token.use).

GET /api/v1/audit/verify                                              the chain checked record by record
GET /api/v1/audit/export?fmt=&dataset=&actor=&subject=&since=&until=  JSON lines or CSV
GET /api/v1/audit/records                                             the Art. 37 records of processing (Markdown)
"""

from __future__ import annotations

import io
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request, Response

from treino.govern.audit import export, processing_records, render_processing_records, verify
from treino.i18n import Msg, to_data
from treino.server.api.deps import Ctx, ReadAudit, SessionDep, VerifyAudit
from treino.server.schemas import VerifyOut, responses

router = APIRouter(prefix="/api/v1/audit", tags=["audit"], responses=responses(401, 403, 422))
Filter = Annotated[str | None, Query(max_length=200, pattern=r"^[^\x00]*$")]
Time = Annotated[float | None, Query(allow_inf_nan=False)]


def _text(*media_types: str) -> dict[int | str, dict[str, object]]:
    return {200: {"content": {m: {"schema": {"type": "string"}} for m in media_types}}}


@router.get("/verify", response_model=VerifyOut)
def audit_verify(request: Request, ctx: Ctx, s: SessionDep, _who: VerifyAudit) -> VerifyOut:
    # Reads only: a full disk or a corrupt database gets a verdict (the latter ok=false), never an error.
    verdict = verify(s, ctx.audit.key, checkpoint_every=ctx.audit.checkpoint_every)
    result = VerifyOut.model_validate(verdict, from_attributes=True)
    reason = verdict.reason
    if unrecorded := getattr(request.state, "unrecorded", None):
        reason = Msg("{reason} (this check is not in the audit chain: {why})", reason=reason, why=str(unrecorded))
        result.reason = str(reason)
    result.reason_msg = to_data(reason) if isinstance(reason, Msg) else None
    return result


@router.get("/export", response_class=Response, responses=_text("application/x-ndjson", "text/csv"))
def audit_export(
    s: SessionDep,
    _who: ReadAudit,
    fmt: Literal["jsonl", "csv"] = "jsonl",
    dataset: Filter = None,
    actor: Filter = None,
    subject: Filter = None,
    since: Time = None,
    until: Time = None,
) -> Response:
    out = io.StringIO()
    export(s, out, fmt=fmt, dataset=dataset, actor=actor, subject=subject, since=since, until=until)
    return Response(out.getvalue(), media_type="text/csv" if fmt == "csv" else "application/x-ndjson")


@router.get("/records", response_class=Response, responses=_text("text/markdown"))
def audit_records(ctx: Ctx, s: SessionDep, _who: ReadAudit) -> Response:
    text = render_processing_records(processing_records(s, controller=ctx.settings.controller))
    return Response(text, media_type="text/markdown")
