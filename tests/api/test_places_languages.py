"""Issue 59: places in every language — country names typed in any CLDR language (place=Deutschland, Allemagne,
ドイツ), the place line shown in the reader's language without repeated parts — and folders shown from the
library root, never as the server's absolute path."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path, PurePath

import pytest
from api_fixtures import fake_engine_factory, service_settings  # noqa: F401
from fastapi.testclient import TestClient
from photo_samples import jpeg, write

from app.library_folders import LibraryFolders
from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.image_sources import expand_sources
from indexer.places import Place, place_line, place_names

BERLIN, MUNICH, LISBON, TOKYO, NEW_YORK = (
    (52.5200, 13.4050),
    (48.1351, 11.5820),
    (38.7223, -9.1393),
    (35.6762, 139.6503),
    (40.7128, -74.0060),
)
BASE: dict[str, str | int] = {"q": "a photo", "lang": "en", "k": 20}


@pytest.fixture
def library(tmp_path: Path) -> Path:
    root = tmp_path / "Photos"
    write(root / "2024" / "Germany", "berlin.jpg", jpeg(seed=1, taken=datetime(2024, 5, 1), gps=BERLIN))
    write(root / "2024" / "Germany", "munich.jpg", jpeg(seed=2, taken=datetime(2024, 5, 3), gps=MUNICH))
    write(root / "2024", "lisbon.jpg", jpeg(seed=3, taken=datetime(2024, 6, 1), gps=LISBON))
    write(root, "tokyo.jpg", jpeg(seed=4, taken=datetime(2023, 3, 3), gps=TOKYO))
    write(root, "newyork.jpg", jpeg(seed=5, taken=datetime(2022, 1, 1), gps=NEW_YORK))
    return root


@pytest.fixture
def client(service_settings: ServiceSettings, library: Path) -> Iterator[TestClient]:  # noqa: F811
    # The served photo folder is the library root (what `polyglot serve FOLDER` sets).
    settings = service_settings.model_copy(
        update={
            "service": service_settings.service.model_copy(update={"images_dir": library}),
            "index": service_settings.index.model_copy(update={"allowed_roots": None}),
        }
    )
    app = create_app(settings, fake_engine_factory(expand_sources([library]).paths))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def _stems(answer: dict[str, list[dict[str, dict[str, str]]]]) -> list[str]:
    return sorted(PurePath(r["metadata"]["filename"]).stem for r in answer["results"])


def test_country_names_in_any_language_filter_by_place(client: TestClient) -> None:
    for name in ("Germany", "Deutschland", "Allemagne", "ドイツ", "Alemania", "Германия", "德国", "독일", "almanya"):
        answer = client.get("/v1/search", params={**BASE, "place": name})
        assert answer.status_code == 200, (name, answer.text)
        assert _stems(answer.json()) == ["berlin", "munich"], name
    assert _stems(client.get("/v1/library", params={"place": "Allemagne"}).json()) == ["berlin", "munich"]
    assert _stems(client.get("/v1/search", params={**BASE, "place": "Portugal"}).json()) == ["lisbon"]
    assert _stems(client.get("/v1/search", params={**BASE, "place": "日本"}).json()) == ["tokyo"]
    both = client.get("/v1/search", params={**BASE, "place": "Berlin, Deutschland"}).json()
    assert _stems(both) == ["berlin"]
    assert _stems(client.get("/v1/search", params={**BASE, "place": "Lisbonne"}).json()) == ["lisbon"]
    missing = client.get("/v1/search", params={**BASE, "place": "Frankreich"})  # a country with no photo
    assert missing.status_code == 422 and "no photo's place matches 'Frankreich'" in missing.json()["detail"]


def test_the_place_line_is_in_the_readers_language_without_repeats(client: TestClient) -> None:
    results = client.get("/v1/search", params=BASE).json()["results"]
    by_stem = {PurePath(r["metadata"]["filename"]).stem: r for r in results}
    assert by_stem["lisbon"]["metadata"]["place"] == "Lisbon, Portugal"  # not "Lisbon, Lisbon, Portugal"
    assert by_stem["berlin"]["metadata"]["place"] == "Berlin, Germany"  # region "State of Berlin": no repeat
    assert by_stem["munich"]["metadata"]["place"] == "Munich, Bavaria, Germany"
    assert by_stem["newyork"]["metadata"]["place"] == "New York City, United States"
    assert by_stem["berlin"]["metadata"]["country"] == "Germany"  # the stored name, as filters match it
    lisbon, berlin = by_stem["lisbon"]["id"], by_stem["berlin"]["id"]

    def place(image_id: int, **options: str) -> str:
        headers = {"Accept-Language": options.pop("header")} if "header" in options else {}
        answer = client.get(f"/v1/images/{image_id}/info", params=options, headers=headers)
        assert answer.status_code == 200, answer.text
        return str(answer.json()["metadata"]["place"])

    assert place(berlin, lang="fr") == "Berlin, Allemagne"
    assert place(berlin, lang="ja") == "Berlin, ドイツ"
    assert place(berlin, lang="de") == "Berlin, Deutschland"
    assert place(lisbon, lang="ar") == "Lisbon, البرتغال"
    assert place(berlin, lang="zh-TW") == "Berlin, 德國"
    assert place(berlin, lang="pt-BR") == "Berlin, Alemanha"
    assert place(berlin, header="fr-CH, fr;q=0.9, en;q=0.5") == "Berlin, Allemagne"
    assert place(berlin, header="de", lang="ja") == "Berlin, ドイツ"  # lang wins over the header
    assert place(berlin, header="tlh, de;q=0.8") == "Berlin, Deutschland"  # the best language CLDR knows
    assert place(berlin, header="x" * 3000) == "Berlin, Germany"  # a header is never a reason to refuse
    assert place(berlin, lang="tlh") == "Berlin, Germany"  # a language CLDR does not know: English
    assert place(berlin) == "Berlin, Germany"
    bad = client.get(f"/v1/images/{berlin}/info", params={"lang": "<script>"})
    assert bad.status_code == 422
    # Result pages and the library follow Accept-Language (and say that they vary with it).
    searched = client.get("/v1/search", params={**BASE, "place": "Germany"}, headers={"Accept-Language": "ja"})
    assert {r["metadata"]["place"] for r in searched.json()["results"]} == {"Berlin, ドイツ", "Munich, Bavaria, ドイツ"}
    assert "accept-language" in searched.headers["vary"].lower()
    page = client.get("/v1/library", headers={"Accept-Language": "fr"}).json()["results"]
    assert {r["metadata"]["place"] for r in page} >= {"Berlin, Allemagne", "Tokyo, Japon", "Lisbon, Portugal"}
    listed = client.get("/v1/images", headers={"Accept-Language": "es"}).json()
    assert {i["metadata"]["place"] for i in listed} >= {"Berlin, Alemania", "Tokyo, Japón"}


def test_folders_are_shown_from_the_library_root(client: TestClient, library: Path) -> None:
    listed = client.get("/v1/images", params={"limit": 10}).json()
    folders = {i["metadata"]["filename"]: i["metadata"]["folder"] for i in listed}
    assert folders == {
        "berlin.jpg": "Photos/2024/Germany",
        "munich.jpg": "Photos/2024/Germany",
        "lisbon.jpg": "Photos/2024",
        "tokyo.jpg": "Photos",
        "newyork.jpg": "Photos",
    }
    for answer in (client.get("/v1/search", params=BASE).json(), client.get("/v1/library").json()):
        for result in answer["results"]:
            assert not result["metadata"]["folder"].startswith("/")
            assert str(library.parent) not in result["metadata"]["folder"]
    one = listed[0]["id"]
    assert not client.get(f"/v1/images/{one}/info").json()["metadata"]["folder"].startswith("/")


def test_library_folders_without_a_served_root() -> None:
    indexed = ["/srv/data/ana/Camera/2024", "/srv/data/ana/Camera/2025/Trip", "/srv/data/ana/Camera"]
    folders = LibraryFolders([PurePath("/srv/index/uploads")], lambda: indexed)
    assert folders.shown("/srv/data/ana/Camera/2025/Trip") == "Camera/2025/Trip"  # from the indexed folders' root
    assert folders.shown("/srv/data/ana/Camera") == "Camera"
    assert folders.shown("/srv/index/uploads") == "uploads"
    assert folders.shown("/elsewhere/x") == "x" and folders.shown(None) is None
    nested = LibraryFolders([PurePath("/p"), PurePath("/p/watched")], lambda: [])
    assert nested.shown("/p/watched/a") == "watched/a" and nested.shown("/p/b") == "p/b"
    apart = LibraryFolders([], lambda: ["/a/one", "/b/two"])  # nothing shared but "/": the folder's own name
    assert apart.shown("/a/one") == "one"


def test_place_names_resolve_countries_in_every_language(tmp_path: Path) -> None:
    names = place_names(tmp_path)
    for name in ("Deutschland", "Allemagne", "ドイツ", "Germania", "Niemcy"):
        assert names.resolve(name) == {"Germany"}, name
    assert names.resolve("Lisbonne") == {"Lisbon"} and names.resolve("東京") == {"Tokyo"}
    assert place_line(Place("Singapore", None, "Singapore"), "fr") == "Singapore"  # a city state: once
    assert place_line(Place(None, "Tuscany", "Italy"), "it") == "Tuscany, Italia"
    assert place_line(Place(None, None, None)) is None
