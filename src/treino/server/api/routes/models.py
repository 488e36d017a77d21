"""A model's file, and what a DPO does with a model an erasure marked (treino.server.quarantine).

GET  /api/v1/models/{id}/file         lineage.read, its job's owner or an admin   the checkpoint file (403 rule
                                                                                  "quarantine" when quarantined,
                                                                                  410 when deleted)
POST /api/v1/models/{id}/quarantine   erasure.run                                  no longer served
POST /api/v1/models/{id}/delete       erasure.run                                  files removed, row a tombstone
POST /api/v1/models/{id}/lift         erasure.run                                  served again: {reason, legal_basis}
                                                                                  (409 while its erasure is not
                                                                                  carried through, without a basis)
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from fastapi.responses import StreamingResponse

from treino.govern.models import Model
from treino.server import governance, quarantine
from treino.server.api.deps import Ctx, ReadLineage, RunErasure, SessionDep
from treino.server.schemas import LiftIn, ModelOut, responses
from treino.server.settings import INT_MAX

router = APIRouter(prefix="/api/v1/models", tags=["lineage"], responses=responses(401, 403, 404, 422))
ModelId = Annotated[int, Path(ge=1, le=INT_MAX)]
_BINARY: dict[int | str, dict[str, Any]] = {
    200: {"content": {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}}
}


@router.get("/{model_id}/file", response_class=StreamingResponse, responses={**_BINARY, **responses(409, 410)})
def model_file(model_id: ModelId, ctx: Ctx, s: SessionDep, who: ReadLineage) -> StreamingResponse:
    chunks, name = quarantine.open_file(ctx, s, model_id, who)
    headers = {"Content-Disposition": f'attachment; filename="{name}"'}
    return StreamingResponse(chunks, media_type="application/octet-stream", headers=headers)


def _out(ctx: Ctx, model_id: int) -> ModelOut:
    with ctx.sessions() as s:
        m = s.get(Model, model_id)
        assert m is not None
        return governance.model_out(s, m)


@router.post("/{model_id}/quarantine", response_model=ModelOut, responses=responses(409))
def quarantine_model(model_id: ModelId, ctx: Ctx, who: RunErasure) -> ModelOut:
    quarantine.quarantine(ctx, model_id, who.name)
    return _out(ctx, model_id)


@router.post("/{model_id}/delete", response_model=ModelOut, responses=responses(409))
def delete_model(model_id: ModelId, ctx: Ctx, who: RunErasure) -> ModelOut:
    quarantine.delete(ctx, model_id, who.name)
    return _out(ctx, model_id)


@router.post("/{model_id}/lift", response_model=ModelOut, responses=responses(409))
def lift_quarantine(model_id: ModelId, body: LiftIn, ctx: Ctx, who: RunErasure) -> ModelOut:
    quarantine.lift(ctx, model_id, who.name, body.reason, body.legal_basis)
    return _out(ctx, model_id)
