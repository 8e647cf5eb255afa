"""When and where a photo was taken, and with what: read from EXIF without decoding a pixel.

``photo_facts(data)`` → :class:`PhotoFacts` from the file's EXIF (JPEG, HEIC/AVIF via pillow-heif, PNG eXIf,
WebP, TIFF, and camera RAW, whose IFD0 is itself EXIF); ``folder``, the one fact not in the bytes, is the file's
folder, set by the indexer (:func:`indexer.store.ingest.fact_columns`):

* ``taken_at``: the local wall-clock time of capture (``DateTimeOriginal``, else ``DateTimeDigitized``, else
  ``DateTime``), naive; ``taken_offset_minutes``: its UTC offset where EXIF 2.31's ``OffsetTimeOriginal`` (or
  ``OffsetTime``) gives one, so ``taken_at_utc`` is known only then. Filters compare the local time, as photo
  apps do ("summer 2024" is the summer where the photo was taken).
* ``latitude``/``longitude``: signed degrees from the GPS IFD, when both are present and in range;
* ``camera_make``/``camera_model``: stripped strings; ``orientation``: the EXIF orientation tag (1–8);
* ``city``/``region``/``country``: the place names of the GPS position, set by the indexer from the offline
  gazetteer (:mod:`indexer.places`), not read from EXIF.
* ``file_modified_at``: not in the bytes either: the file's modification time (local, naive) when it was indexed,
  set by the indexer beside ``folder``; the library orders photos without ``taken_at`` by it (issue 36).

Unreadable or absurd values are ignored field by field (a file with broken EXIF is still indexed).
"""

from __future__ import annotations

import contextlib
import io
import re
from dataclasses import dataclass, fields
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from PIL import Image

from indexer.images import register_formats
from indexer.raw_preview import is_tiff

_EXIF_IFD, _GPS_IFD = 0x8769, 0x8825
_DATETIME, _MAKE, _MODEL, _ORIENTATION = 0x0132, 0x010F, 0x0110, 0x0112
_ORIGINAL, _DIGITIZED = 0x9003, 0x9004
_OFFSET, _OFFSET_ORIGINAL, _OFFSET_DIGITIZED = 0x9010, 0x9011, 0x9012
_SUBSEC_ORIGINAL = 0x9291
_DATE = re.compile(r"\s*(\d{4})[:-](\d\d)[:-](\d\d)[ T](\d\d):(\d\d):(\d\d)")
_ZONE = re.compile(r"\s*([+-])(\d\d):(\d\d)\s*$")


@dataclass
class PhotoFacts:
    """A photo's facts, declared once: the index keeps each in a nullable column (``FACTS``; the rows and records
    of :mod:`indexer.store.metadata` are facts too) and the API shows each (``app/schemas/images.py``). Set by
    the indexer from the file, never by users (issue 27)."""

    folder: str | None = None
    taken_at: datetime | None = None
    taken_offset_minutes: int | None = None
    latitude: float | None = None
    longitude: float | None = None
    camera_make: str | None = None
    camera_model: str | None = None
    orientation: int | None = None
    # Where, by name (issue 36): the GPS position's city, region and country, from an offline gazetteer at index
    # time (indexer/places.py); None without GPS or far from any populated place.
    city: str | None = None
    region: str | None = None
    country: str | None = None
    file_modified_at: datetime | None = None

    @property
    def taken_at_utc(self) -> datetime | None:
        if self.taken_at is None or self.taken_offset_minutes is None:
            return None
        zone = timezone(timedelta(minutes=self.taken_offset_minutes))
        return self.taken_at.replace(tzinfo=zone).astimezone(UTC)

    def columns(self) -> dict[str, Any]:
        """The facts alone, by name (of a record too: not its other fields)."""
        return {name: getattr(self, name) for name in FACTS}


FACTS = tuple(fact.name for fact in fields(PhotoFacts))  # the column names, in the tables' and the API's order


def photo_facts(data: bytes) -> PhotoFacts:
    """EXIF facts of an image file's bytes (header only); empty facts when there is no readable EXIF."""
    try:
        exif = _exif(data)
    except Exception:  # Pillow raises many types on broken EXIF; a photo without facts is still a photo
        return PhotoFacts()
    if exif is None:
        return PhotoFacts()
    facts = PhotoFacts()
    try:
        details = exif.get_ifd(_EXIF_IFD)
    except Exception:
        details = {}
    for date_tag, offset_tag in ((_ORIGINAL, _OFFSET_ORIGINAL), (_DIGITIZED, _OFFSET_DIGITIZED)):
        taken = _date(details.get(date_tag))
        if taken is not None:
            facts.taken_at = taken
            facts.taken_offset_minutes = _offset(details.get(offset_tag)) or _offset(details.get(_OFFSET))
            break
    if facts.taken_at is None:
        facts.taken_at = _date(exif.get(_DATETIME))
        facts.taken_offset_minutes = _offset(details.get(_OFFSET)) if facts.taken_at else None
    if facts.taken_at is not None and date_tag == _ORIGINAL:
        subsec = str(details.get(_SUBSEC_ORIGINAL) or "").strip()
        if subsec.isdigit():
            facts.taken_at = facts.taken_at.replace(microsecond=int(subsec[:6].ljust(6, "0")))
    facts.camera_make = _text(exif.get(_MAKE))
    facts.camera_model = _text(exif.get(_MODEL))
    orientation = exif.get(_ORIENTATION)
    facts.orientation = orientation if isinstance(orientation, int) and 1 <= orientation <= 8 else None
    with contextlib.suppress(Exception):
        facts.latitude, facts.longitude = _gps(exif.get_ifd(_GPS_IFD))
    return facts


def _exif(data: bytes) -> Image.Exif | None:
    if is_tiff(data):  # TIFF and camera RAW: IFD0 is the EXIF (Pillow cannot open most RAW files as images)
        exif = Image.Exif()
        exif.load(data if data[:4] in (b"II*\x00", b"MM\x00*") else b"")
        return exif
    register_formats()
    with Image.open(io.BytesIO(data)) as image:
        return image.getexif()


def _date(value: Any) -> datetime | None:
    if isinstance(value, bytes):
        value = value.decode("ascii", "ignore")
    match = _DATE.match(str(value or ""))
    if not match:
        return None
    try:
        year, month, day, hour, minute, second = (int(part) for part in match.groups())
        taken = datetime(year, month, day, hour, minute, second)
    except ValueError:  # "0000:00:00 00:00:00", what cameras write without a clock
        return None
    return taken if 1826 <= taken.year <= 2200 else None


def _offset(value: Any) -> int | None:
    match = _ZONE.match(str(value or ""))
    if not match:
        return None
    sign, hours, minutes = match.groups()
    total = int(hours) * 60 + int(minutes)
    return (-total if sign == "-" else total) if total <= 14 * 60 else None


def _text(value: Any) -> str | None:
    if isinstance(value, bytes):
        value = value.decode("utf-8", "ignore")
    text = str(value or "").replace("\x00", "").strip()
    return text[:255] or None


def _degrees(value: Any) -> float:
    d, m, s = (float(part) for part in value)
    return d + m / 60 + s / 3600


def _gps(gps: dict[int, Any]) -> tuple[float | None, float | None]:
    if not gps or 2 not in gps or 4 not in gps:
        return None, None
    lat, lon = _degrees(gps[2]), _degrees(gps[4])
    if str(gps.get(1, "N")).upper().startswith("S"):
        lat = -lat
    if str(gps.get(3, "E")).upper().startswith("W"):
        lon = -lon
    if not (-90 <= lat <= 90 and -180 <= lon <= 180) or lat != lat or lon != lon:
        return None, None
    return lat, lon
