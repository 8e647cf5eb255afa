"""Camera RAW files (DNG, CR2, NEF, ARW, ORF, RW2, PEF …) through their embedded JPEG preview.

Every common RAW format is a TIFF structure that carries, besides the sensor data, a full-size or near
full-size JPEG rendered by the camera (or by the DNG converter). The models need 260 px: that preview is the
photo as the camera showed it, at a fraction of the cost of demosaicing the sensor data, and it needs no
native library (rawpy/LibRaw). This module finds the largest baseline or progressive JPEG among the IFDs
(IFD0's chain and its SubIFDs): ``JPEGInterchangeFormat``/``Length`` pairs, and single-strip JPEG-compressed
images. Lossless-JPEG sensor data (SOF3, what DNG and CR2 store the raw mosaic in) is skipped: Pillow cannot
decode it, and it is not a picture anyway.

Bounded against hostile files: at most ``MAX_IFDS`` IFDs of ``MAX_ENTRIES`` entries are read, every offset is
checked against the data, IFD loops are cut, and the preview then goes through the same limits as any image
(:func:`indexer.images.decode_image`).
"""

from __future__ import annotations

import struct

MAX_IFDS = 32
MAX_ENTRIES = 1_000
_SUBIFDS, _JPEG_OFFSET, _JPEG_LENGTH = 0x14A, 0x201, 0x202
_COMPRESSION, _STRIP_OFFSETS, _STRIP_BYTES = 0x103, 0x111, 0x117
_DNG_VERSION, _MAKE, _ORIENTATION = 0xC612, 0x10F, 0x112
_TYPE_SIZES = {1: 1, 2: 1, 3: 2, 4: 4, 5: 8, 6: 1, 7: 1, 8: 2, 9: 4, 10: 8, 11: 4, 12: 8, 13: 4, 16: 8}
# Lossless JPEG (SOF3/7/11/15): raw sensor data, not a picture.
_LOSSLESS_SOF = {0xC3, 0xC7, 0xCB, 0xCF}
_SOF = {0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD, 0xCE, 0xCF}


class _Tiff:
    def __init__(self, data: bytes) -> None:
        self.data = data
        self.endian = "<" if data[:2] == b"II" else ">"

    def u16(self, at: int) -> int:
        return int(struct.unpack_from(self.endian + "H", self.data, at)[0])

    def u32(self, at: int) -> int:
        return int(struct.unpack_from(self.endian + "I", self.data, at)[0])

    def ifd(self, offset: int) -> tuple[dict[int, list[int]], int]:
        """Tags of the IFD at ``offset`` (integer values only, as lists) and the next IFD's offset."""
        count = self.u16(offset)
        if count > MAX_ENTRIES or offset + 2 + 12 * count + 4 > len(self.data):
            raise ValueError("IFD out of bounds")
        tags: dict[int, list[int]] = {}
        for index in range(count):
            entry = offset + 2 + 12 * index
            tag, kind, number = self.u16(entry), self.u16(entry + 2), self.u32(entry + 4)
            if kind not in (3, 4, 13) or number > MAX_ENTRIES:
                tags.setdefault(tag, [])  # present, value not needed (strings, rationals …)
                continue
            size = 2 if kind == 3 else 4
            where = entry + 8 if size * number <= 4 else self.u32(entry + 8)
            if where + size * number > len(self.data):
                continue
            read = self.u16 if kind == 3 else self.u32
            tags[tag] = [read(where + size * i) for i in range(number)]
        return tags, self.u32(offset + 2 + 12 * count)


def is_tiff(data: bytes) -> bool:
    return data[:4] in (b"II*\x00", b"MM\x00*", b"IIRO", b"IIU\x00")


def _jpeg_size(data: bytes, start: int, end: int) -> int:
    """Pixels of the baseline/progressive JPEG in ``data[start:end]``; 0 when it is none (or lossless)."""
    if end - start < 4 or data[start : start + 2] != b"\xff\xd8":
        return 0
    at = start + 2
    while at + 4 <= end:
        if data[at] != 0xFF:
            return 0
        marker = data[at + 1]
        if marker == 0xFF:
            at += 1
            continue
        length = int.from_bytes(data[at + 2 : at + 4], "big")
        if marker in _SOF:
            if marker in _LOSSLESS_SOF or at + 9 > end:
                return 0
            height = int.from_bytes(data[at + 5 : at + 7], "big")
            width = int.from_bytes(data[at + 7 : at + 9], "big")
            return width * height
        if length < 2:
            return 0
        at += 2 + length
    return 0


def raw_preview(data: bytes) -> tuple[bytes, int | None] | None:
    """``(JPEG bytes, RAW orientation)`` of the largest embedded preview of a camera RAW file; None when
    ``data`` is no RAW (an ordinary TIFF included: Pillow reads those itself) or has no usable preview."""
    if not is_tiff(data) or len(data) < 16:
        return None
    tiff = _Tiff(data)
    try:
        first, raw_magic = tiff.u32(4), data[8:10] == b"CR" or data[:4] in (b"IIRO", b"IIU\x00")
        candidates: list[tuple[int, int, int]] = []  # (pixels, start, end)
        queue: list[int] = [first]
        seen: set[int] = set()
        is_raw, orientation = raw_magic, None
        while queue and len(seen) < MAX_IFDS:
            offset = queue.pop(0)
            if offset in seen or not 8 <= offset < len(data) - 2:
                continue
            seen.add(offset)
            tags, following = tiff.ifd(offset)
            if offset == first:
                is_raw = (
                    is_raw or _DNG_VERSION in tags or (_MAKE in tags and (_SUBIFDS in tags or _JPEG_OFFSET in tags))
                )
                orientation = (tags.get(_ORIENTATION) or [0])[0]
            queue += tags.get(_SUBIFDS, [])
            if following:
                queue.append(following)
            spans = []
            if tags.get(_JPEG_OFFSET) and tags.get(_JPEG_LENGTH):
                spans.append((tags[_JPEG_OFFSET][0], tags[_JPEG_LENGTH][0]))
            strips, lengths = tags.get(_STRIP_OFFSETS) or [], tags.get(_STRIP_BYTES) or []
            if (tags.get(_COMPRESSION) or [0])[0] in (6, 7) and len(strips) == 1 and len(lengths) == 1:
                spans.append((strips[0], lengths[0]))
            for start, length in spans:
                end = start + length
                if 0 < start < end <= len(data) and (pixels := _jpeg_size(data, start, end)):
                    candidates.append((pixels, start, end))
    except (struct.error, ValueError, IndexError):
        return None
    if not is_raw or not candidates:
        return None
    _, start, end = max(candidates)
    return data[start:end], orientation if orientation in range(2, 9) else None
