"""Liveness, the devices the server hands out, and Prometheus metrics.

GET /healthz             no token
GET /api/v1/inventory    inventory.read
GET /metrics             metrics.read, Prometheus text format
"""

from __future__ import annotations

from dataclasses import asdict

from fastapi import APIRouter, Response

from treino.server.api.deps import Ctx, ReadInventory, ReadMetrics
from treino.server.metrics import render
from treino.server.schemas import Health, InventoryOut, responses

router = APIRouter(tags=["system"])


@router.get("/healthz", response_model=Health)
def healthz(ctx: Ctx) -> Health:
    return Health(ok=True, devices=ctx.engine.inventory.describe())


@router.get("/api/v1/inventory", response_model=InventoryOut, responses=responses(401, 403, 422))
def inventory(ctx: Ctx, _who: ReadInventory) -> InventoryOut:
    inv = ctx.engine.inventory
    return InventoryOut.model_validate(
        {
            "kind": inv.kind,
            "description": inv.describe(),
            "devices": [asdict(d) for d in inv.devices],
            "nodes": [asdict(n) for n in inv.nodes],
        }
    )


@router.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}, **responses(401, 403, 422)},
)
def prometheus(ctx: Ctx, _who: ReadMetrics) -> Response:
    body, content_type = render(ctx)
    return Response(body, media_type=content_type)
