"""A corpus of hostile images, generated in memory: tiny files that claim huge or absurdly thin dimensions, odd
modes, rotated, animated and truncated files (issue 12: a 277-byte PNG took the server down).

``corpus(folder)`` writes every case to ``folder`` and returns the cases with the outcome the service must give:
``ok`` (2xx everywhere) or ``refused`` (a 4xx with a message). Generation is streamed: the 1×64,000,000 PNG
(124 KB on disk, 128 MB of raw rows) never exists in memory, so the measuring subprocess stays clean.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import photo_samples as samples
from PIL import Image


@dataclass(frozen=True)
class Case:
    name: str  # file name, with the suffix of its real format
    expect: str  # "ok" or "refused"
    why: str  # the kind of refusal: a key of REFUSALS, "" when ok


# The kinds of refusal and the project's own words that open each (indexer/images.py, indexer/raw_preview.py):
# what follows them is the image library's, and differs from release to release. "unreadable": where in a cut-off
# file the library notices (it cannot tell the format, or it fails while decoding) is the library's business.
REFUSALS = {
    "aspect ratio": ("aspect ratio",),
    "too large": ("too large",),
    "unreadable": ("not an image:", "corrupt or truncated image:"),
}


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def _rows(width: int, height: int, pixel_bytes: int, limit: int | None) -> Iterator[bytes]:
    """Filter byte 0 + zero pixels, row after row, in blocks of about 1 MB (``limit``: rows actually written)."""
    row = b"\x00" * (1 + width * pixel_bytes)
    per_block = max(1, (1 << 20) // len(row))
    remaining = height if limit is None else min(height, limit)
    while remaining:
        count = min(per_block, remaining)
        yield row * count
        remaining -= count


def hand_png(width: int, height: int, *, bit_depth: int = 8, colour_type: int = 0, rows: int | None = None) -> bytes:
    """A black PNG written chunk by chunk; ``rows`` truncates the pixel data (for sizes nobody should decode)."""
    channels = {0: 1, 2: 3, 4: 2, 6: 4}[colour_type]
    pixel_bytes = max(1, channels * bit_depth // 8)
    compressor = zlib.compressobj(9)
    idat = b"".join(compressor.compress(block) for block in _rows(width, height, pixel_bytes, rows))
    idat += compressor.flush()
    header = struct.pack(">IIBBBBB", width, height, bit_depth, colour_type, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", header) + _chunk(b"IDAT", idat) + _chunk(b"IEND", b"")


def hand_tiff(width: int, height: int) -> bytes:
    """An uncompressed 8-bit grayscale TIFF header claiming ``width``×``height`` over a few bytes of pixels."""
    pixels = b"\x00" * 64
    tags = [  # (tag, type, count, value): types 3 = SHORT, 4 = LONG
        (256, 4, 1, width),
        (257, 4, 1, height),
        (258, 3, 1, 8),
        (259, 3, 1, 1),
        (262, 3, 1, 1),
        (273, 4, 1, 8),  # strip offset: the pixels right after the 8-byte header
        (277, 3, 1, 1),
        (278, 4, 1, height),
        (279, 4, 1, width * height if width * height < 2**32 else 2**32 - 1),
    ]
    ifd = struct.pack("<H", len(tags))
    for tag, kind, count, value in tags:
        packed = struct.pack("<HH", value, 0) if kind == 3 else struct.pack("<I", value)
        ifd += struct.pack("<HHI", tag, kind, count) + packed
    ifd += struct.pack("<I", 0)
    return b"II*\x00" + struct.pack("<I", 8 + len(pixels)) + pixels + ifd


def _save(image: Image.Image, fmt: str, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, format=fmt, **options)
    return buffer.getvalue()


def _webp_canvas(data: bytes, width: int, height: int) -> bytes:
    """An animated WebP with its VP8X canvas size rewritten (frames stay 1×1: a tiny file, a huge canvas)."""
    assert data[12:16] == b"VP8X"
    canvas = (width - 1).to_bytes(3, "little") + (height - 1).to_bytes(3, "little")
    return data[:24] + canvas + data[30:]


def _frames(size: tuple[int, int], count: int) -> list[Image.Image]:
    return [Image.new("RGB", size, (40 * n, 200 - 40 * n, 90)) for n in range(count)]


def _exif_jpeg(orientation: int) -> bytes:
    pixels = np.zeros((30, 60, 3), dtype=np.uint8)
    pixels[:, :30] = (250, 10, 10)
    exif = Image.Exif()
    exif[0x0112] = orientation
    return _save(Image.fromarray(pixels), "JPEG", exif=exif.tobytes(), quality=90)


def _random(size: tuple[int, int], seed: int) -> Image.Image:
    rng = np.random.default_rng(seed)
    return Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def cases() -> list[tuple[Case, bytes]]:
    animated_webp = _save(_frames((1, 1), 2)[0], "WEBP", save_all=True, append_images=_frames((1, 1), 2)[1:])
    good_png = _save(_random((64, 64), 1), "PNG")
    good_jpeg = _save(_random((64, 64), 2), "JPEG", quality=90)
    good_heic, good_avif = samples.heic((96, 64)), samples.avif((96, 64))
    return [
        # The cases: thin PNGs whose resizing asked for 27 GB (and 1×64,000,000: inside the pixel limit).
        (Case("thin_1x100000.png", "refused", "aspect ratio"), hand_png(1, 100_000)),
        (Case("thin_1x64000000.png", "refused", "aspect ratio"), hand_png(1, 64_000_000)),
        (Case("thin_1x20000.png", "refused", "aspect ratio"), hand_png(1, 20_000)),
        (Case("wide_100000x1.png", "refused", "aspect ratio"), hand_png(100_000, 1)),
        (Case("wide_21x1.png", "refused", "aspect ratio"), hand_png(21, 1)),
        (Case("edge_1x20.png", "ok", ""), hand_png(1, 20)),  # exactly the limit: accepted
        (Case("huge_100000x100000.png", "refused", "too large"), hand_png(100_000, 100_000, rows=4)),
        (
            Case("huge_16bit_rgba_9000x9000.png", "refused", "too large"),
            hand_png(9000, 9000, bit_depth=16, colour_type=6, rows=4),
        ),
        (Case("big_4000x4000.png", "ok", ""), hand_png(4000, 4000)),  # 16 Mpx in 16 KB: legitimate, decoded
        (Case("big_16bit_2000x2000.png", "ok", ""), hand_png(2000, 2000, bit_depth=16)),
        (Case("pixel_1x1.png", "ok", ""), hand_png(1, 1)),
        (Case("pixel_1x1.gif", "ok", ""), _save(Image.new("P", (1, 1)), "GIF")),
        (Case("wide_65535x1.gif", "refused", "aspect ratio"), _save(Image.new("L", (65_535, 1)), "GIF")),
        (Case("huge_screen_65535x65535.gif", "refused", "too large"), _gif_screen(65_535, 65_535)),
        (Case("wide_16383x1.webp", "refused", "aspect ratio"), _save(Image.new("RGB", (16_383, 1)), "WEBP")),
        (Case("huge_canvas_16384x16384.webp", "refused", "too large"), _webp_canvas(animated_webp, 16_384, 16_384)),
        (
            Case("thin_1x100000.tif", "refused", "aspect ratio"),
            _save(Image.new("L", (1, 100_000)), "TIFF", compression="tiff_deflate"),
        ),
        (Case("huge_100000x100000.tif", "refused", "too large"), hand_tiff(100_000, 100_000)),
        (Case("palette_transparent.png", "ok", ""), _save(Image.new("P", (40, 30), 3), "PNG", transparency=3)),
        (Case("gray_16bit.png", "ok", ""), _save(Image.new("I;16", (40, 30), 40_000), "PNG")),
        (Case("int32.tif", "ok", ""), _save(Image.new("I", (40, 30), 70_000), "TIFF")),
        (Case("float32.tif", "ok", ""), _save(Image.new("F", (40, 30), 0.5), "TIFF")),
        (Case("bilevel.png", "ok", ""), _save(Image.new("1", (40, 30), 1), "PNG")),
        (Case("gray_alpha.png", "ok", ""), _save(Image.new("LA", (40, 30), (90, 128)), "PNG")),
        (Case("cmyk.jpg", "ok", ""), _save(Image.new("CMYK", (40, 30), (0, 200, 200, 0)), "JPEG")),
        (Case("exif_rotated_6.jpg", "ok", ""), _exif_jpeg(6)),
        (Case("exif_rotated_8.jpg", "ok", ""), _exif_jpeg(8)),
        (
            Case("animated.gif", "ok", ""),
            _save(_frames((32, 24), 3)[0], "GIF", save_all=True, append_images=_frames((32, 24), 3)[1:]),
        ),
        (
            Case("animated.webp", "ok", ""),
            _save(_frames((32, 24), 3)[0], "WEBP", save_all=True, append_images=_frames((32, 24), 3)[1:]),
        ),
        (
            Case("multipage.tif", "ok", ""),
            _save(_frames((32, 24), 3)[0], "TIFF", save_all=True, append_images=_frames((32, 24), 3)[1:]),
        ),
        # Issue 27's formats, under the same limits: HEIC (pillow-heif), AVIF, camera RAW through its preview.
        (Case("phone.heic", "ok", ""), good_heic),
        (Case("photo.avif", "ok", ""), good_avif),
        (Case("camera.dng", "ok", ""), samples.dng(samples.jpeg((120, 90)), orientation=6)),
        (Case("ifd_loop.dng", "ok", ""), samples.dng(samples.jpeg((120, 90)), loop=True)),
        (Case("wide_2100x100.heic", "refused", "aspect ratio"), samples.heic((2100, 100))),
        (Case("huge_preview_60000x60000.dng", "refused", "too large"), samples.dng(_claiming(60_000, 60_000))),
        (
            Case("preview_out_of_file.dng", "refused", "unreadable"),
            samples.dng(samples.jpeg(), preview_offset_delta=10**6),
        ),
        (Case("truncated.heic", "refused", "unreadable"), good_heic[: len(good_heic) // 2]),
        (Case("truncated.avif", "refused", "unreadable"), good_avif[: len(good_avif) // 2]),
        (Case("truncated.png", "refused", "unreadable"), good_png[: len(good_png) // 2]),
        (Case("truncated.jpg", "refused", "unreadable"), good_jpeg[: len(good_jpeg) // 2]),
    ]


def _claiming(width: int, height: int) -> bytes:
    """A small baseline JPEG whose frame header claims ``width``×``height``."""
    data = bytearray(samples.jpeg((64, 48)))
    at = data.index(b"\xff\xc0")
    data[at + 5 : at + 9] = struct.pack(">HH", height, width)
    return bytes(data)


def _gif_screen(width: int, height: int) -> bytes:
    """A 1×1 GIF whose logical screen claims ``width``×``height`` (Pillow reports the screen size)."""
    data = bytearray(_save(Image.new("P", (1, 1)), "GIF"))
    data[6:10] = struct.pack("<HH", width, height)
    return bytes(data)


def corpus(folder: Path) -> list[Case]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for case, data in cases():
        (folder / case.name).write_bytes(data)
        out.append(case)
    return out
