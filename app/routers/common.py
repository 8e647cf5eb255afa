"""Helpers shared by the routers: bounded upload reading, image decoding off the event loop, URLs."""

from __future__ import annotations

import numpy as np
from fastapi import HTTPException, UploadFile, status
from PIL import Image

from app.engine import Engine
from app.schemas.images import ImageInfo, ImageMetadata
from indexer.images import ImageDecodeError, decode_image
from indexer.store.metadata import ImageRecord

_CHUNK = 1 << 20


def image_url(image_id: int) -> str:
    return f"/v1/images/{image_id}"


def thumbnail_url(image_id: int) -> str:
    return f"/v1/images/{image_id}/thumbnail"


def image_info(record: ImageRecord) -> ImageInfo:
    return ImageInfo(
        id=record.id,
        image_url=image_url(record.id),
        thumbnail_url=thumbnail_url(record.id),
        metadata=ImageMetadata.from_record(record),
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


def decode_or_422(data: bytes, max_pixels: int) -> Image.Image:
    """Decode upload bytes; a bad image is the client's mistake (422, or 413 when it is too large)."""
    try:
        return decode_image(data, max_pixels=max_pixels)
    except ImageDecodeError as exc:
        code = status.HTTP_413_CONTENT_TOO_LARGE if "too large" in str(exc) else status.HTTP_422_UNPROCESSABLE_CONTENT
        raise HTTPException(code, str(exc)) from None


async def upload_vector(engine: Engine, upload: UploadFile) -> tuple[bytes, np.ndarray]:
    """Read, decode and embed an uploaded image; returns (bytes, unit vector)."""
    data = await read_upload(upload, engine.settings.max_upload_bytes)
    image = await engine.run(decode_or_422, data, engine.settings.max_image_pixels)
    vector = await engine.run(engine.embed_image, image)
    return data, vector


async def record_or_404(engine: Engine, image_id: int) -> ImageRecord:
    record = await engine.run(engine.images.get, image_id)
    if record is None:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no image with id {image_id} in the index")
    return record
