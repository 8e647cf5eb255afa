"""``GET /duplicates``: exact (same content hash) and near-duplicate (cosine ≥ threshold) photos, grouped; and
``PUT``/``DELETE /duplicates/keep/{id}``: which copy of a stack to keep (issue 36; persisted in the index's
database, :mod:`indexer.store.kept_copies`). Marking deletes nothing, so it takes no admin key: the page marks
copies as its user browses (a shared server that must not let visitors mark copies keeps the API private)."""

from __future__ import annotations

from pathlib import PurePath
from typing import Annotated

from fastapi import APIRouter, Query

from app.engine import Engine, EngineDep
from app.routers.common import ImageId, image_url, record_or_404, thumbnail_url
from app.schemas.duplicates import DuplicateGroupOut, DuplicateImage, DuplicatesResponse, KeptCopyAnswer
from app.stacking import current_stacks, duplicate_stacks
from indexer.duplicates import DEFAULT_THRESHOLD, find_duplicates

router = APIRouter(tags=["images"])


def _answer(engine: Engine, threshold: float, limit: int) -> DuplicatesResponse:
    groups = find_duplicates(engine.images, threshold)
    kept = duplicate_stacks(engine).kept.ids()
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
                kept=i in kept,
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


def _keep(engine: Engine, image_id: int) -> KeptCopyAnswer:
    stack = current_stacks(engine).stack_of(image_id) or ()
    duplicate_stacks(engine).kept.keep(image_id, stack)
    return KeptCopyAnswer(id=image_id, kept=True, stack=list(current_stacks(engine).stack_of(image_id) or ()))


def _unmark(engine: Engine, image_id: int) -> KeptCopyAnswer:
    duplicate_stacks(engine).kept.unmark(image_id)
    return KeptCopyAnswer(id=image_id, kept=False, stack=list(current_stacks(engine).stack_of(image_id) or ()))


@router.put(
    "/duplicates/keep/{image_id}",
    response_model=KeptCopyAnswer,
    summary="Mark the copy of a stack to keep",
    description="Marks this photo as the copy to keep among its duplicates (any other mark in its stack is taken "
    "off): stacks show it, `polyglot index duplicates` lists it first as kept. Nothing is deleted. Persisted.",
)
async def keep_copy(engine: EngineDep, image_id: ImageId) -> KeptCopyAnswer:
    await record_or_404(engine, image_id)
    return await engine.run(_keep, engine, image_id)


@router.delete(
    "/duplicates/keep/{image_id}",
    response_model=KeptCopyAnswer,
    summary="Take the keep mark off a photo",
)
async def unmark_copy(engine: EngineDep, image_id: ImageId) -> KeptCopyAnswer:
    await record_or_404(engine, image_id)
    return await engine.run(_unmark, engine, image_id)
