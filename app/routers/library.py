"""``GET /library``: the whole library by date, newest first, a page at a time (infinite scroll), with the search
filters; ``GET /library/months``: the months that hold photos (a year/month jump list). Issue 36.

Photos with a capture time come first, newest first; photos without one follow, ordered by their file's time and
said so (``date_source``); the order and its cursor are :mod:`indexer.store.timeline`'s. ``stack=true`` (the
default) shows near-duplicates of a shot once, with a count (:mod:`indexer.duplicate_stacks`).
"""

from __future__ import annotations

import re
from typing import Annotated

from fastapi import APIRouter, HTTPException, Query, status

from app.accept_language import ReaderLanguage
from app.engine import Engine, EngineDep
from app.routers.common import IMAGE_URL, PREVIEW_URL, THUMBNAIL_URL
from app.routers.search import FilterDep, described
from app.schemas.library import LibraryMonths, LibraryPage, LibraryPhoto, MonthCountOut
from app.stacking import current_stacks, stack_info
from indexer.duplicate_stacks import Stacks
from indexer.search_filters import PhotoFilter
from indexer.store.timeline import CursorError, TimelineKey, month_counts, timeline_page

router = APIRouter(tags=["library"])
_MONTH = re.compile(r"([0-9]{4})-([0-9]{2})")

StackParam = Annotated[
    bool,
    Query(description="Show near-duplicates of a shot once, with a count (POLYGLOT_STACK_THRESHOLD); false: each."),
]


def _month(value: str) -> TimelineKey:
    match = _MONTH.fullmatch(value.strip())
    if match is None or not 1 <= int(match[2]) <= 12 or int(match[1]) < 1:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"month must be YYYY-MM, e.g. 2024-06, not {value!r}"
        )
    return TimelineKey.month_end(int(match[1]), int(match[2]))


def _page(
    engine: Engine, k: int, after: TimelineKey | None, where: PhotoFilter | None, stack: bool, language: str
) -> LibraryPage:
    allowed = engine.images.store.filtered_ids(where) if where is not None else None
    stacks: Stacks | None = current_stacks(engine) if stack else None
    entries, following = timeline_page(
        engine.images.store, k, after, allowed, stacks.hidden if stacks is not None else ()
    )
    metadata = engine.metadata([entry.id for entry in entries], language)
    results = [
        LibraryPhoto(
            id=entry.id,
            date=entry.moment,
            date_source=entry.segment,
            thumbnail_url=THUMBNAIL_URL.format(id=entry.id),
            image_url=IMAGE_URL.format(id=entry.id),
            preview_url=PREVIEW_URL.format(id=entry.id),
            metadata=metadata[entry.id],
            stack=stack_info(stacks, entry.id),
        )
        for entry in entries
        if entry.id in metadata  # removed between the two reads: skipped, never a 500
    ]
    return LibraryPage(
        results=results,
        next_cursor=following.encode() if following is not None else None,
        filters=described(where),
        matching_images=len(allowed) if allowed is not None else None,
        stacked=stack,
        total_images=len(engine.images),
    )


@router.get(
    "/library",
    response_model=LibraryPage,
    summary="The library by date, newest first",
    description="Every photo, a page at a time: photos with a capture time newest first, then the ones without one "
    "by their file's time (`date_source` says which). Follow `next_cursor` for the next page; `month=YYYY-MM` "
    "starts at that month's newest photo (the months: /library/months). The same filters as /search.",
)
async def library(
    engine: EngineDep,
    k: Annotated[int, Query(ge=1, le=500, description="Photos per page.")] = 60,
    cursor: Annotated[
        str | None, Query(max_length=200, description="`next_cursor` of the previous page (absent: the newest).")
    ] = None,
    month: Annotated[
        str | None, Query(max_length=7, description="Start at this month's newest photo (YYYY-MM); not with cursor.")
    ] = None,
    where: FilterDep = None,
    stack: StackParam = True,
    language: ReaderLanguage = "en",
) -> LibraryPage:
    if cursor is not None and month is not None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "give cursor or month, not both")
    try:
        after = TimelineKey.decode(cursor) if cursor is not None else _month(month) if month is not None else None
    except CursorError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return await engine.run(_page, engine, k, after, where, stack, language)


def _months(engine: Engine, where: PhotoFilter | None, stack: bool) -> LibraryMonths:
    allowed = engine.images.store.filtered_ids(where) if where is not None else None
    hidden = current_stacks(engine).hidden if stack else frozenset()
    months, undated = month_counts(engine.images.store, allowed, hidden)
    return LibraryMonths(
        months=[
            MonthCountOut(year=m.year, month=m.month, count=m.count, month_param=f"{m.year:04d}-{m.month:02d}")
            for m in months
        ],
        undated=undated,
        filters=described(where),
        stacked=stack,
    )


@router.get(
    "/library/months",
    response_model=LibraryMonths,
    summary="Months with photos (a jump list)",
    description="Photos per month of capture, newest first, and how many have no capture time; with the same "
    "filters as /library.",
)
async def library_months(engine: EngineDep, where: FilterDep = None, stack: StackParam = True) -> LibraryMonths:
    return await engine.run(_months, engine, where, stack)
