"""Issue 27: date, folder and place filters applied inside the vector search (k results when k pass), sort=date,
through the library, the API and ``polyglot search``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import CAPTIONS, fake_engine_factory, service_settings  # noqa: F401
from fastapi.testclient import TestClient
from photo_samples import heic, jpeg, png_alpha, write

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.search_filters import FilterError, FolderNotFoundError, PhotoFilter, distance_km
from indexer.store.filtered import exact_subset_search, filtered_search
from indexer.store.index_kinds import VectorIndexSettings
from indexer.store.metadata import MetadataStore, NewImage, sqlite_url
from indexer.store.vectors import VectorIndex

LISBON, PORTO, TOKYO = (38.7223, -9.1393), (41.1579, -8.6291), (35.6762, 139.6503)


def _unit(n: int, dim: int, seed: int) -> np.ndarray:
    vectors = np.random.default_rng(seed).standard_normal((n, dim)).astype(np.float32)
    return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)


@pytest.mark.parametrize("kind", ["flat", "pq-refine", "hnsw"])
def test_filtered_search_returns_k_hits_from_the_subset_exactly(kind: str) -> None:
    vectors = _unit(3000, 64, 0)
    ids = np.arange(10, 3010, dtype=np.int64)
    index = VectorIndex.build(ids, vectors, kind, VectorIndexSettings())
    queries = _unit(3, 64, 1)
    subset = ids[::97]  # ~1 %: the best of these are rarely in an unfiltered top k
    found = filtered_search(index, queries, 10, subset)
    exact = queries @ vectors[::97].T
    for row, result in enumerate(found):
        assert len(result.ids) == 10 and set(result.ids) <= set(subset.tolist())
        assert result.ids == subset[np.argsort(-exact[row])[:10]].tolist()
    # a large subset goes through the index with a deeper search, still k hits, all inside
    large = ids[ids % 3 != 0]
    for result in filtered_search(index, queries, 25, large):
        assert len(result.ids) == 25 and set(result.ids) <= set(large.tolist())
    assert filtered_search(index, queries, 5, np.zeros(0, dtype=np.int64))[0].ids == []
    # ids without a vector (a row whose vector is not there yet) are skipped, never an error
    assert exact_subset_search(index, queries[:1], 3, np.array([10, 99999]))[0].ids == [10]


def test_filter_values_are_parsed_or_refused_with_a_message() -> None:
    where = PhotoFilter.parse("2024-06-01", "2024-08-31", "/photos/Lisbon/", "38.72,-9.14,25")
    assert where.taken_after == datetime(2024, 6, 1)
    assert where.taken_before is not None and where.taken_before.date().isoformat() == "2024-08-31"
    assert where.taken_before.hour == 23  # a date as the upper bound includes that day
    assert where.folder == "/photos/Lisbon" and where.near is not None and where.near.km == 25
    assert PhotoFilter.parse("2024-06-01T18:30:00+02:00").taken_after == datetime(2024, 6, 1, 18, 30)
    for bad in (
        {"taken_after": "last summer"},
        {"taken_after": "2024-09-01", "taken_before": "2024-06-01"},
        {"near": "38.7,-9.1"},
        {"near": "91,0,5"},
        {"near": "0,0,-1"},
    ):
        with pytest.raises(FilterError):
            PhotoFilter.parse(**bad)
    assert distance_km(*LISBON, *PORTO) == pytest.approx(274, abs=3)


@pytest.fixture
def library(tmp_path: Path) -> Path:
    """Twelve photos: 2023 and 2024, Lisbon/Porto/Tokyo, a HEIC, a PNG without EXIF, in three folders."""
    root = tmp_path / "library"
    for month in range(1, 7):
        write(root / "2024" / "Lisbon", f"l{month}.jpg", jpeg(seed=month, taken=datetime(2024, month, 10), gps=LISBON))
    write(root / "2024" / "Porto", "p1.jpg", jpeg(seed=20, taken=datetime(2024, 7, 1, 9), gps=PORTO))
    write(root / "2024" / "Porto", "p2.heic", heic(seed=21, taken=datetime(2024, 7, 2, 9), gps=PORTO))
    write(root / "2023", "t1.jpg", jpeg(seed=30, taken=datetime(2023, 3, 3), gps=TOKYO))
    write(root / "2023", "t2.jpg", jpeg(seed=31, taken=datetime(2023, 3, 4), gps=TOKYO))
    write(root / "misc", "logo.png", png_alpha(seed=40))
    write(root / "misc", "Lisbon_poster.jpg", jpeg(seed=41))  # "Lisbon" in a file name, not a folder
    return root


@pytest.fixture
def client(service_settings: ServiceSettings, library: Path) -> Iterator[TestClient]:  # noqa: F811
    from indexer.image_sources import expand_sources

    photos = expand_sources([library]).paths
    app = create_app(service_settings, fake_engine_factory(photos, CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def _names(answer: dict) -> list[str]:
    return [Path(r["metadata"]["filename"]).stem for r in answer["results"]]


def test_search_filters_by_date_folder_and_place_inside_the_search(client: TestClient, library: Path) -> None:
    base = {"q": "a photo", "lang": "en", "k": 5}
    summer = client.get("/v1/search", params={**base, "taken_after": "2024-06-01", "taken_before": "2024-08-31"})
    assert summer.status_code == 200, summer.text
    assert sorted(_names(summer.json())) == ["l6", "p1", "p2"]
    assert summer.json()["matching_images"] == 3 and summer.json()["filters"]["taken_after"] == "2024-06-01T00:00:00"
    lisbon = client.get("/v1/search", params={**base, "folder": "Lisbon"}).json()
    assert len(lisbon["results"]) == 5 and all(n.startswith("l") for n in _names(lisbon))  # k = 5 of the 6
    absolute = client.get("/v1/search", params={**base, "k": 20, "folder": str((library / "2024").resolve())}).json()
    assert len(absolute["results"]) == 8
    near = client.get("/v1/search", params={**base, "near": f"{PORTO[0]},{PORTO[1]},50"}).json()
    assert sorted(_names(near)) == ["p1", "p2"]
    portugal = client.get("/v1/search", params={**base, "k": 20, "near": f"{LISBON[0]},{LISBON[1]},300"}).json()
    assert len(portugal["results"]) == 8  # Lisbon and Porto (274 km), not Tokyo
    none = client.get("/v1/search", params={**base, "taken_before": "1990-01-01"}).json()
    assert none["results"] == [] and none["matching_images"] == 0
    for bad in ({"taken_after": "yesterday"}, {"near": "1,2"}, {"sort": "size"}):
        answer = client.get("/v1/search", params={**base, **bad})
        assert answer.status_code == 422 and answer.json()["detail"]


def test_sort_by_date_and_image_search_with_filters(client: TestClient) -> None:
    # cutoff=off: the whole pool by date (sort=date alone implies the cut-off: tests/api/test_library_api.py)
    params = {"q": "a photo", "lang": "en", "k": 12, "sort": "date", "cutoff": "off"}
    dated = client.get("/v1/search", params=params).json()
    taken = [r["metadata"]["taken_at"] for r in dated["results"]]
    known = [t for t in taken if t]
    assert known == sorted(known, reverse=True) and len(known) == 10
    assert taken[-2:] == [None, None]  # undated last
    first = dated["results"][0]
    assert first["metadata"]["camera_make"] is None and first["metadata"]["latitude"] is not None
    info = client.get(f"/v1/images/{first['id']}/info").json()["metadata"]
    assert info["taken_at"] == first["metadata"]["taken_at"] and info["folder"].endswith("Porto")
    similar = client.post(
        "/v1/search/image", data={"image_id": str(first["id"])}, params={"k": 3, "taken_before": "2023-12-31"}
    ).json()
    assert [Path(r["metadata"]["filename"]).stem[0] for r in similar["results"]] == ["t", "t"]


def test_polyglot_search_filters_and_sorts(tmp_path: Path, library: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import json

    from test_search_cli import cli_env, invoke

    cli_env.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]
    code, output = invoke("index", "add", str(library), "-q")
    assert code == 0, output
    code, output = invoke("search", "a photo", "--lang", "en", "--k", "3", "--folder", "Lisbon", "--json")
    assert code == 0, output
    answer = json.loads(output)
    assert len(answer["results"]) == 3 and answer["matching_images"] == 6
    assert all("/Lisbon/" in r["path"] for r in answer["results"])
    code, output = invoke("search", "a photo", "--lang", "en", "--k", "4", "--sort", "date", "--no-cutoff", "--json")
    taken = [r["taken_at"] for r in json.loads(output)["results"]]
    assert taken == ["2024-07-02T09:00:00", "2024-07-01T09:00:00", "2024-06-10T00:00:00", "2024-05-10T00:00:00"]
    # --sort date alone implies the cut-off (issue 36): only what stands out, still newest first
    code, output = invoke("search", "a photo", "--lang", "en", "--k", "20", "--sort", "date", "--json")
    implied = [r["taken_at"] for r in json.loads(output)["results"]]
    assert code == 0 and 1 <= len(implied) < 12 and [t for t in implied if t] == sorted(filter(None, implied))[::-1]
    code, output = invoke("search", "a photo", "--near", f"{TOKYO[0]},{TOKYO[1]},10", "--json")
    assert code == 0 and len(json.loads(output)["results"]) == 2
    code, output = invoke("search", "a photo", "--taken-after", "soon")
    assert code == 2 and "ISO 8601" in output


def _store_filters(store: MetadataStore) -> None:
    rows = [
        NewImage(
            f"/p/{folder}/{i}.jpg", f"{i:064x}", 4, 3, 10, folder=f"/p/{folder}", taken_at=datetime(2024, 1, i + 1)
        )
        for i, folder in enumerate(["Lisbon", "Lisbon/beach", "Lisbon2", "x/Lisbon", "Porto", "a_b"])
    ]
    rows[4].latitude, rows[4].longitude = PORTO
    ids = [r.id for r in store.insert(rows)]
    assert store.filtered_ids(PhotoFilter(folder="/p/Lisbon")).tolist() == ids[:2]  # not Lisbon2
    assert store.filtered_ids(PhotoFilter(folder="Lisbon")).tolist() == ids[:4]  # Lisbon2 too: a segment prefix
    assert store.filtered_ids(PhotoFilter(folder="/p/a%b")).tolist() == []  # wildcards are literal
    assert store.filtered_ids(PhotoFilter.parse("2024-01-02", "2024-01-03")).tolist() == ids[1:3]
    assert store.filtered_ids(PhotoFilter.parse(near=f"{PORTO[0]},{PORTO[1]},1")).tolist() == [ids[4]]
    # An absolute folder is a path, as typed: case-sensitive; a name is matched as people type it (issue 36): the
    # start of any word of the path, case- and accent-insensitively, on both stores; wildcards are plain characters.
    more = [
        NewImage(f"/p/{folder}/x.jpg", f"{i + 100:064x}", 4, 3, 10, folder=f"/p/{folder}")
        for i, folder in enumerate(
            ["y/lisbon", "y/LISBON", "Läden", "läden", "a*b", "axb", "q?", "[x]", "Été à Lisboa", "Straße"]
        )
    ]
    extra = [r.id for r in store.insert(more)]
    lisbon_everywhere = sorted([*ids[:4], *extra[:2]])
    assert store.filtered_ids(PhotoFilter(folder="Lisbon")).tolist() == lisbon_everywhere  # Lisbon2 too: a prefix
    assert store.filtered_ids(PhotoFilter(folder="lisb")).tolist() == sorted([*lisbon_everywhere, extra[8]])
    assert store.filtered_ids(PhotoFilter(folder="Lisboa")).tolist() == [extra[8]]  # a later word of a segment
    assert store.filtered_ids(PhotoFilter(folder="ete")).tolist() == [extra[8]]
    assert store.filtered_ids(PhotoFilter(folder="ÉTÉ À")).tolist() == [extra[8]]
    assert store.filtered_ids(PhotoFilter(folder="Ete a lisboa/")).tolist() == [extra[8]]
    assert store.filtered_ids(PhotoFilter(folder="/p/y/LISBON")).tolist() == [extra[1]]
    assert store.filtered_ids(PhotoFilter(folder="/p/LISBON")).tolist() == []
    assert store.filtered_ids(PhotoFilter(folder="laden")).tolist() == extra[2:4]
    assert store.filtered_ids(PhotoFilter(folder="strasse")).tolist() == [extra[9]]
    assert store.filtered_ids(PhotoFilter(folder="x/lisbon")).tolist() == [ids[3]]
    assert store.filtered_ids(PhotoFilter(folder="a*b")).tolist() == [extra[4]]
    assert store.filtered_ids(PhotoFilter(folder="a_b")).tolist() == [ids[5]]
    assert store.filtered_ids(PhotoFilter(folder="q?")).tolist() == [extra[6]]
    assert store.filtered_ids(PhotoFilter(folder="[x]")).tolist() == [extra[7]]
    # Nothing matches: the answer names the folders that come close (inside a word, or spelled alike).
    for typed, close in (("boa", "Été à Lisboa"), ("Lisbao", "Lisbon"), ("prto", "Porto")):
        with pytest.raises(FolderNotFoundError) as caught:
            store.filtered_ids(PhotoFilter(folder=typed))
        assert close in caught.value.close and close in str(caught.value), (typed, caught.value.close)
    with pytest.raises(FolderNotFoundError, match=r"no folder matches 'zzz'$"):
        store.filtered_ids(PhotoFilter(folder="zzz"))


def test_filtered_ids_sqlite(tmp_path: Path) -> None:
    store = MetadataStore(sqlite_url(tmp_path / "m.sqlite"))
    _store_filters(store)
    store.close()


@pytest.mark.postgres
def test_filtered_ids_postgres(postgres_url: str, pg_schema: str) -> None:
    store = MetadataStore(postgres_url, schema=pg_schema)
    _store_filters(store)
    store.close()


def test_folder_filter_as_people_type_it_through_the_api_and_the_cli(
    tmp_path: Path,
    service_settings: ServiceSettings,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 36: `Lisboa` finds `Été à Lisboa`, `ete` finds `Été`, whatever the case and accents; a name that
    matches nothing is a clear 422 (CLI: one error line) naming the folders that come close."""
    import json

    from test_search_cli import cli_env, invoke

    from indexer.image_sources import expand_sources

    root = tmp_path / "photos"
    write(root / "2024" / "Été à Lisboa", "a.jpg", jpeg(seed=1))
    write(root / "2024" / "Été à Lisboa", "b.jpg", jpeg(seed=2))
    write(root / "2023" / "Été", "c.jpg", jpeg(seed=3))
    write(root / "Porto", "d.jpg", jpeg(seed=4))
    app = create_app(service_settings, fake_engine_factory(expand_sources([root]).paths, CAPTIONS))
    base = {"q": "a photo", "lang": "en", "k": 10}
    with TestClient(app, raise_server_exceptions=False) as client:
        for typed, expected in (
            ("Lisboa", ["a", "b"]),
            ("lisb", ["a", "b"]),
            ("ETE", ["a", "b", "c"]),
            ("été à", ["a", "b"]),
        ):
            answer = client.get("/v1/search", params={**base, "folder": typed})
            assert answer.status_code == 200, answer.text
            assert sorted(_names(answer.json())) == expected, typed
        missing = client.get("/v1/search", params={**base, "folder": "Lisbao"})
        assert missing.status_code == 422
        assert missing.json()["close_folders"] == ["Été à Lisboa"]
        assert "no folder matches 'Lisbao'" in missing.json()["detail"]
        assert client.post("/v1/search/image", data={"image_id": "1"}, params={"folder": "prto"}).json()[
            "close_folders"
        ] == ["Porto"]
    cli_env.__wrapped__(tmp_path, monkeypatch)  # type: ignore[attr-defined]
    assert invoke("index", "add", str(root), "-q")[0] == 0
    code, output = invoke("search", "a photo", "--lang", "en", "--folder", "lisboa", "--json")
    assert code == 0, output
    assert sorted(Path(r["path"]).name for r in json.loads(output)["results"]) == ["a.jpg", "b.jpg"]
    code, output = invoke("search", "a photo", "--lang", "en", "--folder", "Lisbao")
    assert code == 2 and "no folder matches 'Lisbao'; folders with close names: 'Été à Lisboa'" in output, output
