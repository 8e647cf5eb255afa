"""Photo filters and sort order of ``/search`` and ``POST /search/image`` (issue 27).

The filter becomes a set of ids (one SQL query) that the vector search is restricted to
(:mod:`indexer.store.filtered`): ``k`` results come back whenever ``k`` images pass it. A filtered text query
runs in the thread pool rather than through the micro-batcher (its batch shares one unfiltered search).
``sort=date`` orders the best ``POLYGLOT_DATE_SORT_POOL`` hits (after filters and ``min_score``) by capture
time, newest first, photos without a date last, and pages through them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import HTTPException, Query, status

from indexer.search_filters import FilterError, PhotoFilter

Sort = Literal["score", "date"]
SortParam = Annotated[
    Sort,
    Query(
        description="'score': best match first (default); 'date': the best matches ordered by capture time, newest first."
    ),
]


async def photo_filter(
    taken_after: Annotated[
        str | None, Query(max_length=40, description="Taken on or after this ISO 8601 date or date-time (local time).")
    ] = None,
    taken_before: Annotated[
        str | None,
        Query(max_length=40, description="Taken on or before this ISO 8601 date (the whole day) or date-time."),
    ] = None,
    folder: Annotated[
        str | None,
        Query(
            max_length=4096,
            description="An absolute folder (itself and below) or a folder name matched anywhere in the path.",
        ),
    ] = None,
    near: Annotated[
        str | None, Query(max_length=100, description="'lat,lon,km': taken within km of this GPS position.")
    ] = None,
) -> PhotoFilter:
    try:
        return PhotoFilter.parse(taken_after, taken_before, folder, near)
    except FilterError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None


def described(where: PhotoFilter) -> dict[str, str] | None:
    """The filter as the answer echoes it (as understood: dates normalised)."""
    if not where.active:
        return None
    out: dict[str, str] = {}
    if where.taken_after:
        out["taken_after"] = where.taken_after.isoformat()
    if where.taken_before:
        out["taken_before"] = where.taken_before.isoformat()
    if where.folder:
        out["folder"] = where.folder
    if where.near:
        out["near"] = f"{where.near.latitude},{where.near.longitude},{where.near.km}"
    return out
