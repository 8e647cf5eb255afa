"""What the service checks before it serves an indexed file, and before it indexes a path an admin names.

* :func:`verified_image`: the stored path must still be the file that was indexed. Stored paths are resolved
  when indexed, so the path's real location must be itself (a photo replaced by a symlink — to ``/etc/passwd``
  or anywhere — is refused) and, when photo roots are configured, inside them; its size and sha256 must be the
  indexed ones (the bytes are read once, checked, and served from memory: no window in which the file can be
  swapped between the check and the answer). The ``Content-Type`` is the detected image format's MIME type,
  only ``image/*`` (never SVG, which is active content), never derived from the file name.
* :func:`verified_bytes`: the same checks without the media type, for what the service decodes itself from an
  indexed file in any format the indexer reads (HEIC, camera RAW): thumbnails and ``GET /images/{id}/tags``.
* :func:`allowed_path`: an admin "server path" must resolve to an existing image file inside the allowed roots
  (``POLYGLOT_ALLOWED_ROOTS``, default the served photo folder); every refusal is the same message, so answers
  reveal nothing about files outside them.
"""

from __future__ import annotations

import hashlib
import io
import os
from pathlib import Path

from PIL import Image

from indexer.images import is_image_path
from indexer.regular_files import NotRegularFileError, open_regular
from indexer.store.metadata import ImageRecord

# Sent with every image answer: the browser must not guess another type, and nothing in it may run or load.
IMAGE_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "default-src 'none'; sandbox",
    "Cross-Origin-Resource-Policy": "same-origin",
}
REFUSED_PATH = (
    "refused: 'path' must name an existing image file (.jpg, .png, …) inside the folders the server may index "
    "(POLYGLOT_ALLOWED_ROOTS)"
)


class ServedFileError(ValueError):
    """The file cannot be served or indexed; the message says why (for refused paths: always the same)."""


def image_media_type(data: bytes) -> str | None:
    """The MIME type of the image format detected in ``data`` (header only), or None when it is not an image
    type a browser may be handed."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            fmt = image.format or ""
    except Exception:
        return None
    mime = Image.MIME.get(fmt.upper(), "")
    if not mime.startswith("image/") or "svg" in mime or "xml" in mime:
        return None
    return mime


def _inside(path: Path, roots: list[Path]) -> bool:
    return any(path == root or path.is_relative_to(root) for root in roots)


def verified_image(record: ImageRecord, roots: list[Path], roots_configured: object) -> tuple[bytes, str]:
    """The indexed bytes of ``record`` and their media type, or :class:`ServedFileError`.

    ``roots``: the photo roots (and the uploads folder); they are enforced when ``roots_configured`` is truthy or
    the file is an upload; otherwise the stored path must simply still be its own real path."""
    data = verified_bytes(record, roots, roots_configured)
    media_type = image_media_type(data)
    if media_type is None:
        raise ServedFileError("its file is not in an image format the server serves; use its thumbnail")
    return data, media_type


def verified_bytes(record: ImageRecord, roots: list[Path], roots_configured: object) -> bytes:
    """The indexed bytes of ``record`` (same checks as :func:`verified_image`, any format: a camera RAW the
    browser cannot show still makes a thumbnail and tags), or :class:`ServedFileError`."""
    stored = Path(record.path)
    try:
        real = Path(os.path.realpath(stored))
    except (OSError, ValueError) as exc:
        raise ServedFileError(f"its file cannot be resolved ({exc})") from None
    if real != stored:
        raise ServedFileError("its file was replaced by a link since it was indexed")
    uploads = roots[-1] if roots else None
    if (roots_configured or (uploads is not None and stored.parent == uploads)) and not _inside(real, roots):
        raise ServedFileError("its file is outside the photo folders the server may serve (POLYGLOT_ALLOWED_ROOTS)")
    try:
        # Never blocks: a FIFO at the indexed path held a worker thread in os.open until someone wrote to it.
        handle = open_regular(stored, follow_links=False)
    except NotRegularFileError:
        raise ServedFileError("its file was replaced by something that is not a regular file") from None
    except OSError:
        raise ServedFileError("its file is missing on the server") from None
    with handle:
        if os.fstat(handle.fileno()).st_size != record.bytes:
            raise ServedFileError("its file changed since it was indexed (size); re-index it")
        data = handle.read(record.bytes + 1)
    if len(data) != record.bytes or hashlib.sha256(data).hexdigest() != record.sha256:
        raise ServedFileError("its file changed since it was indexed (content); re-index it")
    return data


def allowed_path(raw: str, roots: list[Path]) -> Path:
    """The resolved path of an image file inside ``roots``, or :class:`ServedFileError` (always the same message)."""
    try:
        given = Path(raw).expanduser()
        real = given.resolve(strict=True) if given.is_absolute() else None
        ok = real is not None and _inside(real, roots) and real.is_file() and is_image_path(real)
    except (OSError, ValueError, RuntimeError):
        ok = False
    if not ok:
        raise ServedFileError(REFUSED_PATH)
    assert real is not None
    return real
