"""Lineage: models and the dataset versions they were trained on (lineage.read).

GET /api/v1/models?limit=&before_id=   newest first, `next` for the next page
GET /api/v1/lineage/models/{id}
GET /api/v1/lineage/datasets/{name}     each version, the jobs that read it, the models they produced
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from sqlalchemy import select

from treino.errors import NotFound
from treino.govern.models import Model
from treino.i18n import Msg
from treino.server import governance
from treino.server.api.deps import BeforeId, PageLimit, ReadLineage, SessionDep, keyset_page
from treino.server.schemas import DatasetLineage, ModelList, ModelOut, responses
from treino.server.settings import INT_MAX, NAME_PATTERN, PAGE_DEFAULT

router = APIRouter(prefix="/api/v1", tags=["lineage"], responses=responses(401, 403, 422))
ModelId = Annotated[int, Path(ge=1, le=INT_MAX)]


@router.get("/models", response_model=ModelList)
def models(s: SessionDep, _who: ReadLineage, limit: PageLimit = PAGE_DEFAULT, before_id: BeforeId = None) -> ModelList:
    rows, after = keyset_page(s, select(Model), Model.id, limit, before_id)
    return ModelList(models=[governance.model_out(s, m) for m in rows], next=after)


@router.get("/lineage/models/{model_id}", response_model=ModelOut, responses=responses(404))
def lineage_model(model_id: ModelId, s: SessionDep, _who: ReadLineage) -> ModelOut:
    m = s.get(Model, model_id)
    if m is None:
        raise NotFound(Msg("No model {model_id}. To fix: see 'treino lineage models'.", model_id=model_id))
    return governance.model_out(s, m)


@router.get("/lineage/datasets/{name}", response_model=DatasetLineage, responses=responses(404))
def lineage_dataset(
    name: Annotated[str, Path(pattern=NAME_PATTERN)], s: SessionDep, _who: ReadLineage
) -> DatasetLineage:
    return governance.dataset_lineage(s, governance.dataset_named(s, name))
