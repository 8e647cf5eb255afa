"""``GET /search`` (text → images, any language the text encoder covers) and ``POST /search/image``, with their
parameters: the page (k, offset, min_score), the relevance cut-off, and the photo filters and sort order.

**Filters and sort** (issue 27). A filter becomes a set of ids (one SQL query) that the vector search is restricted to
(:mod:`indexer.store.filtered`): ``k`` results come back whenever ``k`` images pass it. A filtered text query
runs in the thread pool rather than through the micro-batcher (its batch shares one unfiltered search).
``sort=date`` orders the best ``POLYGLOT_DATE_SORT_POOL`` hits (after filters and ``min_score``) by capture
time, newest first, photos without a date last, and pages through them; it implies the relevance cut-off
(``cutoff=auto``, issue 36: ordered by date, a list must hold only what matched, not every photo of the pool)
unless ``cutoff=off`` is given. No filter given: the dependency answers None and the search is the plain one.

**Relevance by default** (issue 59): a text search answers the photos that stand out (``cutoff=auto``, z ≥ 1.6 against the scores of the best 100 less the 2 best;
POLYGLOT_SEARCH_CUTOFF=off makes every result the default) unless ``cutoff=off`` asks for every photo; measured in ``benchmarks/relevance_default.md`` (R@10 within 2 % of
no cut-off on the dev sets, in every language; over half of the unrelated photos of a mixed library cut). An image
search, scored image against image, keeps ``cutoff=off`` by default with ``sort=score``.

**Stacks** (issue 36): ``stack=true`` shows near-duplicates of a shot once, where the best-ranked of them is,
with the others in ``stack`` (:mod:`indexer.duplicate_stacks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Literal

import numpy as np
from fastapi import APIRouter, Depends, File, HTTPException, Query, UploadFile, status

from app.accept_language import ReaderLanguage
from app.engine import Engine, EngineDep
from app.language_names import language_names
from app.routers.common import (
    IMAGE_URL,
    PREVIEW_URL,
    THUMBNAIL_URL,
    FormImageId,
    record_or_404,
    upload_vector,
)
from app.schemas.search import SCORE_DOC, LanguageInfo, LanguagesResponse, SearchResponse, SearchResult
from app.stacking import current_stacks, stack_info
from indexer.duplicate_stacks import Stacks
from indexer.filtered_view import FilteredImages, by_date
from indexer.image_index import Hit
from indexer.query.consistency import ClcError, ClcMode
from indexer.query.pipeline import CUTOFF_POOL, DEFAULT_Z, checked_query, confident_language, cutoff_count
from indexer.search_filters import FilterError, PhotoFilter

# ------------------------------------------------------------------ filters and sort
Sort = Literal["score", "date"]
SortParam = Annotated[
    Sort,
    Query(
        description="'score': best match first (default); 'date': the best matches ordered by capture time, newest "
        "first, only those that pass the relevance cut-off (cutoff=auto implied; cutoff=off lists the whole pool)."
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
            description="An absolute folder (itself and below), or the start of any word of a folder's path, in "
            "any case and with or without accents ('lisboa' finds 'Été à Lisboa'); 422 with `close_folders` when "
            "it matches no folder.",
        ),
    ] = None,
    near: Annotated[
        str | None,
        Query(
            max_length=200,
            description="'lat,lon,km' or 'place,km' (Lisbon,25; Lisboa,25): taken within km of this GPS position "
            "or of the most populous place of that name (offline GeoNames); 422 for an unknown place.",
        ),
    ] = None,
    place: Annotated[
        str | None,
        Query(
            max_length=200,
            description="The place names given to the photo's GPS position at index time: city, region or country "
            "('Lisboa', 'lisbon', 'Portugal', 'Lisbon, Portugal': each comma-separated part must match one), the "
            "start of a word in any case and with or without accents, or another name of the place (Lisboa, "
            "Lissabon → Lisbon); 422 with `close_places` when it names no photo's place.",
        ),
    ] = None,
) -> PhotoFilter | None:
    """The photo filter of a request; None when it sets none (the common case: no filter is parsed)."""
    if all(value is None for value in (taken_after, taken_before, folder, near, place)):
        return None
    try:
        where = PhotoFilter.parse(taken_after, taken_before, folder, near, place)
    except FilterError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return where if where.active else None


def described(where: PhotoFilter | None) -> dict[str, str] | None:
    """The filter as the answer echoes it (as understood: dates normalised)."""
    if where is None:
        return None
    out: dict[str, str] = {}
    if where.taken_after:
        out["taken_after"] = where.taken_after.isoformat()
    if where.taken_before:
        out["taken_before"] = where.taken_before.isoformat()
    if where.folder:
        out["folder"] = where.folder
    if where.near:
        centre = where.near.place or f"{where.near.latitude},{where.near.longitude}"
        out["near"] = f"{centre},{where.near.km}"
    if where.place:
        out["place"] = where.place
    return out


# ------------------------------------------------------------------ the endpoints
router = APIRouter(tags=["search"])

# The hard ceilings of the schema; the configured limits (POLYGLOT_MAX_K, POLYGLOT_MAX_OFFSET) are checked per
# request by :func:`check_page`, since they are settings, not import-time constants.
K_CEILING = 1_000
OFFSET_CEILING = 1_000_000

KParam = Annotated[int, Query(ge=1, le=K_CEILING, description="Results per page (1 to POLYGLOT_MAX_K, default 100).")]
OffsetParam = Annotated[
    int, Query(ge=0, le=OFFSET_CEILING, description="Results to skip (at most POLYGLOT_MAX_OFFSET, default 10,000).")
]
MinScoreParam = Annotated[
    float | None, Query(ge=-1.0, le=1.0, description="Drop results scoring below this cosine similarity.")
]
CutoffParam = Annotated[
    Literal["off", "auto"] | None,
    Query(
        description="'auto': stop the results where they stop standing out from the query's own score distribution "
        "(z-score over its best 100 candidates, per query and language; measured in benchmarks/relevance_default.md); "
        "'off': every result. Absent: for a text search POLYGLOT_SEARCH_CUTOFF (default 'auto'); 'auto' with "
        "sort=date; else 'off'."
    ),
]
CutoffZParam = Annotated[
    float, Query(ge=0.0, le=10.0, description=f"cutoff=auto: the z-score a result must reach (default {DEFAULT_Z:g}).")
]


StackSearchParam = Annotated[
    bool,
    Query(
        description="Show near-duplicates of a shot once (where the best-ranked of them is), the others in `stack` "
        "(POLYGLOT_STACK_THRESHOLD). Default false: every photo its own result."
    ),
]
STACK_DEPTH_CEILING = 10_000  # hidden stack members a search ranks beyond its page, at most


def _cutoff(mode: str | None, z: float, sort: Sort, by_default: bool = False) -> float | None:
    """The z-score results must reach: asked for, the default (``by_default``: a text search), or implied by
    sort=date (a date-ordered list of every photo in the pool would bury the matches: pizza at -0.07 for
    "la plage")."""
    return z if mode == "auto" or (mode is None and (by_default or sort == "date")) else None


async def _stacks(engine: Engine, stack: bool) -> Stacks | None:
    return await engine.run(current_stacks, engine) if stack else None


def _stack_depth(stacks: Stacks | None) -> int:
    """Hits ranked beyond the page so that a page of stacks is still full: at most one per hidden member."""
    return min(len(stacks.hidden), STACK_DEPTH_CEILING) if stacks is not None else 0


def check_page(engine: Engine, k: int, offset: int) -> None:
    """422 when ``k`` or ``offset`` exceed the configured limits (they bound the work of one request)."""
    settings = engine.settings
    if k > settings.service.max_k:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"k must be at most {settings.service.max_k} (POLYGLOT_MAX_K)"
        )
    if offset > settings.service.max_offset:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"offset must be at most {settings.service.max_offset} (POLYGLOT_MAX_OFFSET): refine the query instead",
        )


def _language(engine: Engine, q: str, lang: str | None) -> LanguageInfo:
    if lang is not None:
        code = lang.strip().lower()
        if not engine.pipeline.supports(code):
            supported = ", ".join(engine.pipeline.languages or [])
            raise HTTPException(
                status.HTTP_422_UNPROCESSABLE_CONTENT,
                f"unsupported lang {lang!r}: the text encoder {engine.models.text.encoder.name!r} supports {supported} "
                "(or leave lang out to detect it)",
            )
        return LanguageInfo(requested=code, used=code, supported=True)
    # Labelled only when the detector is sure, and only with a language the encoder serves (issue 36: single
    # words were labelled wrongly, "chat" as Quechua, "not supported"); the query is embedded the same either way.
    detected, probability = confident_language(q, engine.pipeline.models.text.languages)
    return LanguageInfo(
        detected=detected,
        probability=probability,
        used=detected,
        supported=engine.pipeline.supports(detected) if detected else None,
    )


FilterDep = Annotated[PhotoFilter | None, Depends(photo_filter)]


def _image_hits(engine: Engine, vector: np.ndarray, depth: int, allowed: np.ndarray | None = None) -> list[Hit]:
    return engine.images.search(vector[None, :], depth, allowed=allowed)[0]


def _depth(engine: Engine, k: int, offset: int, sort: Sort, cutoff: float | None = None) -> int:
    """How many hits to rank: the page's, the pool that sort=date orders, the pool the cut-off measures."""
    depth = offset + k if sort == "score" else max(offset + k, engine.settings.query.date_sort_pool)
    return max(depth, CUTOFF_POOL) if cutoff is not None else depth


Page = tuple[list[SearchResult], int | None, int]


def _finisher(
    engine: Engine,
    k: int,
    offset: int,
    min_score: float | None,
    sort: Sort,
    exclude: int | None = None,
    cutoff: float | None = None,
    stacks: Stacks | None = None,
    language: str = "en",
) -> Callable[[list[Hit]], Page]:
    def finish(ranked: list[Hit]) -> tuple[list[SearchResult], int | None, int]:
        if cutoff is not None:  # measured on the query's own candidates, the query image left out
            ranked = [h for h in ranked if h.id != exclude]
            ranked = ranked[: cutoff_count([h.score for h in ranked], cutoff)]
        floor = min_score
        if sort == "date":
            pool = [h for h in ranked if h.id != exclude and (min_score is None or h.score >= min_score)]
            ranked, floor = by_date(engine.images, pool), None
        if stacks is not None:  # each stack once, where its first member is in this order
            ranked = [h for h in ranked if h.id != exclude]
            ranked = [ranked[p] for p in stacks.first_of_each([h.id for h in ranked])]
        return _page(engine, ranked, k, offset, floor, exclude, stacks, language)

    return finish


def _page(
    engine: Engine,
    ranked: list[Hit],
    k: int,
    offset: int,
    min_score: float | None,
    exclude: int | None = None,
    stacks: Stacks | None = None,
    language: str = "en",
) -> tuple[list[SearchResult], int | None, int]:
    """One page (``ranked`` = the best offset+k hits, or one more when ``exclude`` is set) with metadata."""
    hits = [h for h in ranked if h.id != exclude][offset : offset + k]
    more = len(hits) == k
    if min_score is not None:
        kept = [h for h in hits if h.score >= min_score]
        more = more and len(kept) == len(hits)
        hits = kept
    metadata = engine.metadata([h.id for h in hits], language)
    results = [
        SearchResult(
            id=h.id,
            score=min(1.0, max(-1.0, h.score)),  # float rounding can step just outside [-1, 1]
            rank=offset + position + 1,
            thumbnail_url=THUMBNAIL_URL.format(id=h.id),
            image_url=IMAGE_URL.format(id=h.id),
            preview_url=PREVIEW_URL.format(id=h.id),
            metadata=metadata[h.id],
            stack=stack_info(stacks, h.id) if stacks is not None else None,  # no hop into stacking unasked
        )
        for position, h in enumerate(hits)
        if h.id in metadata  # removed between the FAISS search and the SQL read: skip, never 500
    ]
    next_offset = offset + k if more and offset + k <= engine.settings.service.max_offset else None
    return results, next_offset, len(engine.images)  # len takes the index's read lock: not on the event loop


@router.get(
    "/search",
    response_model=SearchResponse,
    summary="Search images by text, in any supported language",
    description="Text → images, best first. `lang` is validated against the text encoder's languages when "
    "given (422 with the supported list otherwise) and detected when absent. Every language is embedded by the "
    "one text encoder (`text_encoder` in the answer; the shipped student: e5-student). " + SCORE_DOC,
)
async def search_text(
    engine: EngineDep,
    q: Annotated[str, Query(min_length=1, max_length=2000, description="What to look for, in any language.")],
    lang: Annotated[
        str | None,
        Query(max_length=16, description="ISO 639-1 code of `q` (see /languages). Absent: detected and reported."),
    ] = None,
    k: KParam = 20,
    offset: OffsetParam = 0,
    min_score: MinScoreParam = None,
    clc: Annotated[
        ClcMode | None,
        Query(
            description="Cross-lingual consistency: also score the query's translations into POLYGLOT_CLC_LANGUAGES "
            "and combine — 'average' (CLC-A) or 'classifier' (CLC-C); 'off'. Absent: POLYGLOT_CLC (default off)."
        ),
    ] = None,
    where: FilterDep = None,
    sort: SortParam = "score",
    cutoff: CutoffParam = None,
    cutoff_z: CutoffZParam = DEFAULT_Z,
    stack: StackSearchParam = False,
    language_shown: ReaderLanguage = "en",
) -> SearchResponse:
    check_page(engine, k, offset)
    z = _cutoff(cutoff, cutoff_z, sort, by_default=engine.settings.service.search_cutoff == "auto")
    try:
        mode = engine.pipeline.check_clc(clc)
    except ClcError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    query = checked_query(q, engine.settings.service.max_query_chars)  # QueryTextError: 422 (app/errors.py)
    # Both cheap enough for the event loop: a set lookup, or py3langid's ~50 µs for a detected language (a hop
    # to the thread pool cost more than the detection; queries are at most max_query_chars long).
    language = _language(engine, query, lang)
    stacks = await _stacks(engine, stack)
    finish = _finisher(engine, k, offset, min_score, sort, cutoff=z, stacks=stacks, language=language_shown)
    depth = _depth(engine, k, offset, sort, z) + _stack_depth(stacks)
    matching = None
    if where is not None:

        def filtered() -> tuple[tuple[list[SearchResult], int | None, int], int]:
            allowed = engine.images.store.filtered_ids(where)
            view = FilteredImages(engine.images, allowed)
            return finish(engine.pipeline.search_texts(view, [(query, language.used, depth)], clc=mode)[0]), len(
                allowed
            )

        (results, next_offset, total), matching = await engine.run(filtered)
        text_encoder = engine.pipeline.encoder_name
    else:
        (results, next_offset, total), text_encoder = await engine.search_text(
            query, language.used, depth, finish, mode
        )
    return SearchResponse(
        query=query,
        language=language,
        text_encoder=text_encoder,
        clc=mode if mode != "off" else None,
        k=k,
        offset=offset,
        min_score=min_score,
        sort=sort,
        cutoff=z,
        stacked=stack,
        filters=described(where),
        matching_images=matching,
        results=results,
        next_offset=next_offset,
        total_images=total,
    )


@router.post(
    "/search/image",
    response_model=SearchResponse,
    summary="Find visually similar images",
    description="Image → similar images, from an upload or an indexed image's id (the same frozen image "
    "features as the index; the query image itself is left out when asked by id). " + SCORE_DOC,
)
async def search_image(
    engine: EngineDep,
    file: Annotated[UploadFile | None, File(description="An image (JPEG, PNG, WebP, …).")] = None,
    image_id: FormImageId = None,
    k: KParam = 20,
    offset: OffsetParam = 0,
    min_score: MinScoreParam = None,
    where: FilterDep = None,
    sort: SortParam = "score",
    cutoff: CutoffParam = None,
    cutoff_z: CutoffZParam = DEFAULT_Z,
    stack: StackSearchParam = False,
    language_shown: ReaderLanguage = "en",
) -> SearchResponse:
    z = _cutoff(cutoff, cutoff_z, sort)
    if (file is None) == (image_id is None):
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, "send exactly one of: an image file (field 'file') or 'image_id'"
        )
    check_page(engine, k, offset)
    if image_id is not None:
        await record_or_404(engine, image_id)
        vector = await engine.run(engine.images.vector, image_id)
        if vector is None:
            raise HTTPException(status.HTTP_404_NOT_FOUND, f"image {image_id} has no vector in the index")
    else:
        assert file is not None
        _, vector = await upload_vector(engine, file)
    stacks = await _stacks(engine, stack)
    depth = _depth(engine, k, offset, sort, z) + (1 if image_id is not None else 0) + _stack_depth(stacks)
    finish = _finisher(engine, k, offset, min_score, sort, image_id, z, stacks, language_shown)

    def search() -> tuple[tuple[list[SearchResult], int | None, int], int | None]:
        allowed = engine.images.store.filtered_ids(where) if where is not None else None
        hits = _image_hits(engine, np.asarray(vector), depth, allowed)
        return finish(hits), (len(allowed) if allowed is not None else None)

    (results, next_offset, total), matching = await engine.run(search)
    return SearchResponse(
        query_image_id=image_id,
        k=k,
        offset=offset,
        min_score=min_score,
        sort=sort,
        cutoff=z,
        stacked=stack,
        filters=described(where),
        matching_images=matching,
        results=results,
        next_offset=next_offset,
        total_images=total,
    )


@router.get("/languages", response_model=LanguagesResponse, summary="Languages for queries and captions")
async def languages(engine: EngineDep) -> LanguagesResponse:
    text_langs = engine.pipeline.languages
    caption_langs = await engine.run(engine.captions.languages)
    tagger = engine.components.get("tagger")
    tag_langs = list(tagger.languages) if tagger is not None else []
    names = language_names([*(text_langs or []), *caption_langs, *tag_langs])
    return LanguagesResponse(
        text_languages=text_langs, caption_languages=caption_langs, tag_languages=tag_langs, names=names
    )
