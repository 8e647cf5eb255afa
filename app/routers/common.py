"""Helpers shared by the routers: ids, bounded upload reading, image decoding off the event loop, URLs."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, TypeVar

import numpy as np
from fastapi import Form, HTTPException, Path, UploadFile, status
from PIL import Image
from pydantic import BeforeValidator

from app.engine import Engine
from app.schemas.images import ImageInfo, ImageMetadata
from indexer.images import ImageDecodeError, decode_image
from indexer.store.metadata import ImageRecord

T = TypeVar("T")
_CHUNK = 1 << 20
_CANONICAL_ID = re.compile(r"0|[1-9][0-9]{0,99}")  # longer ones: out of range (le=MAX_ID) anyway
MAX_ID = 2**62


def canonical_id(value: object) -> object:
    """Ids parse strictly, as plain decimal digits: "/images/1.0", "/images/%201", "+1" or "01" all served image
    1 (int parsing is lax), i.e. many URLs for one resource, each cached apart."""
    if isinstance(value, str) and not _CANONICAL_ID.fullmatch(value):
        raise ValueError(
            "an image id is a whole number in plain digits, e.g. 42: no sign, spaces, leading zeros or decimals"
        )
    return value


# The FastAPI marker first: after the validator, its bounds reach OpenAPI as "ge"/"le", not minimum/maximum.
ImageId = Annotated[
    int, Path(ge=0, le=MAX_ID, description="Image id (from search results)."), BeforeValidator(canonical_id)
]
FormImageId = Annotated[
    int | None, Form(ge=0, le=MAX_ID, description="Or: the id of an indexed image."), BeforeValidator(canonical_id)
]


# URL templates (``IMAGE_URL.format(id=42)``): a result page formats them inline, with no call per result.
IMAGE_URL = "/v1/images/{id}"
THUMBNAIL_URL = "/v1/images/{id}/thumbnail"
PREVIEW_URL = "/v1/images/{id}/preview"


def image_url(image_id: int) -> str:
    return IMAGE_URL.format(id=image_id)


def thumbnail_url(image_id: int) -> str:
    return THUMBNAIL_URL.format(id=image_id)


def image_info(engine: Engine, record: ImageRecord, language: str = "en") -> ImageInfo:
    return ImageInfo(
        id=record.id,
        image_url=image_url(record.id),
        thumbnail_url=thumbnail_url(record.id),
        metadata=ImageMetadata.from_record(record, engine.records.folders.shown).in_language(language),
    )


async def read_upload(upload: UploadFile, limit: int) -> bytes:
    """The upload's bytes, refusing (413) as soon as more than ``limit`` bytes have been read."""
    parts: list[bytes] = []
    size = 0
    while chunk := await upload.read(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise HTTPException(
                status.HTTP_413_CONTENT_TOO_LARGE, f"upload too large: the limit is {limit:,} bytes (resize it first)"
            )
        parts.append(chunk)
    data = b"".join(parts)
    if not data:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "empty upload: the file has no bytes")
    return data


def decode_or_422(data: bytes, max_pixels: int, min_side: int | None = None) -> Image.Image:
    """Decode upload bytes (reduced to ``min_side`` when given); a bad image is the client's mistake: 422,
    whatever the reason — too many pixels or too much metadata included (413 is only for an upload over the byte
    limit, which never gets here)."""
    try:
        return decode_image(data, max_pixels=max_pixels, min_side=min_side)
    except ImageDecodeError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None


def image_decode_side(engine: Engine) -> int | None:
    """The short side a photo is decoded to before the image encoder sees it: the indexer's rule."""
    return engine.settings.index.decode_side(getattr(engine.models.image_encoder, "decode_side", None))


def decoded_and_then(engine: Engine, data: bytes, use: Callable[[Image.Image], T]) -> T:
    """Decode ``data`` and hand the image to ``use`` in one worker task, inside the process's pixel budget
    (app/pixel_budget.py): the decoded image never waits for another task, and at most the budget is decoded
    at once whatever the number of concurrent uploads. Both users embed the photo with the image encoder, so it
    is decoded as ``index add`` decodes (``decode_side``): a query photo that is in the index scores 1."""
    with engine.pixels.reserved(data):
        image = decode_or_422(data, engine.settings.index.max_image_pixels, image_decode_side(engine))
        try:
            return use(image)
        finally:
            del image


async def upload_vector(engine: Engine, upload: UploadFile) -> tuple[bytes, np.ndarray]:
    """Read, decode and embed an uploaded image (decode + embed: one pool task); returns (bytes, unit vector)."""
    data = await read_upload(upload, engine.settings.upload_limit)
    vector = await engine.run(decoded_and_then, engine, data, engine.embed_image)
    return data, vector


async def record_or_404(engine: Engine, image_id: int) -> ImageRecord:
    record = await engine.run_database(engine.images.get, image_id)
    if record is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no image with id {image_id} in the index")
    return record
