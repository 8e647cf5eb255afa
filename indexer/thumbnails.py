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
# A box ``reduce`` by an integer factor costs ~0.3 ms on the indexer's 500×375 decode of a 12-Mpx photo where a
# bicubic resize costs ~2 ms (benchmarks/indexing-profile.md): it is taken whenever it lands within this share
# of the requested size (500 px → 250 for 256), bicubic otherwise.
BOX_REDUCE_MIN_SHARE = 0.9


def thumbnails_dir(cache_dir: Path) -> Path:
    return Path(cache_dir) / "thumbnails"


def thumbnail_path(cache_dir: Path, sha256: str, size: int) -> Path:
    return thumbnails_dir(cache_dir) / f"{sha256}_{size}.jpg"


def thumbnail_bytes(image: Image.Image, size: int) -> bytes:
    """A JPEG whose longest side is at most ``size`` (the image is not changed)."""
    buffer = io.BytesIO()
    small = _shrunk(image, size)
    (small if small.mode == "RGB" else small.convert("RGB")).save(buffer, format="JPEG", quality=QUALITY)
    return buffer.getvalue()


def _shrunk(image: Image.Image, size: int) -> Image.Image:
    longest = max(image.size)
    if longest <= size:
        return image
    factor = -(-longest // size)  # the smallest integer factor that fits
    if longest / factor >= BOX_REDUCE_MIN_SHARE * size and image.mode in ("RGB", "L", "RGBA"):
        return image.reduce(factor)
    return image.resize(_fit(image.size, size), Image.Resampling.BICUBIC, reducing_gap=2.0)


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
