"""Images by id: the file, a cached thumbnail, metadata; admin upload/delete.

Files are only ever served by numeric id, from the path the index stored for it: no client-supplied path
reaches the file system (no traversal). Thumbnails are cached on disk keyed by content hash and size, and
written atomically, so concurrent first requests never serve half a file.
"""

from __future__ import annotations

import mimetypes
from pathlib import Path as FsPath
from typing import Annotated

from fastapi import APIRouter, File, Form, HTTPException, Query, UploadFile, status
from fastapi.responses import FileResponse, Response

from app.deps import AdminDep, EngineDep
from app.engine import Engine
from app.routers.common import ImageId, decode_or_422, image_info, read_upload, record_or_404
from app.schemas.images import ImageAdded, ImageDeleted, ImageInfo
from indexer.images import ImageDecodeError, content_hash, is_image_path, load_image
from indexer.store.locks import IndexBusyError
from indexer.store.metadata import ImageRecord
from indexer.thumbnails import thumbnail_path, write_thumbnail

router = APIRouter(tags=["images"])

_CACHE = {"Cache-Control": "public, max-age=86400"}


def _file_or_404(record: ImageRecord) -> FsPath:
    path = FsPath(record.path)
    if not path.is_file():
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"the file of image {record.id} is missing on the server")
    return path


def _thumbnail(engine: Engine, record: ImageRecord) -> FsPath:
    # Usually written by the indexer from its reduced decode (indexer/thumbnails.py); made here when missing.
    size = engine.settings.thumbnail_size
    target = thumbnail_path(engine.settings.resolved_cache_dir, record.sha256, size)
    if target.is_file():
        return target
    source = _file_or_404(record)
    try:
        image = load_image(source, max_pixels=engine.settings.max_image_pixels, min_side=size)
    except ImageDecodeError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"image {record.id} cannot be read any more: {exc}") from None
    return write_thumbnail(engine.settings.resolved_cache_dir, record.sha256, image, size)


@router.get("/images", response_model=list[ImageInfo], summary="List indexed images")
async def list_images(
    engine: EngineDep,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[ImageInfo]:
    records = await engine.run(engine.images.list, offset, limit)
    return [image_info(record) for record in records]


@router.get("/images/{image_id}", summary="The image file", response_class=FileResponse)
async def get_image(engine: EngineDep, image_id: ImageId) -> FileResponse:
    record = await record_or_404(engine, image_id)
    path = await engine.run(_file_or_404, record)
    media_type = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    return FileResponse(path, media_type=media_type, headers=_CACHE)


@router.get("/images/{image_id}/thumbnail", summary="A JPEG thumbnail (cached)", response_class=FileResponse)
async def get_thumbnail(engine: EngineDep, image_id: ImageId) -> FileResponse:
    record = await record_or_404(engine, image_id)
    path = await engine.run(_thumbnail, engine, record)
    return FileResponse(path, media_type="image/jpeg", headers=_CACHE)


@router.get("/images/{image_id}/info", response_model=ImageInfo, summary="Stored metadata of an image")
async def get_info(engine: EngineDep, image_id: ImageId) -> ImageInfo:
    return image_info(await record_or_404(engine, image_id))


def _metadata(title: str | None, caption: str | None, tags: str | None) -> dict[str, object]:
    meta: dict[str, object] = {}
    if title:
        meta["title"] = title
    if caption:
        meta["caption"] = caption
    if tags:
        meta["tags"] = [t.strip() for t in tags.replace(";", ",").split(",") if t.strip()]
    return meta


def _add_path(engine: Engine, raw: str, meta: dict[str, object]) -> tuple[ImageRecord, bool]:
    if not engine.settings.allow_local_paths:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "indexing server paths is disabled (POLYGLOT_ALLOW_LOCAL_PATHS)")
    try:
        path = FsPath(raw).expanduser().resolve()
        exists = path.is_file()
    except (OSError, ValueError, RuntimeError):
        exists = False
    if not exists:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no such file on the server: {raw}")
    if not is_image_path(path):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{raw}: not an image file name (.jpg, .png, …)")
    report = engine.images.add_paths([path], {path: meta} if meta else None, progress=False)
    if report.failed:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{raw}: {report.failed[0][1]}")
    found = engine.images.store.by_paths([str(path)]).get(str(path))
    record = engine.images.get(found[0]) if found else None
    if record is None:
        raise HTTPException(status.HTTP_409_CONFLICT, f"{raw} was removed while it was being added; retry")
    return record, report.added > 0


def _add_bytes(engine: Engine, data: bytes, filename: str, meta: dict[str, object]) -> tuple[ImageRecord, bool]:
    decode_or_422(data, engine.settings.max_image_pixels)  # a clear 413/422 before anything is written
    known = engine.images.store.by_sha256(content_hash(data))
    try:
        record = engine.images.add_image_bytes(data, filename, meta)
    except ImageDecodeError as exc:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None
    return record, known is None


@router.post(
    "/images",
    response_model=ImageAdded,
    status_code=status.HTTP_201_CREATED,
    summary="Add an image (admin)",
    description="Upload an image (field `file`) or name a file on the server (field `path`). It is searchable as "
    "soon as this returns, and persisted. Sending an image already indexed returns its id with `created: false`.",
)
async def add_image(
    engine: EngineDep,
    _admin: AdminDep,
    response: Response,
    file: Annotated[UploadFile | None, File(description="An image (JPEG, PNG, WebP, …).")] = None,
    path: Annotated[str | None, Form(min_length=1, max_length=4096, description="Or: a path on the server.")] = None,
    title: Annotated[str | None, Form(max_length=1000)] = None,
    caption: Annotated[str | None, Form(max_length=5000)] = None,
    tags: Annotated[str | None, Form(max_length=5000, description="Comma-separated.")] = None,
) -> ImageAdded:
    if (file is None) == (path is None):
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, "send exactly one of: 'file' (upload) or 'path'")
    meta = _metadata(title, caption, tags)
    try:
        if file is not None:
            data = await read_upload(file, engine.settings.max_upload_bytes)
            name = FsPath(file.filename or "upload").name[:255] or "upload"
            record, created = await engine.run(_add_bytes, engine, data, name, meta)
        else:
            assert path is not None
            record, created = await engine.run(_add_path, engine, path, meta)
    except IndexBusyError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    if not created:
        response.status_code = status.HTTP_200_OK
    info = image_info(record)
    return ImageAdded(**info.model_dump(), created=created)


@router.delete("/images/{image_id}", response_model=ImageDeleted, summary="Remove an image (admin)")
async def delete_image(engine: EngineDep, _admin: AdminDep, image_id: ImageId) -> ImageDeleted:
    engine.forget([image_id])
    try:
        removed = await engine.run(engine.images.remove, [image_id])
    except IndexBusyError as exc:
        raise HTTPException(status.HTTP_409_CONFLICT, str(exc)) from None
    engine.forget([image_id])  # again: a search racing the removal may have cached it meanwhile
    if not removed:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no image with id {image_id} in the index")
    return ImageDeleted(id=image_id, remaining=await engine.run(len, engine.images))
