"""Real-format sample photos made in the tests (issue 27): EXIF-dated JPEGs with GPS, HEIC written by
pillow-heif, AVIF, PNG with alpha, and DNG files with an embedded JPEG preview (a hand-written TIFF structure,
as cameras and Adobe's converter lay it out: a small preview in IFD0, the lossless sensor data in a SubIFD)."""

from __future__ import annotations

import io
import struct
from datetime import datetime
from pathlib import Path

import numpy as np
from PIL import Image
from PIL.TiffImagePlugin import IFDRational


def picture(size: tuple[int, int], seed: int = 0) -> Image.Image:
    """A smooth, photo-like RGB picture (random low-frequency colour fields) that survives JPEG well."""
    rng = np.random.default_rng(seed)
    small = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    return Image.fromarray(small).resize(size, Image.Resampling.BICUBIC)


def exif_bytes(
    taken: datetime | None = None,
    offset: str | None = None,
    gps: tuple[float, float] | None = None,
    make: str | None = None,
    model: str | None = None,
    orientation: int | None = None,
) -> bytes:
    exif = Image.Exif()
    if make:
        exif[0x010F] = make
    if model:
        exif[0x0110] = model
    if orientation:
        exif[0x0112] = orientation
    if taken is not None:
        details = exif.get_ifd(0x8769)
        details[0x9003] = taken.strftime("%Y:%m:%d %H:%M:%S")
        if offset:
            details[0x9011] = offset
    if gps is not None:
        lat, lon = gps
        fields = exif.get_ifd(0x8825)
        fields[1], fields[2] = ("N" if lat >= 0 else "S"), _dms(abs(lat))
        fields[3], fields[4] = ("E" if lon >= 0 else "W"), _dms(abs(lon))
    return exif.tobytes()


def _dms(value: float) -> tuple[IFDRational, IFDRational, IFDRational]:
    degrees = int(value)
    minutes = int((value - degrees) * 60)
    seconds = round(((value - degrees) * 60 - minutes) * 60 * 1000)
    return IFDRational(degrees, 1), IFDRational(minutes, 1), IFDRational(seconds, 1000)


def jpeg(size: tuple[int, int] = (120, 90), seed: int = 0, quality: int = 90, **exif: object) -> bytes:
    buffer = io.BytesIO()
    picture(size, seed).save(buffer, "JPEG", quality=quality, exif=exif_bytes(**exif))  # type: ignore[arg-type]
    return buffer.getvalue()


def heic(size: tuple[int, int] = (96, 64), seed: int = 0, **exif: object) -> bytes:
    import pillow_heif

    pillow_heif.register_heif_opener()
    buffer = io.BytesIO()
    picture(size, seed).save(buffer, "HEIF", quality=90, exif=exif_bytes(**exif))  # type: ignore[arg-type]
    return buffer.getvalue()


def avif(size: tuple[int, int] = (96, 64), seed: int = 0) -> bytes:
    buffer = io.BytesIO()
    picture(size, seed).save(buffer, "AVIF", quality=90)
    return buffer.getvalue()


def png_alpha(size: tuple[int, int] = (64, 48), seed: int = 0) -> bytes:
    image = picture(size, seed).convert("RGBA")
    alpha = np.zeros((size[1], size[0]), dtype=np.uint8)
    alpha[:, size[0] // 2 :] = 255
    image.putalpha(Image.fromarray(alpha))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


# ---------------------------------------------------------------------------------------------- DNG
def _entry(tag: int, kind: int, values: list[int] | bytes) -> tuple[int, int, int, bytes]:
    if kind == 2 or kind == 1:
        data = bytes(values) if not isinstance(values, bytes) else values
        return tag, kind, len(data), data
    fmt = "<H" if kind == 3 else "<I"
    ints = list(values)  # type: ignore[arg-type]
    return tag, kind, len(ints), b"".join(struct.pack(fmt, v) for v in ints)


def _ifd(entries: list[tuple[int, int, int, bytes]], at: int, next_ifd: int = 0) -> tuple[bytes, bytes]:
    """The IFD bytes at offset ``at`` and its out-of-line values (placed right after it)."""
    entries = sorted(entries)
    heap_at = at + 2 + 12 * len(entries) + 4
    table, heap = [struct.pack("<H", len(entries))], b""
    for tag, kind, count, data in entries:
        if len(data) <= 4:
            table.append(struct.pack("<HHI", tag, kind, count) + data.ljust(4, b"\x00"))
        else:
            table.append(struct.pack("<HHII", tag, kind, count, heap_at + len(heap)))
            heap += data + (b"\x00" if len(data) % 2 else b"")
    table.append(struct.pack("<I", next_ifd))
    return b"".join(table), heap


def dng(
    preview: bytes,
    *,
    orientation: int = 1,
    taken: datetime | None = None,
    make: str = "Testcam",
    model: str = "DNG-1",
    loop: bool = False,
    preview_offset_delta: int = 0,
) -> bytes:
    """A DNG: IFD0 = the JPEG ``preview`` (compression 7, one strip) with DNGVersion, Make, Model, Orientation
    and an EXIF IFD; a SubIFD = lossless-JPEG (SOF3) 'sensor data' that must be skipped. ``loop``: both IFDs
    also point back at IFD0 (a hostile chain); ``preview_offset_delta`` moves the preview's offset (broken
    files)."""
    lossless = b"\xff\xd8\xff\xc3\x00\x0b\x0c\x00\x10\x00\x10\x01\x01\x11\x00" + b"\x00" * 32 + b"\xff\xd9"
    at = preview.index(b"\xff\xc0")  # the baseline SOF: the preview's size, whatever it claims
    height, width = struct.unpack(">HH", preview[at + 5 : at + 9])
    ifd0_at = 8
    exif_ascii = (taken.strftime("%Y:%m:%d %H:%M:%S").encode() + b"\x00") if taken else b""

    def build(sub_at: int, exif_at: int, preview_at: int, raw_at: int) -> tuple[bytes, bytes]:
        entries = [
            _entry(0xFE, 4, [1]),
            _entry(0x100, 4, [width]),
            _entry(0x101, 4, [height]),
            _entry(0x103, 3, [7]),
            _entry(0x10F, 2, make.encode() + b"\x00"),
            _entry(0x110, 2, model.encode() + b"\x00"),
            _entry(0x111, 4, [preview_at + preview_offset_delta]),
            _entry(0x112, 3, [orientation]),
            _entry(0x117, 4, [len(preview)]),
            _entry(0x14A, 4, [sub_at]),
            _entry(0xC612, 1, bytes([1, 4, 0, 0])),
        ]
        if taken:
            entries.append(_entry(0x8769, 4, [exif_at]))
        return _ifd(entries, ifd0_at, ifd0_at if loop else 0)

    # Two passes: the offsets of what follows IFD0 depend on IFD0's size.
    table, heap = build(0, 0, 0, 0)
    sub_at = ifd0_at + len(table) + len(heap)
    sub_entries = [
        _entry(0xFE, 4, [0]),
        _entry(0x100, 4, [16]),
        _entry(0x101, 4, [16]),
        _entry(0x103, 3, [7]),
        _entry(0x111, 4, [0]),
        _entry(0x117, 4, [len(lossless)]),
    ]
    if loop:
        sub_entries.append(_entry(0x14A, 4, [ifd0_at]))
    sub_table, sub_heap = _ifd(sub_entries, sub_at, ifd0_at if loop else 0)
    exif_at = sub_at + len(sub_table) + len(sub_heap)
    exif_table, exif_heap = _ifd([_entry(0x9003, 2, exif_ascii)], exif_at) if taken else (b"", b"")
    preview_at = exif_at + len(exif_table) + len(exif_heap)
    raw_at = preview_at + len(preview)
    table, heap = build(sub_at, exif_at, preview_at, raw_at)
    sub_entries[4] = _entry(0x111, 4, [raw_at])
    sub_table, sub_heap = _ifd(sub_entries, sub_at, ifd0_at if loop else 0)
    body = table + heap + sub_table + sub_heap + exif_table + exif_heap + preview + lossless
    return b"II*\x00" + struct.pack("<I", ifd0_at) + body


def write(folder: Path, name: str, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(data)
    return path
