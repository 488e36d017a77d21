"""Data subjects' rights (LGPD Art. 18). Subject ids travel in request bodies, never in URLs (which end up in
access logs); the audit holds pseudonyms only.

POST /api/v1/erasures           {subject, dataset?, retrain}    erasure.run
POST /api/v1/subjects/report    {subject}                       subject.report
"""

from __future__ import annotations

from fastapi import APIRouter

from treino.server import governance
from treino.server.api.deps import Ctx, ReportSubject, RunErasure
from treino.server.schemas import ErasureIn, ErasureOut, SubjectIn, SubjectReportOut, responses

router = APIRouter(prefix="/api/v1", tags=["subjects"], responses=responses(401, 403, 413, 422))


@router.post("/erasures", status_code=201, response_model=ErasureOut, responses=responses(404))
def erase(body: ErasureIn, ctx: Ctx, who: RunErasure) -> ErasureOut:
    return governance.erase(ctx, body.subject, body.dataset, body.retrain, who.name)


@router.post("/subjects/report", response_model=SubjectReportOut)
def subject_report(body: SubjectIn, ctx: Ctx, who: ReportSubject) -> SubjectReportOut:
    return governance.subject_report(ctx, body.subject, who.name)
