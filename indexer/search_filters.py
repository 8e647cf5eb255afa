"""Search filters on photo facts (issue 27): capture date range, folder, distance from a place.

:class:`PhotoFilter` is what ``/search``, ``POST /search/image`` and ``polyglot search`` accept; the SQL side
(:meth:`indexer.store.metadata.MetadataStore.filtered_ids`) turns it into the ids the vector search is
restricted to (:mod:`indexer.store.filtered`).

* ``taken_after`` / ``taken_before``: ISO 8601 dates or date-times, both bounds inclusive; a date alone as
  ``taken_before`` means the end of that day. They compare with the photo's local capture time (the camera's
  clock, what EXIF records), as photo apps do; a time-zone offset in the value is ignored for that reason.
  Photos without a capture time never pass a date filter.
* ``folder``: an absolute path keeps the photos in that folder and below it; anything else is a folder name
  (or a relative sub-path) matched as whole path components anywhere: ``Lisbon`` finds ``…/2024/Lisbon/…``.
  Case-sensitive, as paths are on Linux (``lisbon`` does not find ``Lisbon``), on SQLite and PostgreSQL alike.
* ``near``: ``lat,lon,km``: photos whose GPS position is within ``km`` kilometres (great-circle distance).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, time

EARTH_RADIUS_KM = 6371.0088


class FilterError(ValueError):
    """A filter value that cannot be understood; the message says what is expected."""


@dataclass(frozen=True)
class Near:
    latitude: float
    longitude: float
    km: float

    def box(self) -> tuple[float, float, float, float] | None:
        """(lat_min, lat_max, lon_min, lon_max) enclosing the circle; None for the longitude when it wraps."""
        dlat = math.degrees(self.km / EARTH_RADIUS_KM)
        cos = math.cos(math.radians(self.latitude))
        dlon = 360.0 if cos < 1e-9 else math.degrees(self.km / (EARTH_RADIUS_KM * cos))
        lon_min, lon_max = self.longitude - dlon, self.longitude + dlon
        if lon_min < -180 or lon_max > 180:
            lon_min, lon_max = -180.0, 180.0
        return self.latitude - dlat, self.latitude + dlat, lon_min, lon_max


@dataclass(frozen=True)
class PhotoFilter:
    taken_after: datetime | None = None
    taken_before: datetime | None = None
    folder: str | None = None
    near: Near | None = None

    @property
    def active(self) -> bool:
        return any(value is not None for value in (self.taken_after, self.taken_before, self.folder, self.near))

    @classmethod
    def parse(
        cls,
        taken_after: str | None = None,
        taken_before: str | None = None,
        folder: str | None = None,
        near: str | None = None,
    ) -> PhotoFilter:
        after = parse_when(taken_after, "taken_after", end=False) if taken_after else None
        before = parse_when(taken_before, "taken_before", end=True) if taken_before else None
        if after and before and after > before:
            raise FilterError(f"taken_after ({after.isoformat()}) is later than taken_before ({before.isoformat()})")
        folder = folder.strip() if folder else None
        if folder is not None and (not folder or "\x00" in folder):
            raise FilterError("folder must be a folder path or name")
        return cls(after, before, folder.rstrip("/") or "/" if folder else None, parse_near(near) if near else None)


def parse_when(value: str, name: str, *, end: bool) -> datetime:
    """An ISO 8601 date or date-time as a naive local datetime; a date as ``taken_before`` ends the day."""
    text = value.strip()
    try:
        if len(text) <= 10:
            day = date.fromisoformat(text)
            return datetime.combine(day, time.max if end else time.min)
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise FilterError(
            f"{name} must be an ISO 8601 date or date-time, e.g. 2024-06-01 or 2024-06-01T18:30, not {value[:100]!r}"
        ) from None
    return moment.replace(tzinfo=None)


def parse_near(value: str) -> Near:
    parts = [part.strip() for part in value.split(",")]
    try:
        if len(parts) != 3:
            raise ValueError
        lat, lon, km = (float(part) for part in parts)
    except ValueError:
        raise FilterError(f"near must be 'latitude,longitude,km', e.g. 38.72,-9.14,25, not {value[:100]!r}") from None
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        raise FilterError("near: latitude must be in [-90, 90] and longitude in [-180, 180]")
    if not (0 < km <= 20_040):
        raise FilterError("near: the distance must be above 0 and at most 20,040 km (half the Earth's circumference)")
    return Near(lat, lon, km)


def distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance (haversine)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))


