"""Images by id: the file, a cached thumbnail, metadata; admin upload/delete.

Files are only ever served by numeric id, from the path the index stored for it: no client-supplied path
reaches the file system (no traversal). What is served is checked first (:mod:`app.served_files`): the stored
path must still be where it was (no symlink out of the photo roots), the bytes must be those indexed (size and
sha256), and the ``Content-Type`` comes from the detected image format, never from a file name; every image
answer carries ``X-Content-Type-Options: nosniff`` and ``Content-Security-Policy: default-src 'none'``.
Thumbnails are cached on disk keyed by content hash and size, and written atomically, so concurrent first
requests never serve half a file.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import Callable
from pathlib import Path as FsPath
from typing import Annotated, TypeVar

from fastapi import APIRouter, Depends, File, Form, HTTPException, Query, Request, Security, UploadFile, status
from fastapi.responses import FileResponse, Response
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from app.accept_language import InfoLanguage, ReaderLanguage
from app.admin_keys import FailedKeys
from app.engine import Engine, EngineDep
from app.routers.common import (
    ImageId,
    decode_or_422,
    image_info,
    read_upload,
    record_or_404,
)
from app.schemas.images import ImageAdded, ImageDeleted, ImageInfo
from app.served_files import IMAGE_HEADERS, ServedFileError, allowed_path, verified_bytes, verified_image
from app.service_settings import ServiceSettings
from indexer.atomic import atomic_write_bytes
from indexer.images import ImageDecodeError, content_hash, decode_image
from indexer.metadata_limits import metadata_problem
from indexer.store.locks import IndexBusyError
from indexer.store.metadata import ImageRecord
from indexer.store.uploads import lost_upload
from indexer.thumbnails import thumbnail_bytes, thumbnail_path

router = APIRouter(tags=["images"])
log = logging.getLogger("app.images")

_api_key_header = APIKeyHeader(name="X-API-Key", auto_error=False, description="The admin key (POLYGLOT_API_KEY).")
_bearer = HTTPBearer(auto_error=False, description="The admin key as a bearer token (alternative to X-API-Key).")


async def require_admin(
    request: Request,
    key: Annotated[str | None, Security(_api_key_header)] = None,
    bearer: Annotated[HTTPAuthorizationCredentials | None, Security(_bearer)] = None,
) -> None:
    """The admin endpoints' check: 401 without a key, 403 with a wrong one, 429 after too many wrong ones from the
    client's address (:mod:`app.admin_keys`), 503 when no key is configured (admin disabled). Reads the app's
    settings, not the engine: it answers while the models still load."""
    settings: ServiceSettings = request.app.state.settings
    expected = settings.service.api_key
    if expected is None or not expected.get_secret_value():
        raise HTTPException(
            status.HTTP_503_SERVICE_UNAVAILABLE, "admin disabled: set POLYGLOT_API_KEY to enable admin endpoints"
        )
    given = key or (bearer.credentials if bearer is not None else None)
    if not given:
        raise HTTPException(
            status.HTTP_401_UNAUTHORIZED,
            "admin endpoint: send the API key in the X-API-Key header",
            headers={"WWW-Authenticate": "Bearer"},
        )
    failures = _failed_keys(request)
    client = request.client.host if request.client is not None else "unknown"
    wait = failures.retry_after(client)
    if wait is not None:  # before the comparison: a right guess among refused ones must not show
        raise HTTPException(
            status.HTTP_429_TOO_MANY_REQUESTS,
            f"too many wrong API keys from this address; retry in {wait} s",
            headers={"Retry-After": str(wait)},
        )
    # Constant time: how long the comparison takes says nothing of how much of the key was right.
    if not hmac.compare_digest(given.encode(), expected.get_secret_value().encode()):
        failures.failed(client)
        log.warning("wrong admin API key", extra={"client": client, "path": request.url.path})
        raise HTTPException(status.HTTP_403_FORBIDDEN, "wrong API key")


def _failed_keys(request: Request) -> FailedKeys:
    """The app's record of wrong admin keys (made on first use, from the app's settings)."""
    state = request.app.state
    failures = getattr(state, "failed_admin_keys", None)
    if failures is None:
        service = state.settings.service
        failures = state.failed_admin_keys = FailedKeys(service.admin_key_tries, service.admin_key_retry_seconds)
    return failures


AdminDep = Annotated[None, Depends(require_admin)]


def _busy(exc: IndexBusyError) -> HTTPException:
    """409 for a write while another process writes the index: the folder it names goes to the log only."""
    log.info("admin write refused: %s", exc)
    return HTTPException(
        status.HTTP_409_CONFLICT, "another process is writing to the index; wait for it to finish and retry"
    )


_Read = TypeVar("_Read")

_CACHE = {"Cache-Control": "public, max-age=86400"}
_IMAGE_RESPONSE = {200: {"content": {"image/*": {"schema": {"type": "string", "format": "binary"}}}}}


def _read_or_404(engine: Engine, record: ImageRecord, read: Callable[..., _Read], what: str) -> _Read:
    """``read`` (a checked reader of indexed files) on ``record``, with a 404 that says why it cannot be ``what``."""
    try:
        return read(record, engine.settings.served_roots(engine.images.folder), engine.settings.index.allowed_roots)
    except ServedFileError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"image {record.id} cannot be {what}: {exc}") from None


def _verified_or_404(engine: Engine, record: ImageRecord) -> tuple[bytes, str]:
    return _read_or_404(engine, record, verified_image, "served")


def verified_bytes_or_404(engine: Engine, record: ImageRecord) -> bytes:
    """The indexed bytes of ``record``, checked as for serving (size, sha256, no link out of the roots), in any
    image format the indexer reads (HEIC, RAW): for thumbnails and tags."""
    return _read_or_404(engine, record, verified_bytes, "read")


def _thumbnail(engine: Engine, record: ImageRecord) -> FsPath:
    # Usually written by the indexer from its reduced decode (indexer/thumbnails.py); made here when missing.
    size = engine.settings.index.thumbnail_size
    return _cached_jpeg(engine, record, size, size)


def _preview(engine: Engine, record: ImageRecord) -> FsPath:
    # Decoded only as large as the preview needs: the short side that a longest side of `size` gives.
    size = engine.settings.index.preview_size
    short = -(-size * min(record.width, record.height) // max(record.width, record.height, 1))
    return _cached_jpeg(engine, record, size, max(1, short))


def _cached_jpeg(engine: Engine, record: ImageRecord, size: int, min_side: int) -> FsPath:
    """The JPEG of ``record`` whose longest side is at most ``size``, made once (named by content hash and size,
    written atomically: concurrent first requests never serve half a file) and served from the cache after."""
    target = thumbnail_path(engine.settings.resolved_cache_dir, record.sha256, size)
    if target.is_file():
        return target
    data = verified_bytes_or_404(engine, record)
    try:
        # The indexed bytes (size and sha256 checked, no link out of the roots), decoded at the reduced size the
        # JPEG needs (JPEG DCT scaling / integer reduce), inside the process-wide pixel budget.
        with engine.pixels.reserved(data):
            image = decode_image(data, max_pixels=engine.settings.index.max_image_pixels, min_side=min_side)
            encoded = thumbnail_bytes(image, size)
            del image
    except ImageDecodeError as exc:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"image {record.id} cannot be read any more: {exc}") from None
    atomic_write_bytes(target, encoded)  # no space: DiskFullError → 507, the cache left as it was
    return target


@router.get("/images", response_model=list[ImageInfo], summary="List indexed images")
async def list_images(
    engine: EngineDep,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    language: ReaderLanguage = "en",
) -> list[ImageInfo]:
    records = await engine.run_database(engine.images.list, offset, limit)
    return [image_info(engine, record, language) for record in records]


_FILE_ROUTE = {
    "summary": "The image file",
    "description": "The indexed file, as indexed: 404 when it changed, moved behind a symlink out of the photo "
    "roots, or is not in an image format. `Content-Type` is the detected format's.",
    "response_class": Response,
    "responses": _IMAGE_RESPONSE,
}


@router.head("/images/{image_id}", operation_id="head_image_file", **_FILE_ROUTE)  # type: ignore[arg-type]
@router.get("/images/{image_id}", operation_id="get_image_file", **_FILE_ROUTE)  # type: ignore[arg-type]
async def get_image(engine: EngineDep, image_id: ImageId) -> Response:
    record = await record_or_404(engine, image_id)
    data, media_type = await engine.run(_verified_or_404, engine, record)
    return Response(data, media_type=media_type, headers=_CACHE | IMAGE_HEADERS)


_THUMBNAIL_ROUTE = {
    "summary": "A JPEG thumbnail (cached)",
    "response_class": FileResponse,
    "responses": {200: {"content": {"image/jpeg": {"schema": {"type": "string", "format": "binary"}}}}},
}


@router.head("/images/{image_id}/thumbnail", operation_id="head_thumbnail", **_THUMBNAIL_ROUTE)  # type: ignore[arg-type]
@router.get("/images/{image_id}/thumbnail", operation_id="get_thumbnail", **_THUMBNAIL_ROUTE)  # type: ignore[arg-type]
async def get_thumbnail(engine: EngineDep, image_id: ImageId) -> FileResponse:
    record = await record_or_404(engine, image_id)
    path = await engine.run(_thumbnail, engine, record)
    return FileResponse(path, media_type="image/jpeg", headers=_CACHE | IMAGE_HEADERS)


_PREVIEW_ROUTE = {
    "summary": "A medium-size JPEG preview (cached)",
    "description": "The photo as a JPEG whose longest side is at most POLYGLOT_PREVIEW_SIZE (default 1600 px), "
    "whatever its format: HEIC, AVIF and camera RAW photos open in any browser, large JPEGs without their full "
    "download. Made on the first request, then served from the cache (same checks as the file).",
    "response_class": FileResponse,
    "responses": {200: {"content": {"image/jpeg": {"schema": {"type": "string", "format": "binary"}}}}},
}


@router.head("/images/{image_id}/preview", operation_id="head_preview", **_PREVIEW_ROUTE)  # type: ignore[arg-type]
@router.get("/images/{image_id}/preview", operation_id="get_preview", **_PREVIEW_ROUTE)  # type: ignore[arg-type]
async def get_preview(engine: EngineDep, image_id: ImageId) -> FileResponse:
    record = await record_or_404(engine, image_id)
    path = await engine.run(_preview, engine, record)
    return FileResponse(path, media_type="image/jpeg", headers=_CACHE | IMAGE_HEADERS)


@router.get("/images/{image_id}/info", response_model=ImageInfo, summary="Stored metadata of an image")
async def get_info(engine: EngineDep, image_id: ImageId, language: InfoLanguage = "en") -> ImageInfo:
    return image_info(engine, await record_or_404(engine, image_id), language)


def _metadata(title: str | None, caption: str | None, tags: str | None) -> dict[str, object]:
    """The upload's metadata, refused (422) over the bounds every answer holding the photo declares."""
    meta: dict[str, object] = {}
    if title:
        meta["title"] = title
    if caption:
        meta["caption"] = caption
    if tags:
        meta["tags"] = [t.strip() for t in tags.replace(";", ",").split(",") if t.strip()]
    problem = metadata_problem(meta)
    if problem is not None:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"metadata refused: {problem}")
    return meta


def _add_path(engine: Engine, raw: str, meta: dict[str, object]) -> tuple[ImageRecord, bool]:
    if not engine.settings.service.allow_local_paths:
        raise HTTPException(status.HTTP_403_FORBIDDEN, "indexing server paths is disabled (POLYGLOT_ALLOW_LOCAL_PATHS)")
    try:
        # One answer for every refusal (missing, outside the roots, not a file, not an image name): a client
        # learns nothing about what exists outside the photo folders.
        path = allowed_path(raw, engine.settings.served_roots(engine.images.folder)[:-1])
    except ServedFileError as exc:
        raise HTTPException(status.HTTP_403_FORBIDDEN, str(exc)) from None
    size = path.stat().st_size
    if size > engine.settings.index.max_file_bytes:
        raise HTTPException(
            status.HTTP_422_UNPROCESSABLE_CONTENT,
            f"file too large: {size:,} bytes, the limit is {engine.settings.index.max_file_bytes:,} (POLYGLOT_MAX_FILE_BYTES)",
        )
    report = engine.images.add_paths([path], {path: meta} if meta else None, progress=False)
    if report.failed:
        raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, f"{raw}: {report.failed[0][1]}")
    found = engine.images.store.by_paths([str(path)]).get(str(path))
    record = engine.images.get(found[0]) if found else None
    if record is None:
        raise HTTPException(status.HTTP_409_CONFLICT, f"{raw} was removed while it was being added; retry")
    return record, report.added > 0


def _add_bytes(engine: Engine, data: bytes, filename: str, meta: dict[str, object]) -> tuple[ImageRecord, bool]:
    known = engine.images.store.by_sha256(content_hash(data))
    if known is not None and not lost_upload(engine.images.folder, known.path):  # a lost one is made whole again
        return known, False
    # Decoded once, inside the process-wide pixel budget, and embedded in the same task (no decoded image waits).
    with engine.pixels.reserved(data):
        decode_or_422(data, engine.settings.index.max_image_pixels)  # a clear 422 before anything is written
        try:
            # Whether this call created it comes from the insert itself, under the write lock: a concurrent upload of
            # the same bytes that got in first makes this one `created: false` (the check above is only a shortcut).
            return engine.images.add_upload(data, filename, meta)
        except ImageDecodeError as exc:
            raise HTTPException(status.HTTP_422_UNPROCESSABLE_CONTENT, str(exc)) from None


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
            data = await read_upload(file, engine.settings.upload_limit)
            name = FsPath(file.filename or "upload").name[:255] or "upload"
            record, created = await engine.run(_add_bytes, engine, data, name, meta)
        else:
            assert path is not None
            record, created = await engine.run(_add_path, engine, path, meta)
    except IndexBusyError as exc:
        raise _busy(exc) from None
    if not created:
        response.status_code = status.HTTP_200_OK
    info = image_info(engine, record)
    return ImageAdded(**info.model_dump(), created=created)


@router.delete("/images/{image_id}", response_model=ImageDeleted, summary="Remove an image (admin)")
async def delete_image(engine: EngineDep, _admin: AdminDep, image_id: ImageId) -> ImageDeleted:
    engine.forget([image_id])
    try:
        removed = await engine.run(engine.images.remove, [image_id])
    except IndexBusyError as exc:
        raise _busy(exc) from None
    engine.forget([image_id])  # again: a search racing the removal may have cached it meanwhile
    if not removed:
        raise HTTPException(status.HTTP_404_NOT_FOUND, f"no image with id {image_id} in the index")
    return ImageDeleted(id=image_id, remaining=await engine.run(len, engine.images))
