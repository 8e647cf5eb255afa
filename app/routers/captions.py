"""``POST /captions`` and ``GET /images/{id}/captions``: an image → its best captions, per language;
``GET /captions/search``: a text → the captions of another (or the same) language that say the same."""

from __future__ import annotations

from typing import Annotated

import numpy as np
from fastapi import APIRouter, File, HTTPException, Query, UploadFile, status

from app.engine import Engine, EngineDep
from app.routers.common import FormImageId, ImageId, record_or_404, upload_vector
from app.schemas.captions import CaptionResult, CaptionSearchResponse, CaptionsResponse
from app.schemas.search import SCORE_DOC
from indexer.captions import CaptionHit
from indexer.captions.cross_lingual import CaptionSearchError
from indexer.query.pipeline import checked_query, detect_language

router = APIRouter(tags=["captions"])

MAX_CAPTIONS = 50
LangList = Annotated[
    list[str] | None,
    Query(max_length=20, description="Caption languages (repeat the parameter); default all available."),
]
CaptionK = Annotated[int, Query(ge=1, le=MAX_CAPTIONS, description="Captions per language.")]


def _languages(engine: Engine, lang: list[str] | None) -> list[str]:
    available = engine.captions.languages()
    if not lang:
        return available
    wanted = list(dict.fromkeys(code.strip().lower() for code in lang))
    unknown = [code for code in wanted if code not in available]
    if unknown:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"no captions in {', '.join(map(repr, unknown))}: the caption collection has "
            f"{', '.join(available) or 'no captions (index some with `polyglot index captions add FILE.jsonl`)'}",
        )
    return wanted


def _results(hits: list[CaptionHit]) -> list[CaptionResult]:
    return [
        CaptionResult(
            id=h.id,
            text=h.text,
            score=float(np.clip(h.score, -1.0, 1.0)),
            rank=rank,
            image=h.image,
            source=h.source,
        )
        for rank, h in enumerate(hits, start=1)
    ]


async def _answer(
    engine: Engine, vector: np.ndarray, lang: list[str] | None, k: int, image_id: int | None
) -> CaptionsResponse:
    langs = await engine.run(_languages, engine, lang)
    found = await engine.run(engine.captions.search, vector, langs, k)
    return CaptionsResponse(
        image_id=image_id,
        captions={code: _results(hits) for code, hits in found.items()},
        available_languages=await engine.run(engine.captions.languages),
    )


@router.get(
    "/captions/search",
    response_model=CaptionSearchResponse,
    summary="Captions in another language that say what the query says",
    description="Text → captions of language `target` in the caption collection, best first (e.g. the English "
    "captions closest to a German sentence). Pairs with a loaded alignment (POLYGLOT_CAPTION_ALIGNMENTS) are "
    "compared in its space, others in the fallback space of the text encoder (POLYGLOT_CAPTION_SEARCH_FALLBACK); "
    "`space` in the answer says which. Scores are cosine similarities in that space, in [-1, 1].",
)
async def search_captions(
    engine: EngineDep,
    q: Annotated[str, Query(min_length=1, max_length=2000, description="The text, in language `lang`.")],
    target: Annotated[str, Query(min_length=2, max_length=16, description="Language of the captions to rank.")],
    lang: Annotated[
        str | None, Query(max_length=16, description="ISO 639-1 code of `q`. Absent: detected and reported.")
    ] = None,
    k: CaptionK = 5,
) -> CaptionSearchResponse:
    query = checked_query(q, engine.settings.service.max_query_chars)  # QueryTextError: 422 (app/errors.py)
    code = lang.strip().lower() if lang is not None else detect_language(query)[0]
    if not code:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, "could not detect the query's language: give lang (e.g. lang=de)"
        )
    wanted = target.strip().lower()
    try:
        # Embedding the query (and, on first use of a language, its captions) is inference: the thread pool.
        found, space = await engine.run(engine.cross_lingual.search, [query], code, wanted, k)
    except CaptionSearchError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return CaptionSearchResponse(query=query, lang=code, target=wanted, space=space, captions=_results(found[0]))


@router.post(
    "/captions",
    response_model=CaptionsResponse,
    summary="Best captions for an image",
    description="Image → captions: the image's unit vector against the caption collection (captions embedded "
    "by the text encoder into the same space), in the requested languages. " + SCORE_DOC,
)
async def captions_for_upload(
    engine: EngineDep,
    file: Annotated[UploadFile | None, File(description="An image (JPEG, PNG, WebP, …).")] = None,
    image_id: FormImageId = None,
    lang: LangList = None,
    k: CaptionK = 5,
) -> CaptionsResponse:
    if (file is None) == (image_id is None):
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, "send exactly one of: an image file (field 'file') or 'image_id'"
        )
    if image_id is not None:
        return await captions_for_image(engine, image_id, lang, k)
    assert file is not None
    _, vector = await upload_vector(engine, file)
    return await _answer(engine, np.asarray(vector), lang, k, None)


@router.get(
    "/images/{image_id}/captions",
    response_model=CaptionsResponse,
    summary="Best captions for an indexed image",
    description="Captions for an indexed image, from its stored vector. " + SCORE_DOC,
)
async def captions_for_image(
    engine: EngineDep,
    image_id: ImageId,
    lang: LangList = None,
    k: CaptionK = 5,
) -> CaptionsResponse:
    await record_or_404(engine, image_id)
    vector = await engine.run(engine.images.vector, image_id)
    if vector is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"image {image_id} has no vector in the index")
    return await _answer(engine, np.asarray(vector), lang, k, image_id)
