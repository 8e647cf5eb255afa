"""``POST /tag?lang=fr,de&k=10``: an uploaded image → tags in each language, chosen with the image as context.

The tagger is loaded at start-up by :func:`load_tagger_component` (a hook in ``app/main.py``), reusing the
engine's loaded image encoder, text tower and caption index; vocabularies ship with the service
(``indexer/assets/tags``, about 40 languages, embedded on first use) and can be built into ``INDEX_DIR/tags``
(``polyglot tags vocab build``). Without ``lang`` the answer is in the user's language: the best language of the
``Accept-Language`` header that has a vocabulary, else English.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, File, Header, HTTPException, Query, Response, UploadFile, status

from app.accept_language import preferred_language
from app.engine import Engine, EngineDep
from app.routers.common import ImageId, decoded_and_then, image_decode_side, read_upload, record_or_404
from app.routers.images import verified_bytes_or_404
from app.schemas.tagging import TagOut, TagResponse
from indexer.images import ImageDecodeError, decode_image
from indexer.store.metadata import ImageRecord
from indexer.tagging.caption_source import CaptionIndexRetriever
from indexer.tagging.loading import load_tagger
from indexer.tagging.tagger import Tag, Tagger, UnknownLanguageError

router = APIRouter(tags=["tagging"])

MAX_LANGS = 16


def load_tagger_component(engine: Engine) -> None:
    """Start-up hook (blocking): a Tagger over the engine's models, stored as ``engine.components["tagger"]``."""
    engine.components["tagger"] = load_tagger(engine.models, engine.settings, CaptionIndexRetriever(engine.captions))


async def get_tagger(engine: EngineDep) -> Tagger:
    tagger: Tagger | None = engine.components.get("tagger")
    if tagger is None:
        raise HTTPException(status.HTTP_503_SERVICE_UNAVAILABLE, "the tagger is not loaded in this service")
    return tagger


TaggerDep = Annotated[Tagger, Depends(get_tagger)]


LangQuery = Annotated[
    str | None,
    Query(
        min_length=2,
        max_length=200,
        description="Target languages, comma-separated: fr or fr,de. Default: the best language of the "
        "Accept-Language header that has a tag vocabulary, else en.",
    ),
]
AcceptLanguage = Annotated[
    str | None,
    Header(
        alias="Accept-Language",
        description="Used when `lang` is not given: `fr-CH, fr;q=0.9, en;q=0.8` → fr (the first language, by quality, "
        "that has a tag vocabulary; a region falls back to its language), else en.",
    ),
]


def _langs(tagger: Tagger, lang: str | None, accept_language: str | None, response: Response) -> list[str]:
    if lang is None:
        response.headers["Vary"] = "Accept-Language"  # the answer depends on the header: caches must key on it
        lang = preferred_language(accept_language, tagger.languages)
    codes = [code.strip().lower() for code in lang.split(",") if code.strip()]
    if not codes or len(codes) > MAX_LANGS:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"lang: give 1 to {MAX_LANGS} comma-separated language codes"
        )
    try:
        return tagger.check_languages(codes)
    except UnknownLanguageError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None


@router.post(
    "/tag",
    response_model=TagResponse,
    summary="Tags for an image in several languages",
    description="By default (`source=concepts`) the photo ranks the concept lexicon's concepts (about 10,000 "
    "WordNet nouns: the CNN's ImageNet classes gathered up the hierarchy, and the text side's similarity to each "
    "concept's English name) and every language names the same ranked concepts, whatever caption collection is "
    "indexed; no three tags from one chain (beagle, hound, dog). Each tag carries its `concept` (a WordNet synset) "
    "and `english` name. Other sources give one tag per English source tag (ImageNet classes, or words of the "
    "nearest English captions), chosen from each language's vocabulary by W1·cos(image, tag) + W2·cos(source, "
    "tag). Without `lang`: the Accept-Language header's best language that has names, else en. "
    'Answer: `{"fr": [{"tag": "chien", "score": 1.2, "source": "lexicon", "concept": "02084071-n", '
    '"english": "dog"}, ...], "de": [...]}`.',
)
async def tag_upload(
    engine: EngineDep,
    tagger: TaggerDep,
    response: Response,
    file: Annotated[UploadFile, File(description="An image (JPEG, PNG, WebP, …).")],
    lang: LangQuery = None,
    accept_language: AcceptLanguage = None,
    k: Annotated[int | None, Query(ge=1, le=500, description="Tags per language (default 10, at most max_k).")] = None,
    source: Annotated[
        Literal["concepts", "auto", "imagenet", "captions"] | None,
        Query(
            description="How tags are chosen: concepts (the default of POLYGLOT_TAG_SOURCE), or English source "
            "tags from imagenet, captions, auto (captions if indexed)."
        ),
    ] = None,
) -> TagResponse:
    await engine.run(tagger.refresh)  # vocabularies built with `polyglot tags vocab build` while serving
    langs = _langs(tagger, lang, accept_language, response)
    count = tagger.settings.default_k if k is None else k
    if count > tagger.settings.max_k:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"k must be at most {tagger.settings.max_k} (POLYGLOT_TAG_MAX_K)"
        )
    data = await read_upload(file, engine.settings.upload_limit)
    try:
        result = await engine.run(decoded_and_then, engine, data, lambda image: tagger.tag(image, langs, count, source))
    except UnknownLanguageError as exc:  # a vocabulary removed between the check and now
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    except ValueError as exc:  # e.g. source=captions without English captions in the caption index
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return {code: [TagOut(**t.as_dict()) for t in tags] for code, tags in result.items()}


def _tag_indexed(engine: Engine, tagger: Tagger, record: ImageRecord, langs: list[str], k: int) -> dict[str, list[Tag]]:
    """Tag the indexed file of ``record``: its bytes checked as for serving (size, sha256, no link out of the
    roots), decoded at the encoder's size inside the pixel budget and tagged in the same worker task."""
    data = verified_bytes_or_404(engine, record)
    with engine.pixels.reserved(data):
        try:
            image = decode_image(
                data, max_pixels=engine.settings.index.max_image_pixels, min_side=image_decode_side(engine)
            )
        except ImageDecodeError as exc:
            raise HTTPException(
                status.HTTP_404_NOT_FOUND, f"image {record.id} cannot be read any more: {exc}"
            ) from None
        try:
            return tagger.tag(image, langs, k, None)
        finally:
            del image


@router.get(
    "/images/{image_id}/tags",
    response_model=TagResponse,
    summary="Tags for an indexed image in several languages",
    description="As `POST /tag`, for an image of the index (the page's detail view). Its file is read as "
    "`GET /images/{image_id}` serves it: 404 when it changed since it was indexed, moved behind a symlink out of "
    "the photo roots, or cannot be decoded any more.",
)
async def tag_indexed(
    engine: EngineDep,
    tagger: TaggerDep,
    response: Response,
    image_id: ImageId,
    lang: LangQuery = None,
    accept_language: AcceptLanguage = None,
    k: Annotated[int, Query(ge=1, le=500, description="Tags per language (at most max_k).")] = 10,
) -> TagResponse:
    record = await record_or_404(engine, image_id)
    await engine.run(tagger.refresh)
    langs = _langs(tagger, lang, accept_language, response)
    if k > tagger.settings.max_k:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT, f"k must be at most {tagger.settings.max_k} (POLYGLOT_TAG_MAX_K)"
        )
    try:
        result = await engine.run(_tag_indexed, engine, tagger, record, langs, k)
    except (UnknownLanguageError, ValueError) as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return {code: [TagOut(**t.as_dict()) for t in tags] for code, tags in result.items()}  # type: ignore[arg-type]
