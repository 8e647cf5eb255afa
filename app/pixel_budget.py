"""A process-wide bound on the image pixels being decoded and embedded at once.

:mod:`indexer.images` bounds one image (``8 × POLYGLOT_MAX_IMAGE_PIXELS`` bytes at most); this bounds the
process. Each upload (search by image, captions, tags, admin add) and each thumbnail reserves its pixel count —
read from the header, before any pixel is decoded — for the whole of its decode → embed (or thumbnail) step, which
runs in one thread-pool task, so no decoded image waits between tasks. Reservations beyond
``POLYGLOT_DECODE_PIXELS_IN_FLIGHT`` (default: the per-image limit) wait for earlier ones to finish; an image
larger than the whole budget waits until it can run alone. The peak above idle is therefore about 8 bytes ×
the budget plus what the encoders use, whatever the number of concurrent requests: measured with 16 concurrent
8000×8000 RGBA uploads in ``tests/faults/test_fault_memory.py``.

When a large reservation ends, the freed heap is handed back to the OS (``malloc_trim``): without it glibc kept
gigabytes of freed arenas mapped after a burst (3.8 GB resident after 16 such uploads).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import threading
import warnings
from collections.abc import Iterator
from contextlib import contextmanager

from PIL import Image

from indexer.images import register_formats
from indexer.raw_preview import raw_preview

_TRIM_ABOVE = 4_000_000  # pixels: trimming costs ~ms, worth it only after a large image
_libc = None
try:  # glibc only; elsewhere the allocator's own policy applies
    _libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    _libc.malloc_trim  # noqa: B018 - probe
except (OSError, AttributeError):
    _libc = None


def header_pixels(data: bytes) -> int:
    """Width × height from the image header (no decoding); 0 when it is not an image (the decoder will say why).
    A camera RAW counts its embedded preview (what :func:`indexer.images.decode_image` decodes); HEIC/AVIF open
    through pillow-heif."""
    try:
        register_formats()
        preview = raw_preview(data)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(preview[0] if preview else data)) as image:
                width, height = image.size
    except Exception:
        return 0
    return max(0, int(width) * int(height))


class PixelBudget:
    """Counting semaphore over pixels (see the module docstring). Thread-safe; waits block the calling worker."""

    def __init__(self, capacity: int = 64_000_000) -> None:
        self.capacity = max(1, int(capacity))
        self.in_use = 0
        self.peak = 0
        self._cond = threading.Condition()

    @contextmanager
    def reserved(self, data: bytes) -> Iterator[int]:
        """Hold ``header_pixels(data)`` (capped at the capacity) while the block runs."""
        need = min(header_pixels(data), self.capacity)
        with self._cond:
            while self.in_use and self.in_use + need > self.capacity:
                self._cond.wait()
            self.in_use += need
            self.peak = max(self.peak, self.in_use)
        try:
            yield need
        finally:
            with self._cond:
                self.in_use -= need
                self._cond.notify_all()
            if need >= _TRIM_ABOVE and _libc is not None:
                _libc.malloc_trim(0)
