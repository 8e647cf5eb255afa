"""JPEG thumbnails, one file per content hash and size under ``CACHE_DIR/thumbnails``.

The indexer writes them from the reduced decode it makes for the encoder (issue 27: no second full decode of a
12-Mpx photo when the page first shows it); the service makes the missing ones on request. Both name them with
:func:`thumbnail_path` and write them atomically, so a concurrent reader never sees half a file.
"""

from __future__ import annotations

import io
import os
import threading
from pathlib import Path

from PIL import Image

QUALITY = 85


def thumbnails_dir(cache_dir: Path) -> Path:
    return Path(cache_dir) / "thumbnails"


def thumbnail_path(cache_dir: Path, sha256: str, size: int) -> Path:
    return thumbnails_dir(cache_dir) / f"{sha256}_{size}.jpg"


def thumbnail_bytes(image: Image.Image, size: int) -> bytes:
    """A JPEG whose longest side is at most ``size`` (the image is not changed)."""
    small = (
        image.copy()
        if max(image.size) <= size
        else image.resize(_fit(image.size, size), Image.Resampling.BICUBIC, reducing_gap=2.0)
    )
    buffer = io.BytesIO()
    small.convert("RGB").save(buffer, format="JPEG", quality=QUALITY)
    return buffer.getvalue()


def write_thumbnail(cache_dir: Path, sha256: str, image: Image.Image, size: int) -> Path:
    """Write the thumbnail unless it exists: a temporary file renamed into place (readers never see half a file).
    Not fsynced: it is a cache, remade on request if a crash loses it, and an fsync per photo would cost indexing
    more than the thumbnail itself."""
    target = thumbnail_path(cache_dir, sha256, size)
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        temporary.write_bytes(thumbnail_bytes(image, size))
        os.replace(temporary, target)
    finally:
        temporary.unlink(missing_ok=True)
    return target


def _fit(dimensions: tuple[int, int], size: int) -> tuple[int, int]:
    width, height = dimensions
    scale = size / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))
