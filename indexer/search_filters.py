"""Search filters on photo facts (issue 27): capture date range, folder, distance from a place.

:class:`PhotoFilter` is what ``/search``, ``POST /search/image`` and ``polyglot search`` accept; the SQL side
(:meth:`indexer.store.metadata.MetadataStore.filtered_ids`) turns it into the ids the vector search is
restricted to (:mod:`indexer.store.filtered`).

* ``taken_after`` / ``taken_before``: ISO 8601 dates or date-times, both bounds inclusive; a date alone as
  ``taken_before`` means the end of that day. They compare with the photo's local capture time (the camera's
  clock, what EXIF records), as photo apps do; a time-zone offset in the value is ignored for that reason.
  Photos without a capture time never pass a date filter.
* ``folder``: an absolute path keeps the photos in that folder and below it (as typed: a path); anything else is
  matched as people type it (issue 36, :mod:`indexer.folder_names`): the start of any word of the folder's path,
  case- and accent-insensitively — ``lisboa`` and ``Lisb`` find ``…/Été à Lisboa/…``, ``ete`` finds ``…/Été/…``.
  A name that matches no folder is a :class:`FolderNotFoundError` naming the folders that come close.
* ``near``: ``lat,lon,km``, or ``place,km`` (``Lisbon,25``; any name :mod:`indexer.places` knows, ``Lisboa`` too:
  the most populous place of that name): photos whose GPS position is within ``km`` kilometres (great-circle
  distance). A place name is looked up when the filter is applied (:class:`PlaceNotFoundError` when unknown).
* ``place``: the place names given to a photo's GPS position at index time (issue 36): ``Lisboa``, ``lisbon``,
  ``Portugal``, ``Lisbon, Portugal`` (every comma-separated part must name the city, region or country), matched
  like folder names (the start of a word, case and accents ignored) or as another name of the place (Lisboa,
  Lissabon, 里斯本 → Lisbon). A name that matches no photo's place is a :class:`PlaceNotFoundError` naming close ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import date, datetime, time

from indexer.folder_names import describe_no_match

EARTH_RADIUS_KM = 6371.0088


class FilterError(ValueError):
    """A filter value that cannot be understood; the message says what is expected."""


class FolderNotFoundError(FilterError):
    """A folder name that matches no indexed folder; ``close``: names of folders that come close (may be empty)."""

    def __init__(self, folder: str, close: list[str]) -> None:
        super().__init__(describe_no_match(folder, close))
        self.folder = folder
        self.close = close


class PlaceNotFoundError(FilterError):
    """A place name (``place``, or ``near``'s centre) that names no place; ``close``: names that come close."""

    def __init__(self, message: str, close: list[str] | None = None) -> None:
        super().__init__(message)
        self.close = close or []


@dataclass(frozen=True)
class Near:
    latitude: float
    longitude: float
    km: float
    place: str | None = None  # the centre given by name: latitude and longitude are NaN until it is looked up

    def located(self, latitude: float, longitude: float) -> Near:
        return Near(latitude, longitude, self.km, self.place)

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
    place: str | None = None

    @property
    def active(self) -> bool:
        values = (self.taken_after, self.taken_before, self.folder, self.near, self.place)
        return any(value is not None for value in values)

    @classmethod
    def parse(
        cls,
        taken_after: str | None = None,
        taken_before: str | None = None,
        folder: str | None = None,
        near: str | None = None,
        place: str | None = None,
    ) -> PhotoFilter:
        after = parse_when(taken_after, "taken_after", end=False) if taken_after else None
        before = parse_when(taken_before, "taken_before", end=True) if taken_before else None
        if after and before and after > before:
            raise FilterError(f"taken_after ({after.isoformat()}) is later than taken_before ({before.isoformat()})")
        folder = folder.strip() if folder else None
        if folder is not None and (not folder or "\x00" in folder):
            raise FilterError("folder must be a folder path or name")
        place = " ".join(place.split()) if place else None
        if place is not None and (not place.strip(", ") or "\x00" in place):
            raise FilterError("place must name a city, region or country, e.g. Lisbon or 'Lisbon, Portugal'")
        folder_value = folder.rstrip("/") or "/" if folder else None
        return cls(after, before, folder_value, parse_near(near) if near else None, place)


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


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def parse_near(value: str) -> Near:
    """``lat,lon,km`` or ``place,km`` (the place looked up later: :class:`Near` with ``place``)."""
    parts = [part.strip() for part in value.split(",")]
    numbers = [_number(part) for part in parts]
    km = numbers[-1] if len(parts) >= 2 else None
    expected = "near must be 'latitude,longitude,km' (38.72,-9.14,25) or 'place,km' (Lisbon,25)"
    if km is None:
        raise FilterError(f"{expected}, not {value[:100]!r}")
    if not (0 < km <= 20_040):
        raise FilterError("near: the distance must be above 0 and at most 20,040 km (half the Earth's circumference)")
    if len(parts) == 3 and numbers[0] is not None and numbers[1] is not None:
        lat, lon = numbers[0], numbers[1]
        if not (-90 <= lat <= 90 and -180 <= lon <= 180):
            raise FilterError("near: latitude must be in [-90, 90] and longitude in [-180, 180]")
        return Near(lat, lon, km)
    name = ", ".join(part for part in parts[:-1] if part)
    if not name or any(number is not None for number in numbers[:-1]):
        raise FilterError(f"{expected}, not {value[:100]!r}")
    return Near(math.nan, math.nan, km, name)


def distance_km(lat1: float, lon1: float, lat2: float, lon2: float) -> float:
    """Great-circle distance (haversine)."""
    p1, p2 = math.radians(lat1), math.radians(lat2)
    dp, dl = p2 - p1, math.radians(lon2 - lon1)
    a = math.sin(dp / 2) ** 2 + math.cos(p1) * math.cos(p2) * math.sin(dl / 2) ** 2
    return 2 * EARTH_RADIUS_KM * math.asin(min(1.0, math.sqrt(a)))
