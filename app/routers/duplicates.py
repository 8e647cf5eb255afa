"""``GET /duplicates``: exact (same content hash) and near-duplicate (cosine ≥ threshold) photos, grouped."""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated

from fastapi import APIRouter, Query

from app.engine import Engine, EngineDep
from app.routers.common import image_url, thumbnail_url
from app.schemas.duplicates import DuplicateGroupOut, DuplicateImage, DuplicatesResponse
from indexer.duplicates import DEFAULT_THRESHOLD, find_duplicates

router = APIRouter(tags=["images"])


def _answer(engine: Engine, threshold: float, limit: int) -> DuplicatesResponse:
    groups = find_duplicates(engine.images, threshold)
    shown = groups[:limit]
    records = {r.id: r for r in (engine.images.get(i) for g in shown for i in g.ids) if r is not None}
    out = []
    for group in shown:
        images = [
            DuplicateImage(
                id=i,
                filename=str(records[i].extra.get("filename") or PurePath(records[i].path).name),
                score=group.scores.get(i),
                width=records[i].width,
                height=records[i].height,
                bytes=records[i].bytes,
                taken_at=records[i].taken_at,
                image_url=image_url(i),
                thumbnail_url=thumbnail_url(i),
            )
            for i in group.ids
            if i in records  # removed meanwhile
        ]
        if len(images) > 1:
            out.append(DuplicateGroupOut(kind=group.kind, images=images))  # type: ignore[arg-type]
    return DuplicatesResponse(threshold=threshold, groups=out, total_groups=len(groups))


@router.get(
    "/duplicates",
    response_model=DuplicatesResponse,
    summary="Exact and near-duplicate photos",
    description="Groups of photos with the same bytes (`exact`) or image vectors at least `threshold` similar "
    f"(`near`: re-encoded, resized, cropped copies of a shot; default {DEFAULT_THRESHOLD}, measured in "
    "benchmarks/duplicates.md). Computed on request: one k-NN search per photo, batched.",
)
async def duplicates(
    engine: EngineDep,
    threshold: Annotated[
        float, Query(ge=0.5, le=1.0, description="Cosine at or above which two photos are near duplicates.")
    ] = DEFAULT_THRESHOLD,
    limit: Annotated[int, Query(ge=1, le=10_000, description="Most groups to return.")] = 100,
) -> DuplicatesResponse:
    return await engine.run(_answer, engine, threshold, limit)
