"""Datasets: registration, their metadata, and a running job's read of its pinned version.

POST /api/v1/datasets                 {name, path, legal_basis, purposes, personal_data, ...}   datasets.register
GET  /api/v1/datasets?limit=&before_id=, /{name}   newest first, `next` for the next page   datasets.read
POST /api/v1/datasets/{name}/retention    {days, legal_basis, reason} or {erase: true}    erasure.run
GET  /api/v1/jobs/{id}/datasets/{name}    the job's own token: the pinned version (the read is audited)
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from sqlalchemy import select

from treino.errors import TreinoError
from treino.govern.models import Dataset
from treino.i18n import Msg
from treino.server import governance, retention
from treino.server.api.deps import (
    BearerToken,
    BeforeId,
    Ctx,
    JobId,
    PageLimit,
    ReadDatasets,
    RegisterDatasets,
    RunErasure,
    SessionDep,
    keyset_page,
)
from treino.server.schemas import (
    DatasetIn,
    DatasetList,
    DatasetOut,
    DatasetPin,
    DatasetRegistered,
    RetentionIn,
    RetentionOut,
    responses,
)
from treino.server.settings import NAME_PATTERN, PAGE_DEFAULT

router = APIRouter(tags=["datasets"], responses=responses(401, 403, 422))
DatasetName = Annotated[str, Path(pattern=NAME_PATTERN)]


@router.post("/api/v1/datasets", status_code=201, response_model=DatasetRegistered, responses=responses(409, 413))
def add_dataset(body: DatasetIn, ctx: Ctx, who: RegisterDatasets) -> DatasetRegistered:
    return governance.register_dataset(ctx, body, who.name)


@router.get("/api/v1/datasets", response_model=DatasetList)
def datasets(
    s: SessionDep, _who: ReadDatasets, limit: PageLimit = PAGE_DEFAULT, before_id: BeforeId = None
) -> DatasetList:
    rows, after = keyset_page(s, select(Dataset), Dataset.id, limit, before_id)
    return DatasetList(datasets=[governance.dataset_out(s, d) for d in rows], next=after)


@router.get("/api/v1/datasets/{name}", response_model=DatasetOut, responses=responses(404))
def dataset(name: DatasetName, s: SessionDep, _who: ReadDatasets) -> DatasetOut:
    return governance.dataset_out(s, governance.dataset_named(s, name))


@router.post("/api/v1/datasets/{name}/retention", response_model=RetentionOut, responses=responses(404))
def dataset_retention(name: DatasetName, body: RetentionIn, ctx: Ctx, who: RunErasure) -> RetentionOut:
    """Past its retention period a dataset is blocked: a DPO extends the period on a documented legal basis (Art.
    16), audited as retention.extend, or erases the dataset (erase: true), audited as retention.erase."""
    if body.erase:
        return retention.erase_dataset(ctx, name, actor=who.name)
    if body.days is None:
        raise TreinoError(
            Msg('Give the new retention period in days, or erase: true. To fix: e.g. {{"days": 365, ...}}.')
        )
    return retention.extend(ctx, name, days=body.days, legal_basis=body.legal_basis, reason=body.reason, actor=who.name)


@router.get("/api/v1/jobs/{job_id}/datasets/{name}", response_model=DatasetPin, responses=responses(404, 409, 410))
def job_dataset(job_id: JobId, name: DatasetName, ctx: Ctx, token: BearerToken) -> DatasetPin:
    """What `run.dataset(NAME)` asks: the version pinned at submit. Only the job's own token may ask, and the
    read is recorded (dataset.read) with the job, its owner and the version's hash."""
    return governance.read_pinned_dataset(ctx, job_id, name, token)
